"""experiment=sft_then_rl end to end under debug=smoke (issue 39): SFT on the teacher's traces, then
GRPO from its last checkpoint; the RL run starts from the SFT weights (recorded by digest in
run_info.json) while every probe compares with the original base (the same base probe key)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[2]


def _train(tmp_path, *args):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "s.sqlite"), WANDB_MODE="offline",
               WANDB_SILENT="true", HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, str(ROOT / "train.py"), "debug=smoke", "backend.torch_threads=1",
                        "task.toy2.train_mix={H1:0.5,B3:0.5}", *args], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


@pytest.mark.slow
def test_rl_starts_from_the_sft_checkpoint_and_compares_with_the_base(tmp_path, sft_run):
    from boundlab.models import model_fingerprint

    # The SFT stage: the session's `algo=sft_distill` smoke run (tests/integration/conftest.py; the
    # same debug=smoke, torch threads and train mix as here), read only.
    sft, rl = sft_run[0], tmp_path / "sft_then_rl"
    out = _train(tmp_path, "experiment=sft_then_rl", f"train.init_from={sft}", f"hydra.run.dir={rl}")
    start = sft / "checkpoints" / "checkpoint-4"
    assert f"training starts from {start}" in out.stdout
    info = json.loads((rl / "run_info.json").read_text())
    assert info["init_from"] == {"path": str(start), "weights": model_fingerprint(str(start))}
    base_key = lambda run: next(json.loads(x) for x in (run / "probes.jsonl").read_text().splitlines()
                                if json.loads(x)["kind"] == "base")["probe_key"]
    assert base_key(rl) == base_key(sft)  # both compare with the original base
    # RL moved the SFT weights (it trained from them, not from the base).
    a = load_file(start / "model.safetensors")
    b = load_file(rl / "checkpoints" / "checkpoint-4" / "model.safetensors")
    assert any(not torch.equal(a[k], b[k]) for k in a)
