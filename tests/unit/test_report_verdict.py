"""The verdict section (issue 40 item 8): one row per paper finding, on synthetic stores whose
answers are known (N = 8 samples on the 40 problems of report_kit; pass@k of c of 8 is exact:
c = 1 gives pass@k = k/8, c >= 1 gives pass@8 = 1, c = 0 gives 0).

(a) every finding reproduced; (b) finding 2 not reproduced (RL better at k_max); (c) a difference
of exactly one problem: unresolved; (d) no null, one step, no distill arm: "not measured" rows."""

from __future__ import annotations

import numpy as np
import pytest

from report_kit import IDS, read_csv, report_cfg, run_dir, synthetic_store

BASE = {"kind": "base", "step": 0, "probe_key": "base"}


def _c(ranges: dict[range, int]) -> dict[str, int]:
    """{problem: c}: c on each range of problem indices, 0 elsewhere."""
    out = {p: 0 for p in IDS}
    for rg, c in ranges.items():
        for i in rg:
            out[IDS[i]] = c
    return out


def _ck(step: int, key: str) -> dict:
    return {"kind": "checkpoint", "step": step, "probe_key": key}


def _verdict(tmp_path, base, runs):
    from boundlab.report.build import run

    out = run(report_cfg(tmp_path, base, runs)).parent
    rows = read_csv(out / "verdict.csv")
    return out, {(int(r["finding"]), r["arm"]): r for r in rows}, rows


