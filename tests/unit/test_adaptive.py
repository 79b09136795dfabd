"""Adaptive probing (issue 21): the certification rule against exact binomial arithmetic, the
uneven-n estimator against brute-force enumeration, the design's expectation enumerated exactly, the
probe key, and the resume path after a kill mid-round."""

from __future__ import annotations

import itertools
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from boundlab.probe import adaptive as A
from boundlab.probe.binom import betainc, clopper_pearson, cp_lower, cp_upper
from boundlab.probe.context import ProbeContext
from boundlab.probe.estimator import pass_at_k_matrix, pass_at_k_table
from boundlab.probe.runner import probe_model
from boundlab.probe.spec import ProbeSpec
from boundlab.probe.store import Store
from boundlab.sampling.base import Completion, GenSettings, Sampler
from boundlab.tasks.base import Problem, Task
from boundlab.verify import build_verifier


def tail(c: int, n: int, p: float) -> float:
    """P(X >= c) for X ~ Binomial(n, p), summed term by term with exact binomial coefficients."""
    return math.fsum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(c, n + 1))


# -- Clopper-Pearson and the certification rule ---------------------------------------------------
@pytest.mark.parametrize("c,n,alpha", [(1, 10, 0.05), (5, 10, 0.01), (9, 10, 1e-3), (30, 64, 1e-6),
                                       (64, 64, 1e-6), (3, 200, 0.025)])
def test_cp_bounds_solve_the_exact_binomial_tails(c, n, alpha):
    lo = cp_lower(c, n, alpha)
    assert tail(c, n, lo) == pytest.approx(alpha, rel=1e-6)  # P(X >= c | lo) = alpha
    hi = cp_upper(c - 1, n, alpha)
    assert 1 - tail(c, n, hi) == pytest.approx(alpha, rel=1e-6)  # P(X <= c-1 | hi) = alpha
    assert betainc(c, n - c + 1, 0.3) == pytest.approx(tail(c, n, 0.3), rel=1e-9)
    assert cp_lower(0, n, alpha) == 0.0 and cp_upper(n, n, alpha) == 1.0
    two = clopper_pearson(c, n, 2 * alpha)
    assert two[0] == pytest.approx(lo, abs=1e-12)


def _certified_exact(c: int, n: int, n0: int, eps: float, alpha: float) -> bool:
    # CP lower >= p* exactly when the tail at p* is <= alpha (the tail increases in p), and
    # (1 - p_lo)^(n0+1) <= eps exactly when p_lo >= p* = 1 - eps^(1/(n0+1)).
    p_star = 1 - eps ** (1 / (n0 + 1))
    return tail(c, n, p_star) <= alpha


@pytest.mark.parametrize("n0,eps,alpha", [(32, 1e-3, 0.01 / (500 * 6)), (8, 0.05, 0.01),
                                          (4, 0.3, 0.1)])
def test_certification_matches_exact_binomial_arithmetic_at_every_count(n0, eps, alpha):
    p_star = 1 - eps ** (1 / (n0 + 1))
    for n in (n0, 2 * n0, 4 * n0, 8 * n0):
        got = [A.certifies(c, n, n0, eps, alpha) for c in range(n + 1)]
        want = [_certified_exact(c, n, n0, eps, alpha) for c in range(n + 1)]
        # Away from the boundary (where float rounding decides) the two agree exactly.
        for c in range(n + 1):
            if abs(tail(c, n, p_star) - alpha) > 1e-9 * alpha:
                assert got[c] == want[c], (n, c)
        thr = A._min_c(n, n0, eps, alpha)
        assert got == [c >= thr for c in range(n + 1)]  # a threshold rule


def test_plan_splits_delta_over_problems_and_looks():
    plan = A.AdaptivePlan(n0=32, cap=1024, epsilon=1e-3, delta=0.01)
    assert plan.looks() == [32, 64, 128, 256, 512, 1024]
    assert plan.look_alpha(500) == pytest.approx(0.01 / 3000)
    assert A.AdaptivePlan(n0=3, cap=10).looks() == [3, 6, 10]
    # Half right is certified only with enough samples; at 32 it is not.
    assert not plan.certified(16, 32, 500) and plan.certified(64, 128, 500)
    with pytest.raises(ValueError, match="n0"):
        A.AdaptivePlan(n0=64, cap=32)


# -- the uneven-n estimator -----------------------------------------------------------------------
def brute_pass_at_k(outcomes: list[int], k: int) -> float:
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets)


