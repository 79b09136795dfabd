"""train.init_from (issue 39, experiment=sft_then_rl): the folder or run dir it names, and one-line
refusals for what cannot be a starting point, checked before any model work."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.config import ConfigError
from boundlab.training.init_from import resolve_init

ROOT = Path(__file__).resolve().parents[2]


def _ckpt(d: Path, vocab=64, complete=True) -> Path:
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"vocab_size": vocab, "model_type": "llama", "hidden_size": 8,
                                               "num_hidden_layers": 1}))
    (d / "model.safetensors").write_bytes(b"x")
    if complete:
        from boundlab.rundir.checkpoints import MARKER

        (d / MARKER).write_text("ok")
    return d


def test_a_checkpoint_folder_or_a_run_dirs_latest(tmp_path):
    base = _ckpt(tmp_path / "base")
    ck = _ckpt(tmp_path / "ck")
    assert resolve_init(str(ck), str(base)) == ck
    assert resolve_init(None, str(base)) is None and resolve_init("", str(base)) is None
    run = tmp_path / "run"
    for step in (2, 4):
        _ckpt(run / "checkpoints" / f"checkpoint-{step}")
    _ckpt(run / "checkpoints" / "checkpoint-6", complete=False)  # killed mid-save: not taken
    assert resolve_init(str(run), str(base)) == run / "checkpoints" / "checkpoint-4"


@pytest.mark.parametrize("make,needle", [
    (lambda t: t / "nowhere", "no such folder"),
    (lambda t: (t / "run" / "checkpoints").mkdir(parents=True) or t / "run", "no complete checkpoint"),
    (lambda t: (t / "empty").mkdir() or t / "empty", "has no config.json and no weights"),
    (lambda t: _ckpt(t / "other", vocab=99), "its vocab_size is 99 but the base's"),
])
def test_what_cannot_be_a_starting_point_is_one_line(tmp_path, make, needle):
    base = _ckpt(tmp_path / "base")
    with pytest.raises(ConfigError) as e:
        resolve_init(str(make(tmp_path)), str(base))
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_the_experiment_without_its_checkpoint_is_refused_before_model_work(tmp_path):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "s.sqlite"), WANDB_MODE="disabled")
    p = subprocess.run([sys.executable, str(ROOT / "train.py"), "experiment=sft_then_rl", "debug=smoke",
                        f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1].startswith("error: experiment=sft_then_rl starts RL from an SFT")
    assert not (tmp_path / "s.sqlite").exists()  # nothing probed


def test_the_script_prints_three_runs_and_one_report():
    env = dict(os.environ, DRY_RUN="1", OUT="o", SEED="3")
    p = subprocess.run(["bash", str(ROOT / "scripts" / "sft_then_rl.sh"), "debug=smoke"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 4 and all(x.startswith("+ ") for x in lines)
    assert "algo=sft_distill" in lines[0] and "hydra.run.dir=o/sft_s3" in lines[0] and "debug=smoke" in lines[0]
    assert "algo=grpo" in lines[1] and "train.seed=3" in lines[1]
    assert "experiment=sft_then_rl train.init_from=o/sft_s3" in lines[2]
    assert "report.py" in lines[3] and "runs=[o/sft_s3,o/rl_s3,o/sft_then_rl_s3]" in lines[3]