def test_every_finding_reproduced(tmp_path):
    # Base: c = 1 on problems 0-19 (pass@1 = 1/8, pass@8 = 1 there), 0 elsewhere. Two GRPO seeds:
    # step 5 c = 4 on 0-19 (the base's boundary kept), step 10 c = 8 on 0-9 only (sharpened, 10-19
    # lost). The null (a second base draw) also solves problem 20 once. Distillation: c = 8 on 0-29.
    base = _c({range(20): 1})
    synthetic_store(tmp_path / "store.sqlite", {
        "base": base, "null": _c({range(21): 1}), "mid": _c({range(20): 4}), "fin": _c({range(10): 8}),
        "dist": _c({range(30): 8})})
    null = {"kind": "null", "probe_key": "null", "seed": 1}
    r0 = run_dir(tmp_path / "0_grpo_s0", "grpo", [BASE, null, _ck(5, "mid"), _ck(10, "fin")])
    r1 = run_dir(tmp_path / "1_grpo_s1", "grpo", [BASE, null, _ck(5, "mid"), _ck(10, "fin")])
    r2 = run_dir(tmp_path / "2_sft_distill", "sft_distill", [BASE, _ck(10, "dist")])
    out, v, rows = _verdict(tmp_path, r0, [r0, r1, r2])
    assert [int(r["finding"]) for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(r["verdict"] == "reproduced" for r in rows), [(r["finding"], r["verdict"], r["rule"]) for r in rows]

    # 1. Δpass@1 = 10/40 (c = 8) − 20/40 · 1/8 = 0.25 − 0.0625.
    f1 = v[(1, "grpo")]
    assert float(f1["value"]) == pytest.approx(0.1875, abs=1e-12)
    assert (f1["seeds"], f1["step"], f1["k"], f1["problems"]) == ("2", "10", "1", "40")
    assert f1["interval"].startswith("hierarchical bootstrap: 2 seeds x 40 problems")
    assert float(f1["ci_low"]) > 1 / 40
    # 2. Δpass@8 = 10/40 − 20/40 (problems 10-19 lost); k_max = 8 = both sides' n.
    f2 = v[(2, "grpo")]
    assert (float(f2["value"]), f2["k"], f2["statistic"]) == (pytest.approx(-0.25, abs=1e-12), "8", "Δpass@8")
    assert float(f2["ci_high"]) < -1 / 40
    # The same interval as the seed-level table's "all" row at step 10 (one hierarchical bootstrap).
    seed_row = next(r for r in read_csv(out / "seed_intervals.csv")
                    if (r["arm"], r["step"], r["tier"]) == ("grpo", "10", "all"))
    assert [f1["value"], f1["ci_low"], f1["ci_high"], f2["value"], f2["ci_low"], f2["ci_high"]] == [
        seed_row[c] for c in ("delta_pass@1", "delta_pass@1_ci_low", "delta_pass@1_ci_high",
                              "delta_pass@n", "delta_pass@n_ci_low", "delta_pass@n_ci_high")]
    # 3. RL's curve is 0.25 at every k, the base's 20/40 · k/8 = k/16: equal at k = 4, below after.
    f3 = v[(3, "grpo")]
    assert float(f3["value"]) == pytest.approx(4.0) and float(f3["ci_high"]) <= 8
    # 4. RL solves nothing outside the base's 0-19; the null solves problem 20: G − G0 = 0 − 1.
    f4 = v[(4, "grpo")]
    assert float(f4["value"]) == pytest.approx(-1.0, abs=1e-12) and float(f4["ci_high"]) <= 1
    # −X with X ~ Binomial(40, 1/40) the draws of problem 20 (as in the one-problem test): [−3, 0].
    assert (float(f4["ci_low"]), float(f4["ci_high"])) == (pytest.approx(-3.0, abs=1e-12), 0.0)
    assert "expected RL-only problems 0.00, null-only 1.00" in f4["evidence"]
    # 5. pass@8 at step 10 (10/40) − step 5 (20/40).
    f5 = v[(5, "grpo")]
    assert (float(f5["value"]), f5["step"]) == (pytest.approx(-0.25, abs=1e-12), "5..10")
    # Both seeds alike, so Δ* = −X/40 with X ~ Binomial(40, 1/4) the draws of problems 10-19:
    # P(X <= 4) = 0.016 < 0.025 <= P(X <= 5) = 0.043, so the upper end is −5/40 (as for finding 2).
    assert float(f5["ci_high"]) == pytest.approx(-5 / 40, abs=1e-12)
    assert float(f2["ci_high"]) == pytest.approx(-5 / 40, abs=1e-12)
    # 6. Distillation: pass@8 = 30/40 against 20/40; one seed, the row says so.
    f6 = v[(6, "sft_distill")]
    assert float(f6["value"]) == pytest.approx(0.25, abs=1e-12) and f6["interval"].endswith("single seed")

    md = (out / "report.md").read_text()
    lines = md.splitlines()
    assert [ln for ln in lines if ln.startswith("## ")][0] == "## 1. Verdict: the paper's findings"
    assert "Table: [verdict.csv](verdict.csv)." in md


def test_finding_2_not_reproduced_when_rl_is_better_at_k_max(tmp_path):
    # One GRPO run (single seed) solving 0-29 eight times of eight; the base solves 0-19 once.
    synthetic_store(tmp_path / "store.sqlite", {"base": _c({range(20): 1}), "fin": _c({range(30): 8})})
    r0 = run_dir(tmp_path / "0_grpo", "grpo", [BASE, _ck(10, "fin")])
    out, v, _ = _verdict(tmp_path, r0, [r0])
    f2 = v[(2, "grpo")]
    assert float(f2["value"]) == pytest.approx(0.25, abs=1e-12)  # 30/40 − 20/40
    assert f2["verdict"] == "not reproduced" and float(f2["ci_low"]) > 1 / 40
    assert f2["interval"].startswith("problem bootstrap: 40 problems") and f2["interval"].endswith("single seed")
    # RL is above the base at every k up to 8: no crossing. A single seed at its final checkpoint is
    # a model of the report: the crossing table's own crossing, computed once.
    f3 = v[(3, "grpo")]
    assert f3["verdict"] == "not reproduced" and f3["value"] == "nan"
    cross = read_csv(out / "crossing.csv")[0]
    assert (cross["model"], cross["status"]) == ("0_grpo", "no_crossing")
    assert (f3["ci_low"], f3["ci_high"]) == (cross["ci_low"], cross["ci_high"]) == ("inf", "inf")
    # 10 RL-only problems, but no null to weigh them against.
    assert v[(4, "grpo")]["verdict"] == "not measured"


def test_a_difference_of_one_problem_is_unresolved(tmp_path):
    # The run equals the base but also solves problem 20 once: Δpass@8 = 1/40 exactly. The problem
    # bootstrap misses problem 20 with P = (39/40)^40 = 0.36 > 0.025, so the lower end is 0; the
    # upper end is 3/40: the draws of problem 20 are Binomial(40, 1/40), P(X <= 2) = 0.92 < 0.975
    # <= P(X <= 3) = 0.98.
    synthetic_store(tmp_path / "store.sqlite", {"base": _c({range(20): 1}), "fin": _c({range(21): 1})})
    r0 = run_dir(tmp_path / "0_grpo", "grpo", [BASE, _ck(10, "fin")])
    _, v, _ = _verdict(tmp_path, r0, [r0])
    f2 = v[(2, "grpo")]
    assert float(f2["value"]) == pytest.approx(1 / 40, abs=1e-12)
    assert (float(f2["ci_low"]), float(f2["ci_high"])) == (0.0, pytest.approx(3 / 40, abs=1e-12))
    assert (f2["verdict"], f2["rule"]) == ("unresolved at this power", "interval contains 0")
    f1 = v[(1, "grpo")]  # Δpass@1 = (1/8)/40
    assert float(f1["value"]) == pytest.approx(1 / 320, abs=1e-12) and f1["verdict"] == "unresolved at this power"


def test_absent_inputs_are_rows_not_measured(tmp_path):
    from boundlab.report.build import run

    synthetic_store(tmp_path / "store.sqlite", {"base": _c({range(20): 1}), "fin": _c({range(10): 8}),
                                                "other": _c({range(30): 8})})
    r0 = run_dir(tmp_path / "0_grpo", "grpo", [BASE, _ck(10, "fin")])
    r1 = run_dir(tmp_path / "1_mystery", "?", [BASE, _ck(10, "other")])  # no algorithm recorded
    cfg = report_cfg(tmp_path, r0, [r0, r1])
    cfg.models = ["other"]  # a model by probe key: its training is unknown
    out = run(cfg).parent
    rows = read_csv(out / "verdict.csv")
    assert {r["arm"] for r in rows} == {"grpo", ""}
    assert [int(r["finding"]) for r in rows] == [1, 2, 3, 4, 5, 6]
    for f, why in ((4, "no base-vs-base null probe"), (5, "1 step probed by every seed"),
                   (6, "no distillation arm")):
        row = next(r for r in rows if int(r["finding"]) == f)
        assert row["verdict"] == "not measured" and why in row["rule"], row
        assert row["value"] == "" and row["ci_low"] == ""
    md = (out / "report.md").read_text()
    assert md.count("| not measured |") == 3
    assert "Note: mystery: its runs include one whose algorithm is unknown (?); left out of the verdict." in md
    assert ("Note: Not in the verdict (given in models=[...], not as a training run in runs=[...] or "
            "sweeps=[...]): other.") in md


def test_no_rl_run_leaves_every_rl_finding_not_measured(tmp_path):
    synthetic_store(tmp_path / "store.sqlite", {"base": _c({range(20): 1}), "dist": _c({range(21): 8})})
    r0 = run_dir(tmp_path / "0_onpolicy_distill", "onpolicy_distill", [BASE, _ck(10, "dist")])
    _, v, rows = _verdict(tmp_path, r0, [r0])
    assert [(int(r["finding"]), r["verdict"]) for r in rows][:5] == [(f, "not measured") for f in range(1, 6)]
    assert float(v[(6, "onpolicy_distill")]["value"]) == pytest.approx(1 / 40, abs=1e-12)


# -- the rules, on hand-made intervals --------------------------------------------------------------
def test_rules_on_hand_made_intervals():
    from boundlab.probe.compare import Crossing
    from boundlab.probe.significance import GAIN, LOSS
    from boundlab.report import verdict as V

    def iv(lo, hi, p=10):
        return V.Interval((lo + hi) / 2, lo, hi, 2, p, False, 100)

    assert V.directional(iv(0.2, 0.5), GAIN)[0] == V.REPRODUCED
    assert V.directional(iv(0.2, 0.5), LOSS)[0] == V.NOT_REPRODUCED
    assert V.directional(iv(0.1, 0.5), GAIN) == (V.UNRESOLVED_HERE, "interval excludes 0 by at most one problem (1/10)")
    assert V.directional(iv(-0.1, 0.5), GAIN) == (V.UNRESOLVED_HERE, "interval contains 0")
    assert V.directional(iv(-0.5, 0.0), LOSS)[0] == V.UNRESOLVED_HERE  # touching 0 contains it
    assert V.subset_rule(iv(-3.0, 1.0))[0] == V.REPRODUCED
    assert V.subset_rule(iv(-3.0, 2.0))[0] == V.UNRESOLVED_HERE
    assert V.subset_rule(iv(1.5, 4.0))[0] == V.NOT_REPRODUCED
    assert V.crossing_rule(Crossing("crosses", 4.0, 3.0, 6.0, 8, 1.0))[0] == V.REPRODUCED
    assert V.crossing_rule(Crossing("crosses", 4.0, 3.0, float("inf"), 8, 0.9))[0] == V.UNRESOLVED_HERE
    assert V.crossing_rule(Crossing("no_crossing", None, float("inf"), float("inf"), 8, 0.0))[0] == V.NOT_REPRODUCED
    assert V.crossing_rule(Crossing("not_above_at_1", None, 1.0, 1.0, 8, 1.0))[0] == V.NOT_REPRODUCED


def test_never_a_k_one_side_was_not_sampled_at():
    from boundlab.report import verdict as V

    base, arm = np.zeros((3, 8)), np.zeros((3, 4))
    assert V.k_max(base, arm) == 4
    with pytest.raises(ValueError, match="beyond"):
        V.delta_at([arm], base, 8, 100, 0.95, 0)
    with pytest.raises(ValueError, match="beyond"):
        V.gains([base], base, [arm], 8, 100, 0.95, 0)


def test_gains_reduce_to_the_coverage_count_at_n():
    # With n = k on both sides per-problem pass@n is 0 or 1: G is the number of model-only problems.
    from boundlab.probe.estimator import pass_at_k_matrix
    from boundlab.report import verdict as V

    n = np.full(6, 4)
    b = pass_at_k_matrix(n, np.array([1, 0, 0, 2, 0, 4]), 4)
    a = pass_at_k_matrix(n, np.array([0, 3, 1, 2, 0, 4]), 4)
    z = pass_at_k_matrix(n, np.array([1, 1, 0, 0, 0, 4]), 4)
    iv, g, g0 = V.gains([a], b, [z], 4, 100, 0.95, 0)
    assert (g, g0, iv.value) == (2.0, 1.0, pytest.approx(1.0))


def test_distill_names_match_the_registered_family():
    from boundlab.algos import _builtins
    from boundlab.report.verdict import is_distill

    assert {a.name for a in _builtins() if a.family == "distill"} == {a.name for a in _builtins()
                                                                       if is_distill(a.name)}


def test_every_column_holds_one_type(tmp_path):
    # W&B tables refuse a column whose rows mix types (the step "10" beside "5..10" once did).
    from boundlab.probe.store import Store
    from boundlab.report.comparisons import compute
    from boundlab.report.sections.verdict import COLUMNS, rows_of

    synthetic_store(tmp_path / "store.sqlite", {"base": _c({range(20): 1}), "mid": _c({range(20): 4}),
                                                "fin": _c({range(10): 8})})
    r0 = run_dir(tmp_path / "0_grpo", "grpo", [BASE, _ck(5, "mid"), _ck(10, "fin")])
    store = Store(tmp_path / "store.sqlite", writable=False)
    try:
        rows, _ = rows_of(compute(report_cfg(tmp_path, r0, [r0]), store))
    finally:
        store.close()
    assert any(row[COLUMNS.index("verdict")] == "not measured" for row in rows)
    for j, col in enumerate(COLUMNS):
        kinds = {"number" if isinstance(row[j], (int, float)) else type(row[j]).__name__
                 for row in rows if row[j] is not None}
        assert len(kinds) <= 1, (col, kinds)


def test_a_null_of_another_base_is_not_the_chance_level(tmp_path):
    synthetic_store(tmp_path / "store.sqlite", {"base": _c({range(20): 1}), "base2": _c({range(30): 1}),
                                                "null2": _c({range(30): 1}), "fin": _c({range(10): 8})})
    r0 = run_dir(tmp_path / "0_grpo", "grpo", [BASE, _ck(10, "fin")])
    r1 = run_dir(tmp_path / "1_nsr", "nsr", [{"kind": "base", "step": 0, "probe_key": "base2"},
                                             {"kind": "null", "probe_key": "null2", "seed": 1}, _ck(10, "fin")])
    out, v, _ = _verdict(tmp_path, r0, [r0, r1])
    assert v[(4, "grpo")]["verdict"] == v[(4, "nsr")]["verdict"] == "not measured"
    assert "its null null2 is a second draw of another base (base2)" in (out / "report.md").read_text()
