"""Code end to end: probe.py scores a file of HumanEval completions in the sandbox, and train.py
runs GRPO with the code verifier as the reward."""

import csv
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src/boundlab/tasks/data/HumanEval.jsonl.gz"


def env_for(tmp_path):
    return dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
                HF_HUB_OFFLINE="1")


def test_probe_scores_humaneval_completions(tmp_path):
    rows = [json.loads(x) for x in gzip.open(DATA, "rt")][:6]
    samples = tmp_path / "samples.jsonl"
    with samples.open("w") as f:
        for r in rows:
            f.write(json.dumps({"problem_id": r["task_id"], "completion": r["canonical_solution"]}) + "\n")
            f.write(json.dumps({"problem_id": r["task_id"], "completion": "    return None\n"}) + "\n")
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), "task=humaneval", f"samples={samples}",
                           "logger=none", f"hydra.run.dir={run_dir}"], cwd=tmp_path,
                          env=env_for(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with (run_dir / "problems.csv").open() as f:
        got = [(r["problem_id"], int(r["n"]), int(r["c"])) for r in csv.DictReader(f)]
    assert got == [(r["task_id"], 2, 1) for r in rows]


def test_train_grpo_with_code_reward(tmp_path, tiny_lm):
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, str(ROOT / "train.py"), "task=humaneval", "model=hf",
                           f"model.path={tiny_lm}", "model.name=tiny", "debug=smoke", "logger=none",
                           "backend.torch_threads=1", f"hydra.run.dir={run_dir}"], cwd=tmp_path,
                          env=env_for(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    probes = [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]
    assert [r["step"] for r in probes] == [0, 2, 4]
