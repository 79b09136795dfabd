"""Distillation on the toy world: verified teacher traces, SFT and on-policy distillation train and
are probed like every algorithm; mismatched tokenizers fail at start."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from boundlab.worlds.toyworld2.paths import base_model_dir

ROOT = Path(__file__).resolve().parents[2]


def train(tmp_path, *overrides):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, str(ROOT / "train.py"), *overrides], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["sft_distill", "onpolicy_distill"])
def test_distill_trains_and_is_probed(tmp_path, algo, request):
    if algo == "sft_distill":
        # The session's `algo=sft_distill debug=smoke` run (tests/integration/conftest.py; trained on
        # H1 and B3, W&B offline), which test_sft_then_rl starts its RL from: read only.
        run_dir, proc = request.getfixturevalue("sft_run")
    else:
        run_dir = tmp_path / "run"
        proc = train(tmp_path, f"algo={algo}", "debug=smoke", "logger=none", "backend.torch_threads=1",
                     f"hydra.run.dir={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    base = load_file(base_model_dir() / "model.safetensors")
    final = load_file(run_dir / "checkpoints" / "checkpoint-4" / "model.safetensors")
    assert any(not torch.equal(base[k], final[k]) for k in base)
    rows = [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 2, 4]
    if algo == "sft_distill":
        stats = json.loads((run_dir / "distill_traces_stats.json").read_text())
        assert stats["teacher_samples"] == 128 and 0 < stats["acceptance_rate"] <= 1
        traces = [json.loads(x) for x in (run_dir / "distill_traces.jsonl").read_text().splitlines()]
        assert len(traces) == stats["traces"] > 0
        per = {}
        for t in traces:
            per.setdefault(t["problem_id"], []).append(t["completion"])
        assert all(len(v) == len(set(v)) <= 4 for v in per.values())  # distinct, capped
        assert "acceptance" in proc.stdout


@pytest.mark.slow
def test_onpolicy_distill_refuses_a_teacher_with_another_tokenizer(tmp_path, tiny_lm):
    proc = train(tmp_path, "algo=onpolicy_distill", "debug=smoke", "logger=none",
                 "train.probe_base=false", f"teacher.path={tiny_lm}", f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode == 2
    assert "different tokenizers" in proc.stderr
