"""`python train.py debug=demo` (issue 38): the first demo is one where something moves. GRPO on the toy
world's H1 tier for 30 steps raises strict pass@1 by far more than its interval (measured 2026-12-06:
0.083 -> 0.591, Δ [+0.375, +0.630]); the test asks only that the last checkpoint's Δpass@1 interval
lies above 0, read from the run's own boundary.csv."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_demo_raises_pass_at_1_beyond_its_interval(tmp_path):
    run = tmp_path / "run"
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "s.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, str(ROOT / "train.py"), "debug=demo", "logger=none",
                        "backend.torch_threads=1", f"hydra.run.dir={run}"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = list(csv.DictReader((run / "boundary.csv").open()))
    assert rows, "boundary.csv is empty"
    steps = sorted({int(r["step"]) for r in rows})
    assert steps == [0, 10, 20, 30], steps  # the base is step 0
    last = [r for r in rows if r["step"] == "30" and r["kind"] == "checkpoint" and r["metric"] == "strict"]
    assert len(last) == 1, [(r["kind"], r["metric"]) for r in rows if r["step"] == "30"]
    lo, d = float(last[0]["delta_pass@1_ci_low"]), float(last[0]["delta_pass@1"])
    assert lo > 0 and d > 0.1, (d, lo)
