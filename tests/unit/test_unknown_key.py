"""A mistyped plain key (`algo.gama=0.9`) is one line and exit 2 before Hydra composes anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.cli import unknown_key
from boundlab.config import ProbeMain, TrainMain

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"


def test_unknown_key_names_the_path_and_what_is_known_there():
    msg = unknown_key(["algo.gama=0.9"], CONF, TrainMain)
    assert msg.startswith("unknown config key 'algo.gama' (known here: distill, ")
    assert unknown_key(["probe.nn=3"], CONF, ProbeMain) == (
        "unknown config key 'probe.nn' (known here: adaptive, bootstrap_iters, budget, budget_cap, ci, "
        "delta, epsilon, gpass_tau, keep_text, kl_samples, limit, max_new_tokens, n, n0, null_seed_offset, predict_k, seed, stop, "
        "temperature, top_p)")
    # Nested typed blocks and Optional fields are walked too.
    assert unknown_key(["algo.onpolicy.critic.lr=1"], CONF, TrainMain).startswith(
        "unknown config key 'algo.onpolicy.critic.lr'")


@pytest.mark.parametrize("ok", [
    ["algo=ppo", "kl.coef=0.001", "algo.onpolicy.gamma=0.9", "train.max_steps=3"],
    ["experiment=kl_ablation", "debug=smoke", "hydra/launcher=joblib", "hydra.run.dir=x"],
    ["+algo.unknown=1", "~logger.tags", "model@teacher=toy_teacher", "teacher.path=/x"],
    ["-m", "algo.learning_rate=1e-4,2e-4", "logger.tags=[a,b]", "resume=null"],
])
def test_known_keys_choices_and_other_checks_pass(ok):
    assert unknown_key(ok, CONF, TrainMain) is None


def test_entry_point_refuses_it_in_one_line_with_exit_2(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "train.py"), "algo.gama=0.9",
                        f"hydra.run.dir={tmp_path / 'run'}"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("error: unknown config key 'algo.gama'")
    assert "Traceback" not in r.stderr and not (tmp_path / "run").exists()
