"""The hierarchical bootstrap (seeds, then problems) of Δpass@k, against a hand computation and a
brute-force enumeration of every seed and problem multiset (issue 40)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from boundlab.probe import hierarchical as H
from boundlab.probe.estimator import bootstrap_diff_ci, pass_at_k_matrix

N4 = np.full(3, 4)
# 2 seeds x 3 problems, n = 4 samples each. pass@1 = c/4; pass@2 = 1 - C(4-c, 2)/C(4, 2):
# c=0 -> 0, c=1 -> 1 - 3/6 = 1/2, c=2 -> 1 - 1/6 = 5/6, c>=3 -> 1.
ARM = [(N4, np.array([4, 0, 2])),   # pass@1 [1, 0, .5]   pass@2 [1, 0, 5/6]
       (N4, np.array([2, 0, 4]))]   # pass@1 [.5, 0, 1]   pass@2 [5/6, 0, 1]
BASE = [(N4, np.array([1, 1, 0]))]  # pass@1 [.25, .25, 0] pass@2 [.5, .5, 0]


def test_point_estimates_by_hand():
    r = H.hierarchical_delta(ARM, BASE, (1, 2), iters=None)
    # pass@1: arm mean (1 + 0 + .5 + .5 + 0 + 1)/6 = 1/2, base (.25 + .25 + 0)/3 = 1/6: Δ = 1/3.
    # pass@2: arm (1 + 0 + 5/6 + 5/6 + 0 + 1)/6 = 11/18, base (.5 + .5 + 0)/3 = 1/3: Δ = 5/18.
    assert r.delta == pytest.approx([1 / 3, 5 / 18], abs=1e-15)
    # The statistic is linear in the resample counts, each of mean 1: the bootstrap mean is Δ.
    assert r.boot_mean == pytest.approx([1 / 3, 5 / 18], abs=1e-12)
    assert (r.seeds, r.problems, r.base_draws, r.exact, r.single_seed) == (2, 3, 1, True, False)


def test_exact_distribution_by_hand():
    """pass@1. Seed multisets (2 from 2): {0,0} w 1/4, {1,1} w 1/4, {0,1} w 1/2; the arm's per-problem
    mean minus the base's, d:
        {0,0}: [.75, -.25, .5]   {1,1}: [.25, -.25, 1]   {0,1}: [.5, -.25, .75]
    Problem multisets (3 from 3) with counts (m0, m1, m2): (3,0,0)-like w 1/27 each (3), (2,1,0)-like
    w 3/27 each (6), (1,1,1) w 6/27; Δ* = (m · d)/3.
    - Δ* = 1: only {1,1} with (0,0,3): 1/4 * 1/27 = 1/108.
    - Δ* = .75: {1,1} (1,0,2) = (.25 + 2)/3: 3/108; {0,1} (0,0,3): 1/2 * 1/27 = 2/108;
      {0,0} (3,0,0): 1/108; in all 6/108.
    - Δ* = -.25: (0,3,0) under every seed multiset (no other count gives it): 1/27.
    95% interval (inverted CDF): P(Δ* <= -.25) = 1/27 = .037 >= .025, so lo = -.25;
    P(Δ* < .75) = 1 - 7/108 = .935 < .975 <= P(Δ* <= .75) = 1 - 1/108, so hi = .75."""
    r = H.hierarchical_delta(ARM, BASE, 1, iters=None)
    prob = {round(float(v), 9): float(p) for v, p in zip(r.support[:, 0], r.probs)}
    assert sum(prob.values()) == pytest.approx(1.0, abs=1e-12)
    assert prob[1.0] == pytest.approx(1 / 108, abs=1e-12)
    assert prob[0.75] == pytest.approx(6 / 108, abs=1e-12)
    assert prob[-0.25] == pytest.approx(1 / 27, abs=1e-12)
    assert min(prob) == -0.25 and max(prob) == 1.0
    assert (float(r.lo[0]), float(r.hi[0])) == (-0.25, 0.75)


def _brute_force(ks):
    """Every seed draw sequence (2^2) and problem draw sequence (3^3), equally likely: no multiset
    weights, so it checks the multinomial weighting of exact mode independently."""
    A = np.stack([pass_at_k_matrix(n, c, max(ks))[:, [k - 1 for k in ks]] for n, c in ARM])
    B = pass_at_k_matrix(*BASE[0], max(ks))[:, [k - 1 for k in ks]]
    dist: dict = {}
    for s in np.ndindex(2, 2):
        for p in np.ndindex(3, 3, 3):
            v = tuple(np.round((A[list(s)].mean(axis=0)[list(p)] - B[list(p)]).mean(axis=0), 12))
            dist[v] = dist.get(v, F(0)) + F(1, 4 * 27)
    return dist


def test_exact_mode_equals_brute_force_enumeration():
    r = H.hierarchical_delta(ARM, BASE, (1, 2), iters=None)
    got = {tuple(np.round(v, 12)): p for v, p in zip(r.support, r.probs)}
    want = _brute_force((1, 2))
    assert set(got) == set(want)
    for v, p in want.items():
        assert got[v] == pytest.approx(float(p), abs=1e-12)


def test_monte_carlo_converges_to_the_exact_distribution():
    exact = H.hierarchical_delta(ARM, BASE, (1, 2), iters=None)
    mc = H.hierarchical_delta(ARM, BASE, (1, 2), iters=200_000, seed=3)
    # The interval ends are atoms with margins far beyond Monte-Carlo error (see the hand test).
    assert mc.lo == pytest.approx(exact.lo, abs=1e-12) and mc.hi == pytest.approx(exact.hi, abs=1e-12)
    assert mc.boot_mean == pytest.approx(exact.boot_mean, abs=3e-3)
    assert mc.delta == pytest.approx(exact.delta, abs=1e-15)
    # The whole distribution: total variation distance between the Monte-Carlo frequencies and the
    # exact probabilities (pass@1 column), small at 200,000 resamples.
    A = np.stack([pass_at_k_matrix(n, c, 1) for n, c in ARM])
    B = pass_at_k_matrix(*BASE[0], 1)[None]
    draws = np.round(H.monte_carlo_draws(A, B, 200_000, seed=3)[:, 0], 9)
    vals, counts = np.unique(draws, return_counts=True)
    freq = dict(zip(vals.tolist(), (counts / len(draws)).tolist()))
    ex = {}
    for v, p in zip(np.round(exact.support[:, 0], 9).tolist(), exact.probs.tolist()):
        ex[v] = ex.get(v, 0.0) + p
    assert set(freq) <= set(ex)
    tv = 0.5 * sum(abs(freq.get(v, 0.0) - p) for v, p in ex.items())
    assert tv < 0.01


def test_default_is_ten_thousand_seeded_resamples():
    a = H.hierarchical_delta(ARM, BASE, 1)
    b = H.hierarchical_delta(ARM, BASE, 1)
    c = H.hierarchical_delta(ARM, BASE, 1, seed=1)
    assert a.iters == 10_000 and not a.exact
    assert (a.lo, a.hi, a.boot_mean) == (b.lo, b.hi, b.boot_mean)
    assert a.boot_mean != c.boot_mean


def test_single_seed_is_flagged_and_is_the_paired_problem_bootstrap():
    r = H.hierarchical_delta(ARM[:1], BASE, 1, iters=None)
    assert r.single_seed and r.seeds == 1
    # One seed: only problems are resampled, paired. d = [.75, -.25, .5]; Δ* = (m · d)/3 over
    # problem multisets: lo = -.25 (P = 1/27 >= .025), hi = .75 ((3,0,0): P = 1/27 = .037 > .025, and
    # nothing larger), and the mean 1/3.
    assert (float(r.lo[0]), float(r.hi[0])) == (-0.25, 0.75)
    assert float(r.boot_mean[0]) == pytest.approx(1 / 3, abs=1e-12)
    # The project's single-run paired bootstrap over many problems agrees with the single-seed one.
    rng = np.random.default_rng(0)
    n = np.full(200, 16)
    arm_c, base_c = rng.integers(0, 17, 200), rng.integers(0, 17, 200)
    h = H.hierarchical_delta([(n, arm_c)], [(n, base_c)], 16, iters=20_000, seed=0)
    m, lo, hi = bootstrap_diff_ci(pass_at_k_matrix(n, arm_c, 16)[:, -1], pass_at_k_matrix(n, base_c, 16)[:, -1],
                                  iters=20_000)
    assert float(h.delta[0]) == pytest.approx(m, abs=1e-15)
    assert float(h.lo[0]) == pytest.approx(lo, abs=0.01) and float(h.hi[0]) == pytest.approx(hi, abs=0.01)


def test_seed_spread_widens_the_interval():
    # Two seeds that disagree on every problem: the hierarchical interval is wider than either
    # seed's own problem-only interval around the pooled mean.
    rng = np.random.default_rng(1)
    n = np.full(60, 8)
    base = [(n, rng.integers(0, 9, 60))]
    lo_seed = [(n, np.zeros(60, dtype=int)), (n, np.full(60, 8))]
    two = H.hierarchical_delta(lo_seed, base, 8, iters=5_000)
    one = H.hierarchical_delta(lo_seed[:1], base, 8, iters=5_000)
    assert (two.hi - two.lo)[0] > 2 * (one.hi - one.lo)[0]


def test_base_draws_pooled_averaged_or_resampled():
    base2 = [(N4, np.array([1, 1, 0])), (N4, np.array([3, 1, 0]))]
    # pool: (8, 4), (8, 2), (8, 0): pass@2 = 1 - C(4,2)/C(8,2) = 1 - 6/28 = 11/14; 1 - C(6,2)/28 = 13/28; 0.
    pooled = H.hierarchical_delta(ARM, base2, 2, iters=None)
    assert float(pooled.delta[0]) == pytest.approx(11 / 18 - (11 / 14 + 13 / 28) / 3, abs=1e-15)
    assert pooled.base_draws == 1
    # mean of the draws' values: draw 2's pass@2 is [1, .5, 0], so the base is [.75, .5, 0].
    mean = H.hierarchical_delta(ARM, base2, 2, iters=None, base_draws="mean")
    assert float(mean.delta[0]) == pytest.approx(11 / 18 - (0.75 + 0.5) / 3, abs=1e-15)
    res = H.hierarchical_delta(ARM, base2, 2, iters=None, base_draws="resample")
    assert res.base_draws == 2 and float(res.boot_mean[0]) == pytest.approx(float(mean.delta[0]), abs=1e-12)
    # Resampling the draws adds their spread: the exact distribution is at least as wide.
    assert res.lo[0] <= mean.lo[0] and res.hi[0] >= mean.hi[0]


def test_bad_input_says_what_is_wrong():
    with pytest.raises(ValueError, match="same problems"):
        H.hierarchical_delta(ARM, [(np.full(2, 4), np.array([1, 1]))], 1)
    with pytest.raises(ValueError, match="n >= 8"):
        H.hierarchical_delta(ARM, BASE, 8)
    with pytest.raises(ValueError, match="base_draws"):
        H.hierarchical_delta(ARM, BASE, 1, base_draws="median")
    with pytest.raises(ValueError, match="multiset combinations"):
        n = np.full(12, 4)
        H.hierarchical_delta([(n, n)] * 2, [(n, n)], 1, iters=None)
    with pytest.raises(ValueError, match="NaN"):
        H.hierarchical_delta_values(np.full((2, 3), np.nan), np.zeros((1, 3)))
