"""The report's remedies section (issue 14): per-tier pass@1 and pass@n with intervals, the paired
differences to the base, the mark (pass@1 raised significantly, no tier's pass@n lost
significantly), and the trade-off scatter, on a synthetic store whose answers are known."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from boundlab.report.sections import remedies as R
from report_kit import read_csv, report_cfg, run_dir, synthetic_store, toy_hard


def _store(path: Path, hard: set[str]) -> None:
    # Correct samples per problem: base 2 of 8 everywhere (every problem solvable: pass@8 = 1);
    # "good" 6 of 8 everywhere; "shrink" 8 on easy problems, 0 on hard ones; "flat" = the base.
    synthetic_store(path, {"base": lambda p: 2, "null": lambda p: 2, "good": lambda p: 6,
                           "shrink": lambda p: 0 if p in hard else 8, "flat": lambda p: 2})


def test_remedies_section_marks_only_a_raise_without_a_tier_loss(tmp_path):
    from boundlab.report.build import run

    hard = toy_hard()
    assert len(hard) == 10
    _store(tmp_path / "store.sqlite", hard)
    base = {"kind": "base", "step": 0, "probe_key": "base"}
    r0 = run_dir(tmp_path / "0_grpo_s0", "grpo", [base, {"kind": "checkpoint", "step": 2, "probe_key": "shrink"},
                                                {"kind": "checkpoint", "step": 4, "probe_key": "good"}])
    r1 = run_dir(tmp_path / "1_nsr_s0", "nsr", [base, {"kind": "null", "step": 0, "probe_key": "null", "seed": 1},
                                              {"kind": "checkpoint", "step": 2, "probe_key": "flat"}])
    cfg = report_cfg(tmp_path, r0, [r0, r1])
    out = run(cfg).parent

    verdicts = {(v["run"], v["step"]): v for v in read_csv(out / "remedies_verdict.csv")}
    assert {k: v["marked"] for k, v in verdicts.items()} == {
        ("0_grpo_s0", "2"): "no", ("0_grpo_s0", "4"): "yes", ("1_nsr_s0", "null"): "no", ("1_nsr_s0", "2"): "no"}
    # shrink: pass@1 0.25 -> 0.75 (30 easy problems at 1), but the hard tier's pass@8 falls 1 -> 0.
    v = verdicts[("0_grpo_s0", "2")]
    assert float(v["delta_pass@1"]) == 0.5 and float(v["delta_pass@1_ci_low"]) > 0
    assert v["pass@n_lost_on"] == "true all"
    assert verdicts[("0_grpo_s0", "4")]["pass@n_lost_on"] == "none"
    assert {v["arm"] for v in verdicts.values()} == {"grpo", "nsr"}

    rows = {(r["run"], r["step"], r["tier"]): r for r in read_csv(out / "remedies.csv")}
    assert float(rows[("0_grpo_s0", "2", "true")]["pass@n"]) == 0.0
    assert float(rows[("0_grpo_s0", "2", "true")]["delta_pass@n_ci_high"]) == -1.0
    assert float(rows[("0_grpo_s0", "2", "false")]["pass@1"]) == 1.0
    assert float(rows[("base", "0", "all")]["pass@1"]) == 0.25 and rows[("base", "0", "all")]["delta_pass@1"] == ""
    g = rows[("0_grpo_s0", "4", "all")]
    assert (float(g["pass@1"]), float(g["pass@n"]), float(g["delta_pass@n"])) == (0.75, 1.0, 0.0)
    assert float(g["pass@1_ci_low"]) <= 0.75 <= float(g["pass@1_ci_high"])

    md = (out / "report.md").read_text()
    assert "Raised pass@1 without a significant pass@n loss on any tier: grpo (1 of 2 checkpoints)." in md
    assert (out / "remedies_tradeoff.png").stat().st_size > 1000


def test_compare_tiers_and_verdict_by_hand():
    # 4 problems, k = 2: base pass@1 [.5 .5 .5 .5], pass@2 [1 1 1 1]; model pass@1 [1 1 0 0], pass@2 [1 1 0 0].
    base = np.array([[.5, 1.], [.5, 1.], [.5, 1.], [.5, 1.]])
    model = np.array([[1., 1.], [1., 1.], [0., 0.], [0., 0.]])
    groups = R.tier_rows({"a": "x", "b": "x", "c": "y", "d": "y"}, ["a", "b", "c", "d"])
    t = R.compare_tiers(base, model, groups, iters=200, ci=0.95)
    assert list(t) == ["x", "y", R.ALL]
    assert t["x"]["delta_pass@1"] == (0.5, 0.5, 0.5) and t["y"]["delta_pass@n"] == (-1.0, -1.0, -1.0)
    assert t[R.ALL]["pass@1"] == 0.5 and t[R.ALL]["delta_pass@1"][0] == 0.0
    raised, shrunk, marked = R.verdict(t)
    # On all 4 problems Δpass@2 = -0.5, but a resample of only x's problems gives 0: its interval
    # reaches 0, so only tier y has lost significantly.
    assert (raised, shrunk, marked) == (False, ["y"], False)
    # Only tier x: raised with nothing lost -> marked.
    tx = R.compare_tiers(base, model, {"x": np.array([0, 1]), R.ALL: np.array([0, 1])}, iters=200, ci=0.95)
    assert R.verdict(tx) == (True, [], True)


def test_arm_of_reads_the_sweep_dir_names():
    assert R.arm_of("3_unlikeliness_s0 (grpo)", "grpo") == "unlikeliness"
    assert R.arm_of("12_kl_strong_s2 (grpo)", "grpo") == "kl_strong"
    assert R.arm_of("0_grpo", "grpo") == "grpo"
    assert R.arm_of("my-run (ppo)", "ppo") == "ppo"
