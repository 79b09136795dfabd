"""A model or checkpoint folder missing its tokenizer, config or weights is refused in one line that
lists what is missing and where it looked (transformers' own answer to a folder without tokenizer
files is a 36-line traceback asking to install sentencepiece)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from boundlab.models import ModelNotFound, load_model, load_tokenizer, missing_model_parts
from boundlab.worlds.toyworld import paths

ROOT = Path(__file__).resolve().parents[2]
CFG = SimpleNamespace(trust_remote_code=False, allow_download=False, dtype="float32", vision=False)


def _copy_without(tmp_path, *names) -> Path:
    d = tmp_path / "checkpoint-4"
    shutil.copytree(paths.base_model_dir(), d)
    for n in names:
        (d / n).unlink()
    return d


def test_the_shipped_base_has_every_part():
    assert missing_model_parts(paths.base_model_dir()) == []


def test_a_folder_without_tokenizer_files_names_them(tmp_path):
    d = _copy_without(tmp_path, "tokenizer.json", "tokenizer_config.json")
    with pytest.raises(ModelNotFound) as e:
        load_tokenizer(CFG, str(d))
    msg = str(e.value)
    assert "\n" not in msg and "install" not in msg
    assert msg.startswith(f"model folder {d} is missing its tokenizer (looked in {d} for tokenizer: "
                          f"tokenizer.json | tokenizer.model")


def test_every_missing_part_is_listed_at_once_and_trainer_state_is_no_weights(tmp_path):
    d = _copy_without(tmp_path, "tokenizer.json", "model.safetensors")
    (d / "training_args.bin").write_bytes(b"args")  # what HF's Trainer saves beside the weights
    (d / "optimizer.pt").write_bytes(b"adam")
    assert missing_model_parts(d) == ["tokenizer", "weights"]
    with pytest.raises(ModelNotFound, match=r"is missing its tokenizer and weights \(looked in .*"
                                            r"weights: \*\.safetensors"):
        load_model(CFG, "cpu", str(d))


def test_probe_py_on_a_checkpoint_without_tokenizer_is_one_line_exit_2(tmp_path):
    d = _copy_without(tmp_path, "tokenizer.json")
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), "model=toy", f"model.path={d}",
                           "probe.limit=2", "probe.n=2", "logger=none", f"hydra.run.dir={tmp_path / 'out'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: model folder {d} is missing its tokenizer"), err
