"""Seed-level intervals recomputed from a shipped problems.csv (issue 40): the r4 pilot's point
estimates to the digit, its arm grouping, and one line with exit 2 for a bad file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from boundlab.errors import UserError
from boundlab.report import pilot_intervals as PI

ROOT = Path(__file__).resolve().parents[2]
PILOT = ROOT / "docs" / "toy2_paper" / "problems.csv"


def test_reads_the_pilot_and_groups_the_grpo_seeds():
    ids, base, models = PI.read_problems_csv(PILOT)
    assert len(ids) == 120 and ids[0] == "tw2-test-0000"
    # Its counts are the headline's: the base solves 0.725 of the problems at n = 256 (passk_summary.csv).
    assert (base[1] > 0).mean() == 0.725 and set(base[0].tolist()) == {256}
    arms = PI.group_arms(list(models))
    assert arms["grpo"] == ["0_grpo_s0", "1_grpo_s1", "2_grpo_s2"]
    assert arms["grpo_kl001"] == ["10_grpo_kl001"] and len(arms) == 12
    with pytest.raises(UserError, match="no such model in problems.csv: 9_nope"):
        PI.group_arms(list(models), {"x": ["9_nope"]})


def test_pilot_point_estimates_match_the_docs():
    ids, base, models = PI.read_problems_csv(PILOT)
    tiers = PI.toy2_tiers(ids)
    assert sorted(set(tiers.values())) == ["B3", "B4", "H1", "H2", "X"]
    arms = {"grpo_s0": ["0_grpo_s0"], "grpo": ["0_grpo_s0", "1_grpo_s1", "2_grpo_s2"]}
    cells = {(c.arm, c.tier): c for c in PI.seed_cells(ids, base, models, arms, tiers, (1, 256), iters=1000)}
    s0 = cells[("grpo_s0", "all")].result
    # docs/toy2_paper/README.md: seed 0 Δpass@256 −0.025 (12 lost, 9 gained of 120), Δpass@1 +0.423.
    assert s0.delta[1] == pytest.approx(-3 / 120, abs=1e-12) and round(float(s0.delta[0]), 3) == 0.423
    assert s0.single_seed
    # H1: 5 of 24 lost, Δ −0.208; the three seeds' net losses 5, 1 and 2: (−5 − 1 − 2)/72 = −0.111.
    assert cells[("grpo_s0", "H1")].result.delta[1] == pytest.approx(-5 / 24, abs=1e-12)
    g = cells[("grpo", "H1")]
    assert g.result.delta[1] == pytest.approx(-8 / 72, abs=1e-12) and g.result.seeds == 3
    assert not g.result.single_seed and g.problems == 24
    # X: out of support, nothing solved by base or GRPO.
    assert cells[("grpo", "X")].result.delta.tolist() == [0.0, 0.0]


def test_bad_file_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "problems.csv"
    bad.write_text("problem_id,base_n,base_c,a n,a c\np1,4,5,4,1\n")
    with pytest.raises(UserError, match=r"line 2: need 0 <= c <= n"):
        PI.read_problems_csv(bad)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "pilot_seed_intervals.py"), str(bad), "--no-tiers"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert r.stderr.startswith("error: ") and "need 0 <= c <= n" in r.stderr
    (tmp_path / "b.csv").write_text("problem_id,base_n\np1,4\n")
    with pytest.raises(UserError, match="no column 'base_c'"):
        PI.read_problems_csv(tmp_path / "b.csv")
    (tmp_path / "c.csv").write_text("problem_id,base_n,base_c\np1,4,x\n")
    with pytest.raises(UserError, match=r"line 2: column 'base_c' is not an integer: 'x'"):
        PI.read_problems_csv(tmp_path / "c.csv")


def test_script_prints_the_arm_table(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("problem_id,base_n,base_c,0_a_s0 n,0_a_s0 c,1_a_s1 n,1_a_s1 c\n"
                 "p1,4,0,4,4,4,2\np2,4,1,4,0,4,0\np3,4,2,4,4,4,4\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "pilot_seed_intervals.py"), str(f), "--no-tiers",
                        "--iters", "0", "--k", "1", "--json", str(tmp_path / "o.json")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("a "))
    # pass@1: seeds [1, 0, 1] and [.5, 0, 1], base [0, .25, .5]; arm mean (1 + 0 + 1 + .5 + 0 + 1)/6
    # = 7/12, base .75/3 = 1/4: Δ = 1/3.
    assert line.split()[1:4] == ["2", "all", "3"] and line.split()[4] == "+0.333"
    import json
    out = json.loads((tmp_path / "o.json").read_text())
    assert out[0]["resamples"] is None and out[0]["pass@1"]["delta"] == pytest.approx(1 / 3, abs=1e-12)
    assert np.isfinite(out[0]["pass@1"]["lo"])
