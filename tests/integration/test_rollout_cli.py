"""train.py rollout=vllm_* on a machine without vLLM (or CUDA): exit 2, one `error:` line, no traceback,
nothing loaded (the run dir gets no checkpoint)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("rollout", ["vllm_colocate", "vllm_server"])
def test_vllm_rollout_refused_at_start(tmp_path, rollout):
    import torch

    if importlib.util.find_spec("vllm") is not None and torch.cuda.is_available():
        pytest.skip("this machine has CUDA and vLLM")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), BOUNDLAB_STORE=str(tmp_path / "store.sqlite"),
               WANDB_MODE="offline", HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, str(ROOT / "train.py"), f"rollout={rollout}",
                        f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    why = ("needs vLLM, which is not installed here: install it on a GPU machine (pip install "
           "'boundlab[gpu]') or use rollout=hf") if importlib.util.find_spec("vllm") is None else \
        "needs a CUDA GPU and torch sees none here: use rollout=hf"
    assert p.returncode == 2, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert [x for x in p.stderr.strip().splitlines() if x.startswith("error:")] == [f"error: rollout={rollout} {why}"]
    assert not (tmp_path / "run" / "checkpoints").exists()
