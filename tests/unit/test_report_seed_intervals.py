"""The report's seed-level intervals (issue 40): a two-seed arm gets the hierarchical interval
(seeds, then problems) and the unresolved label on a constructed edge case; a one-seed arm is
marked "single seed". On a synthetic store whose answers are known."""

from __future__ import annotations


import numpy as np
import pytest

from boundlab.probe.hierarchical import hierarchical_delta
from report_kit import IDS, N, read_csv, report_cfg, run_dir, synthetic_store, toy_hard


def _counts(hard: set[str]) -> dict[str, dict[str, int]]:
    # The base solves 2 of 8 everywhere but on 4 easy problems (0 of 8: pass@8 = 0 there). Both GRPO
    # seeds solve those 4 (pass@8 = 1 everywhere), so Δpass@8 = 1 on 4 problems and 0 elsewhere in
    # each seed; their pass@1 differs (6 vs 4 of 8), so seeds matter for Δpass@1.
    gained = [p for p in IDS if p not in hard][:4]
    return {"base": {p: 0 if p in gained else 2 for p in IDS},
            "s0": {p: 6 for p in IDS}, "s1": {p: 4 for p in IDS}, "one": {p: 2 for p in IDS}}


def test_two_seed_arm_gets_the_hierarchical_interval_and_an_unresolved_label(tmp_path):
    from boundlab.report.build import run

    hard = toy_hard()
    assert len(hard) == 10
    counts = _counts(hard)
    synthetic_store(tmp_path / "store.sqlite", counts)
    base = {"kind": "base", "step": 0, "probe_key": "base"}
    r0 = run_dir(tmp_path / "0_grpo_s0", "grpo", [base, {"kind": "checkpoint", "step": 5, "probe_key": "s0"}])
    # Seed 1 also has a step seed 0 lacks: left out of the arm, with a note.
    r1 = run_dir(tmp_path / "1_grpo_s1", "grpo", [base, {"kind": "checkpoint", "step": 3, "probe_key": "s1"},
                                                {"kind": "checkpoint", "step": 5, "probe_key": "s1"}])
    r2 = run_dir(tmp_path / "2_nsr_s0", "nsr", [base, {"kind": "checkpoint", "step": 5, "probe_key": "one"}])
    cfg = report_cfg(tmp_path, r0, [r0, r1, r2])
    out = run(cfg).parent
    assert cfg.delta_bootstrap_iters == 10_000

    rows = {(r["arm"], r["step"], r["tier"]): r for r in read_csv(out / "seed_intervals.csv")}
    assert set(rows) == {(a, "5", t) for a in ("grpo", "nsr") for t in ("false", "true", "all")}
    g = rows[("grpo", "5", "all")]
    assert (g["seeds"], g["runs"], g["n"], g["resamples"], g["note"]) == ("2", "0_grpo_s0 1_grpo_s1", "8",
                                                                         "10000", "")

    # The interval is the hierarchical bootstrap of the two seeds' tables against the base's.
    ids = IDS
    table = [(np.full(40, N), np.array([counts[k][p] for p in ids])) for k in ("s0", "s1")]
    want = hierarchical_delta(table, [(np.full(40, N), np.array([counts["base"][p] for p in ids]))], (1, 8),
                              iters=10_000, seed=0)
    got = [float(g[c]) for c in ("delta_pass@1", "delta_pass@1_ci_low", "delta_pass@1_ci_high",
                                 "delta_pass@n", "delta_pass@n_ci_low", "delta_pass@n_ci_high")]
    assert got == [float(want.delta[0]), float(want.lo[0]), float(want.hi[0]),
                   float(want.delta[1]), float(want.lo[1]), float(want.hi[1])]
    # Δpass@1: seed 0 +0.525, seed 1 +0.275, mean +0.4. Resampling seeds puts a quarter of the mass
    # near each seed's own value, so the interval spans both (one run's problem bootstrap would not).
    assert float(g["delta_pass@1"]) == pytest.approx(0.4, abs=1e-12)
    assert float(g["delta_pass@1_ci_low"]) < 0.3 and float(g["delta_pass@1_ci_high"]) > 0.5
    assert g["delta_pass@1_label"] == "gain"
    # Δpass@8 = 4/40 = 0.1. A resample holds none of the 4 gained problems with P = (36/40)^40 = 0.015
    # < 0.025, at most one with P = 0.015 + 40 (1/10)(9/10)^39 = 0.080: the lower end is exactly one
    # problem, 1/40. It excludes 0, but within one problem: unresolved, not a gain.
    assert float(g["delta_pass@n"]) == pytest.approx(0.1, abs=1e-12)
    assert float(g["delta_pass@n_ci_low"]) == pytest.approx(1 / 40, abs=1e-12)
    assert g["delta_pass@n_label"] == "unresolved"
    # The easy tier (30 problems, all 4 gained there): (26/30)^30 = 0.014, then 0.076: lower end 1/30.
    e = rows[("grpo", "5", "false")]
    assert float(e["delta_pass@n_ci_low"]) == pytest.approx(1 / 30, abs=1e-12)
    assert e["delta_pass@n_label"] == "unresolved"
    # The hard tier: nothing gained or lost at pass@8 (10 problems: the exact distribution).
    h = rows[("grpo", "5", "true")]
    assert (float(h["delta_pass@n"]), h["delta_pass@n_label"], h["resamples"]) == (0.0, "no effect resolved",
                                                                                   "exact")
    # The one-seed arm says so.
    one = rows[("nsr", "5", "all")]
    assert (one["seeds"], one["note"]) == ("1", "single seed")

    # Each run alone (remedies.csv, the paired problem bootstrap at 10,000 resamples): the same edge,
    # its lower end one problem from 0, so the per-run cell is unresolved too.
    per_run = {(r["run"], r["step"], r["tier"]): r for r in read_csv(out / "remedies.csv")}
    for name in ("0_grpo_s0", "1_grpo_s1"):
        cell = per_run[(name, "5", "all")]
        assert float(cell["delta_pass@n_ci_low"]) == pytest.approx(1 / 40, abs=1e-12)
        assert (cell["delta_pass@n_label"], cell["delta_pass@1_label"]) == ("unresolved", "gain")
    assert per_run[("base", "0", "all")]["delta_pass@n_label"] == ""

    md = (out / "report.md").read_text()
    assert "**Seed-level intervals.**" in md
    line = next(ln for ln in md.splitlines() if ln.startswith("| grpo | 2 | 5 | all |"))
    assert "| unresolved |" in line and "| gain |" in line
    assert "Note: grpo: step(s) 3 not probed in every seed; left out." in md
