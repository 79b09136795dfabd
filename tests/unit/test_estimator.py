"""The unbiased pass@k estimator against exact rational arithmetic."""

import random
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from boundlab.probe.estimator import (bootstrap_ci, bootstrap_diff_ci, pass_at_k_biased,
                                      pass_at_k_curve, pass_at_k_matrix, pass_at_k_single,
                                      powers_of_two)


def exact(n: int, c: int, k: int) -> Fraction:
    if n - c < k:
        return Fraction(1)
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def test_random_triples_match_exact_rationals_to_1e_12():
    rng = random.Random(0)
    for _ in range(300):
        n = rng.choice([1, 2, 5, 16, 100, 256, 1000, 1024, 2048, rng.randint(1, 2048)])
        c = rng.randint(0, n)
        k = rng.randint(1, n)
        got = pass_at_k_single(n, c, k)
        assert abs(got - float(exact(n, c, k))) < 1e-12, (n, c, k)


@pytest.mark.parametrize("n,c,k,want", [
    (10, 0, 1, 0.0), (10, 0, 10, 0.0),          # c = 0: never solved
    (10, 10, 1, 1.0), (10, 10, 10, 1.0),        # c = n: always solved
    (10, 3, 10, 1.0),                           # k = n with c > 0
    (10, 3, 8, 1.0),                            # n - c < k
    (10, 3, 7, float(exact(10, 3, 7))),         # n - c == k
    (5, 1, 1, 0.2), (2048, 1, 2048, 1.0), (2048, 1, 1, 1 / 2048),
])
def test_edges(n, c, k, want):
    assert abs(pass_at_k_single(n, c, k) - want) < 1e-12


def test_matrix_matches_single_for_every_k():
    rng = np.random.default_rng(1)
    n = np.array([64, 64, 300, 2048, 17])
    c = np.array([0, 64, 7, 1500, 16])
    mat = pass_at_k_matrix(n, c, 17)
    for i in range(len(n)):
        for k in range(1, 18):
            assert abs(mat[i, k - 1] - float(exact(int(n[i]), int(c[i]), k))) < 1e-12
    assert mat.dtype == np.float64
    del rng


def test_matrix_large_n_random_against_exact():
    rng = random.Random(7)
    for _ in range(20):
        n = rng.randint(1000, 2048)
        c = rng.randint(0, n)
        mat = pass_at_k_matrix(np.array([n]), np.array([c]), n)
        for k in rng.sample(range(1, n + 1), 10):
            assert abs(mat[0, k - 1] - float(exact(n, c, k))) < 1e-12, (n, c, k)


def test_curve_is_mean_over_problems_and_monotone():
    n = np.array([8, 8, 8])
    c = np.array([0, 1, 8])
    curve = pass_at_k_curve(n, c)
    assert curve.shape == (8,)
    assert curve[0] == pytest.approx((0 + 1 / 8 + 1) / 3)
    assert curve[-1] == pytest.approx(2 / 3)
    assert np.all(np.diff(curve) >= -1e-15)


def test_biased_is_labelled_and_differs():
    # 1-(1-c/n)^k samples with replacement: with n=4, c=1, k=4 it says 0.68, the truth is 1.
    assert pass_at_k_biased(np.array([4]), np.array([1]), 4)[-1] == pytest.approx(1 - 0.75 ** 4)
    assert pass_at_k_single(4, 1, 4) == 1.0


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        pass_at_k_single(4, 5, 1)
    with pytest.raises(ValueError):
        pass_at_k_single(4, 1, 5)
    with pytest.raises(ValueError):
        pass_at_k_matrix(np.array([4, 2]), np.array([1, 1]), 3)


def _bootstrap_one_pass(per_problem, iters, alpha, seed):
    """bootstrap_ci as it was before its columns were blocked: every k in one iters x kmax array."""
    p = per_problem.shape[0]
    rng = np.random.default_rng(seed)
    means = np.empty((iters, per_problem.shape[1]))
    for b in range(iters):
        w = np.bincount(rng.integers(0, p, size=p), minlength=p).astype(np.float64)
        means[b] = w @ per_problem / p
    return np.quantile(means, alpha / 2, axis=0), np.quantile(means, 1 - alpha / 2, axis=0)


def test_bootstrap_ci_in_column_blocks_gives_the_one_pass_values_in_flat_memory():
    import tracemalloc

    rng = np.random.default_rng(7)
    n = np.full(60, 1500)
    mat = pass_at_k_matrix(n, rng.binomial(1500, rng.beta(0.3, 0.8, size=60)), 1500)
    lo, hi = bootstrap_ci(mat, iters=300, alpha=0.1, seed=5)
    ref_lo, ref_hi = _bootstrap_one_pass(mat, 300, 0.1, 5)
    assert np.array_equal(lo, ref_lo) and np.array_equal(hi, ref_hi)  # bit for bit, every k
    # The one-pass means alone took iters x kmax floats (3.6 MB here); the blocks take far less.
    tracemalloc.start()
    bootstrap_ci(mat, iters=300, alpha=0.1, seed=5)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 300 * 1500 * 8 / 2


def test_bootstrap_ci_brackets_mean_and_is_deterministic():
    vals = np.array([0.0, 1.0] * 50)
    lo, hi = bootstrap_ci(vals, iters=500, seed=3)
    assert lo[0] < 0.5 < hi[0]
    assert 0.35 < lo[0] and hi[0] < 0.65
    lo2, hi2 = bootstrap_ci(vals, iters=500, seed=3)
    assert lo2[0] == lo[0] and hi2[0] == hi[0]
    const = np.ones(10)
    lo, hi = bootstrap_ci(const, iters=50)
    assert lo[0] == hi[0] == 1.0


def test_paired_difference_ci():
    a = np.array([1.0, 1.0, 0.0, 1.0])
    b = np.array([0.0, 1.0, 0.0, 0.0])
    mean, lo, hi = bootstrap_diff_ci(a, b, iters=400)
    assert mean == pytest.approx(0.5)
    assert lo <= mean <= hi


def test_powers_of_two():
    assert powers_of_two(1) == [1]
    assert powers_of_two(16) == [1, 2, 4, 8, 16]
    assert powers_of_two(12) == [1, 2, 4, 8, 12]
