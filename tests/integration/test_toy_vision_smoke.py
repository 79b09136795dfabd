"""`train.py task=toy_vision model=toy_vlm algo=grpo` end to end on CPU: TRL's GRPOTrainer trains the
shipped tiny VLM on pictures through its processor, every checkpoint (and the base) is probed with
strict pass@k through the hf sampler's image path, W&B holds the probes at their steps, and each
checkpoint is a VLM folder (model + processor) that loads back."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from boundlab.worlds.toyvision.paths import base_model_dir
from boundlab.tracking.reader import read_offline_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_toy_vision_smoke_trains_the_vlm_and_probes_every_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true", OMP_NUM_THREADS="1")
    # H1 and B3: the base solves them sometimes, so GRPO's groups have a reward spread.
    proc = subprocess.run([sys.executable, str(ROOT / "train.py"), "task=toy_vision", "model=toy_vlm",
                           "algo=grpo", "debug=smoke", "backend.torch_threads=1",
                           "task.toy2.train_mix={H1:0.5,B3:0.5}", f"task.toy_vision.render_dir={tmp_path / 'img'}",
                           f"hydra.run.dir={run_dir}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"

    base = load_file(base_model_dir() / "model.safetensors")
    ckpt = run_dir / "checkpoints" / "checkpoint-4"
    final = load_file(ckpt / "model.safetensors")
    assert any(not torch.equal(base[k], final[k]) for k in base), "GRPO did not change any parameter"
    # A checkpoint is a whole VLM folder: the probe loads it with its processor.
    from transformers import AutoModelForImageTextToText, AutoProcessor
    assert type(AutoProcessor.from_pretrained(ckpt)).__name__ == "LlavaProcessor"
    assert type(AutoModelForImageTextToText.from_pretrained(ckpt)).__name__ == "LlavaForConditionalGeneration"

    rows = [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["step"]) for r in rows] == [("base", 0), ("checkpoint", 2), ("checkpoint", 4)]
    assert all(r["n"] == 4 and r["problems"] == 8 for r in rows)
    assert len(list((tmp_path / "img").glob("*.png"))) > 8  # probe slice and train set, drawn once
    run = read_offline_run(run_dir)
    assert sorted(h["probe/step"] for h in run.history if "probe/pass@1" in h) == [0, 2, 4]
    assert any("train/reward" in h for h in run.history)