def test_uneven_n_matrix_matches_brute_force_enumeration():
    rng = np.random.default_rng(0)
    seqs = [list(rng.random(n) < p) for n, p in [(3, 0.5), (7, 0.2), (9, 0.6), (5, 0.0), (8, 0.9)]]
    n = np.array([len(s) for s in seqs])
    c = np.array([sum(s) for s in seqs])
    kmax = 9
    fill = np.array([0.25, 0.5, np.nan, 0.75, 1.0])  # only the n = 9 row needs none
    mat = pass_at_k_matrix(n, c, kmax, beyond=fill)
    for i, s in enumerate(seqs):
        for k in range(1, kmax + 1):
            want = brute_pass_at_k(s, k) if k <= len(s) else fill[i]
            assert mat[i, k - 1] == pytest.approx(want, abs=1e-12), (i, k)
    with pytest.raises(ValueError, match="not defined"):
        pass_at_k_matrix(n, c, kmax)  # k > n without a value is never extrapolated
    table = pass_at_k_table(9, 9)
    assert np.allclose(table[c[2]], mat[2], atol=1e-13)


def _design_row(seq: list[int], plan: A.AdaptivePlan, problems: int) -> tuple[np.ndarray, int]:
    """The adaptive estimator of one problem whose would-be samples are `seq` (cap long), through
    the same rule and matrix code the probe uses; returns (pass@k row, samples used)."""
    n_used = plan.cap
    cert = False
    for L in plan.looks():
        if L < plan.cap and plan.certified(sum(seq[:L]), L, problems):
            n_used, cert = L, True
            break
    row = np.empty(plan.cap)
    row[:plan.n0] = pass_at_k_matrix(np.array([plan.n0]), np.array([sum(seq[:plan.n0])]),
                                     plan.n0)[0]
    row[plan.n0:] = 1.0 if cert else pass_at_k_matrix(np.array([plan.cap]), np.array([sum(seq)]),
                                                      plan.cap)[0, plan.n0:]
    return row, n_used


@pytest.mark.parametrize("p", [0.05, 0.3, 0.6, 0.9])
def test_the_design_is_exactly_unbiased_up_to_n0_and_within_epsilon_beyond(p):
    # Every outcome sequence of a small design, weighted by its exact probability.
    plan = A.AdaptivePlan(n0=2, cap=12, epsilon=0.2, delta=0.2)
    mean = np.zeros(plan.cap)
    p_cert = 0.0
    for seq in itertools.product((0, 1), repeat=plan.cap):
        w = p ** sum(seq) * (1 - p) ** (plan.cap - sum(seq))
        row, used = _design_row(list(seq), plan, problems=1)
        mean += w * row
        p_cert += w * (used < plan.cap)
    truth = 1 - (1 - p) ** np.arange(1, plan.cap + 1)
    assert np.allclose(mean[:plan.n0], truth[:plan.n0], atol=1e-12)
    # The guarantee: within epsilon except on the event (probability <= delta) of a wrong
    # certification. Measured here: at most 0.0024 (p = 0.6).
    assert np.all(np.abs(mean - truth) <= plan.epsilon + plan.delta)
    assert p_cert > {0.05: -1, 0.3: 0.0, 0.6: 0.1, 0.9: 0.8}[p]  # problems do stop early
    # The naive early stop (stop at the first success, U-statistic on what was sampled) on the
    # same sequences: pass@1 is biased up by far more than epsilon.
    naive = sum(p ** sum(s) * (1 - p) ** (plan.cap - sum(s)) *
                (1 / (s.index(1) + 1) if 1 in s else 0.0)
                for s in itertools.product((0, 1), repeat=plan.cap))
    if 0.05 < p < 0.9:
        assert naive - p > 0.05


# -- the probe: key, rounds, uneven n, resume ----------------------------------------------------
RATES = {"q0": 0.0, "q1": 0.03, "q2": 0.5, "q3": 0.9, "q4": 1.0}


def _task() -> Task:
    return Task("adapt", [Problem(pid, f"question {pid}", "yes") for pid in RATES],
                verifier="exact")


class CoinSampler(Sampler):
    """Correct ("A: yes") with the problem's rate; deterministic in (seed, prompt). Optionally
    dies (like a SIGKILL) at the start of its `die_at`-th call."""
    rows_per_call = 6

    def __init__(self, die_at: int | None = None):
        self.calls, self.rows, self.die_at = 0, 0, die_at

    def generate(self, requests, settings, seed):
        self.calls += 1
        if self.die_at is not None and self.calls >= self.die_at:
            raise KeyboardInterrupt("killed")
        out = []
        for prompt, cnt in requests:
            pid = prompt.split()[-1]
            rng = np.random.default_rng([seed, int(pid[1:])])
            out.append([Completion("A: yes" if u < RATES[pid] else "A: no", 3)
                        for u in rng.random(cnt)])
            self.rows += cnt
        return out


PLAN = A.AdaptivePlan(n0=4, cap=64, epsilon=0.05, delta=0.05)


