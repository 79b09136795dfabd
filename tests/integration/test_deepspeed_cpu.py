"""The distributed path on CPU: DeepSpeed ZeRO-2/3 with two gloo processes through accelerate.

DeepSpeed is an optional extra (`pip install -c constraints-cpu.txt deepspeed`); without it these
tests skip. With it, each launch trains, probes every checkpoint on rank 0 only (a whole model,
no ZeRO-3 partitioning, no synced decoding) and exits cleanly.
"""

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None or shutil.which("accelerate") is None,
                       reason="deepspeed (optional extra) is not installed"),
]


@pytest.mark.parametrize("zero,algo", [("zero2", "grpo"), ("zero3", "ppo")])
def test_two_process_deepspeed_cpu_run(tmp_path, zero, algo):
    run_dir = tmp_path / "run"
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline")
    proc = subprocess.run(["accelerate", "launch", "--config_file", f"launch/accelerate/{zero}_cpu.yaml",
                           "--num_processes", "2", "train.py", f"backend={zero}_cpu", "debug=smoke",
                           "logger=none", f"algo={algo}", f"hydra.run.dir={run_dir}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 2, 4]