def _run(store, sampler, plan=PLAN):
    v = build_verifier("exact")
    try:
        return probe_model(ProbeContext(_task(), store, v, progress=False),
                           ProbeSpec(plan.cap, GenSettings(max_new_tokens=3), 0, bootstrap_iters=20,
                                     adaptive=plan), sampler, "fp")
    finally:
        v.close()


def test_adaptive_probe_has_uneven_n_its_own_key_and_a_state_table(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    s = CoinSampler()
    res = _run(store, s)
    states = {st.problem_id: st for st in res.adaptive}
    assert states["q4"].reason == "certified" and states["q4"].n < 64
    assert states["q0"].reason == "cap" and states["q0"].n == 64
    assert len(set(res.n.tolist())) > 1  # uneven n
    assert s.rows == int(res.n.sum()) < 64 * len(RATES)
    assert res.curve.kmax == 64
    # k <= n0 from the first 4 samples; the certified problem counts 1 beyond n0.
    q4 = res.problem_ids.index("q4")
    assert np.all(res.curve.per_problem[q4, 4:] == 1.0)
    assert any("certified early" in note for note in res.notes)
    assert store.adaptive_states(res.key)["q4"][2] == "certified"
    # A fixed-n probe of the same model, task and sampling is another key: nothing is mixed.
    v = build_verifier("exact")
    fixed = probe_model(ProbeContext(_task(), store, v, progress=False),
                        ProbeSpec(8, GenSettings(max_new_tokens=3), 0, bootstrap_iters=20), CoinSampler(), "fp")
    other = _run(store, CoinSampler(), A.AdaptivePlan(n0=4, cap=64, epsilon=0.01, delta=0.05))
    v.close()
    assert len({fixed.key, res.key, other.key}) == 3
    assert "adaptive" not in store.probe_info(fixed.key)["settings"]


def test_adaptive_probe_killed_mid_round_resumes_with_nothing_lost_or_sampled_twice(tmp_path):
    ref_store = Store(tmp_path / "ref.sqlite")
    ref = _run(ref_store, CoinSampler())
    # The reference made a few rounds of several calls each; kill inside a later round.
    store = Store(tmp_path / "s.sqlite")
    dying = CoinSampler(die_at=30)  # inside the last round (n 32 -> 64)
    with pytest.raises(KeyboardInterrupt):
        _run(store, dying)
    db = sqlite3.connect(tmp_path / "s.sqlite")
    mid = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert 5 * 32 < mid < int(ref.n.sum())
    assert dying.rows == mid  # everything generated before the kill was stored
    again = CoinSampler()
    res = _run(store, again)
    assert mid + again.rows == int(res.n.sum())  # nothing sampled twice
    rows = db.execute("SELECT problem_id, COUNT(*), COUNT(DISTINCT idx), MIN(idx), MAX(idx) "
                      "FROM samples GROUP BY problem_id").fetchall()
    assert rows == [(pid, n, n, 0, n - 1) for pid, n in zip(res.problem_ids, res.n.tolist())]
    assert all(st.reason in ("certified", "cap") for st in res.adaptive)
    # The decisions are the stored samples' own: recomputed from scratch they are the same.
    assert [(s.problem_id, s.n, s.reason) for s in A.states(store, res.key, res.problem_ids, PLAN)] \
        == [(s.problem_id, s.n, s.reason) for s in res.adaptive]
    assert store.adaptive_states(res.key) == {s.problem_id: (s.n, s.c, s.reason, s.round)
                                              for s in res.adaptive}


def test_budget_extends_uncertified_problems_lowest_count_first(tmp_path):
    plan = A.AdaptivePlan(n0=4, cap=16, epsilon=0.05, delta=0.05, budget=150, budget_cap=64)
    store = Store(tmp_path / "s.sqlite")
    res = _run(store, CoinSampler(), plan)
    st = {s.problem_id: s for s in res.adaptive}
    assert int(res.n.sum()) <= 150
    assert st["q0"].n > 16 and st["q0"].reason in ("cap", "budget")  # c = 0 extended first
    # The reported curve still reads the first probe.n samples only.
    assert res.curve.kmax == 16


def test_the_report_reads_an_adaptive_probe_by_its_design_not_as_plain_counts(tmp_path):
    from types import SimpleNamespace

    from boundlab.report.comparisons import _adaptive

    store = Store(tmp_path / "s.sqlite")
    res = _run(store, CoinSampler())
    head, ans = _adaptive(store, res.key, res.problem_ids, "answer", SimpleNamespace(n=None))
    assert np.array_equal(head, res.curve.per_problem) and head is ans
    cut, _ = _adaptive(store, res.key, res.problem_ids, "answer", SimpleNamespace(n=16))
    assert np.array_equal(cut, res.curve.per_problem[:, :16])
    # Read as plain counts, the certified problems' c / n would enter pass@1 (optional stopping).
    plain = pass_at_k_matrix(res.n, res.c, 1)[:, 0]
    first = pass_at_k_matrix(np.full(len(res.n), 4),
                             np.array([pc.c for pc in store.counts(res.key, res.problem_ids, 4)]), 1)
    assert np.array_equal(head[:, 0], first[:, 0]) and not np.array_equal(plain, first[:, 0])
    # A fixed-n probe is left to the plain path.
    v = build_verifier("exact")
    fixed = probe_model(ProbeContext(_task(), store, v, progress=False),
                        ProbeSpec(8, GenSettings(max_new_tokens=3), 0, bootstrap_iters=20), CoinSampler(), "fp")
    v.close()
    assert _adaptive(store, fixed.key, res.problem_ids, "answer", SimpleNamespace(n=None)) is None


def _tracked_run(tmp_path):
    """The boundary tracker over an adaptive base and one checkpoint (the same coin sampler behind
    both), in tmp_path/run with its store tmp_path/s.sqlite; returns the base's ProbeResult."""
    from boundlab.boundary.tracker import build_tracker
    from test_boundary_controls import Recorder

    for d in ("base", "ckpt"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "config.json").write_text('{"which": "%s"}' % d)
    (tmp_path / "run").mkdir()
    store, v = Store(tmp_path / "s.sqlite"), build_verifier("exact")
    try:
        tr = build_tracker(tmp_path / "run",
                           ProbeContext(_task(), store, v, lambda d: (CoinSampler(), None), Recorder(),
                                        progress=False),
                           ProbeSpec(n=64, gen=GenSettings(max_new_tokens=3), seed=0,
                                     bootstrap_iters=20, adaptive=PLAN))
        base = tr.probe_base(str(tmp_path / "base"))
        tr.probe_checkpoint(10, str(tmp_path / "ckpt"))
    finally:
        v.close()
        store.close()
    return base


def test_boundary_tracking_probes_base_and_checkpoints_adaptively(tmp_path):
    import csv

    base = _tracked_run(tmp_path)
    assert base.adaptive is not None and len(set(base.n.tolist())) > 1
    with (tmp_path / "run" / "boundary.csv").open() as f:
        rows = {r["kind"]: r for r in csv.DictReader(f)}
    assert rows["base"]["n"] == rows["checkpoint"]["n"] == "64"
    # The same sampler behind both: the same curve, so no change at k = 1 or k = n.
    assert float(rows["checkpoint"]["delta_pass@1"]) == 0.0
    assert float(rows["checkpoint"]["delta_pass@n"]) == 0.0


@pytest.mark.parametrize("override,msg", [
    (["probe.n=16", "probe.n0=32"], "probe.n0=32: must be <= probe.n=16"),
    (["probe.epsilon=0"], "probe.epsilon=0"),
    (["probe.budget=100", "probe.budget_cap=8", "probe.n=16", "probe.n0=4"], "probe.budget_cap=8"),
    (["probe.n=16", "probe.n0=4", "probe.predict_k=16"], "probe.predict_k=16: must be > probe.n=16"),
])
def test_bad_adaptive_settings_fail_with_one_line(override, msg):
    from hydra import compose, initialize_config_dir

    from boundlab.config import ConfigError, register_configs
    from boundlab.validate import validate_probe

    register_configs()
    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[2] / "conf"),
                               version_base=None):
        cfg = compose("probe", overrides=["probe.adaptive=true", *override])
    with pytest.raises(ConfigError, match=msg.replace(".", r"\.")):
        validate_probe(cfg.probe)


def test_the_dashboards_band_comes_from_the_design_and_holds_the_drawn_curve(tmp_path):
    # Issue 35: a view must use the probe's own design. The dashboard's band of an adaptive probe
    # once counted only the problems that ran to n (every certified one dropped): its mean was
    # another curve than the one drawn, which fell outside its band.
    from boundlab.dashboard import data
    from boundlab.dashboard.index import Index

    base = _tracked_run(tmp_path)
    assert len(set(base.n.tolist())) > 1  # uneven n: some problems certified early
    index = Index([tmp_path / "run"], store=str(tmp_path / "s.sqlite"))
    run = index.runs[0]
    for i, row in enumerate(run.rows):
        band = data.curve_band(index, run, i)
        curve = np.array(row["curve"])
        assert band["problems"] == len(RATES) and "adaptive design" in band["method"]
        low, high = np.array(band["low"]), np.array(band["high"])
        assert np.all(low <= curve + 1e-6) and np.all(curve <= high + 1e-6), row["kind"]
        # Where the band is not clipped at 0 or 1, its centre is the drawn curve itself (not a
        # curve of a subset of the problems).
        open_ = (low > 0) & (high < 1)
        assert open_.any() and np.allclose(((low + high) / 2)[open_], curve[open_], atol=1e-5), row["kind"]
