"""The control arms of experiment=toy2_settled (issue 40) train end to end under debug=smoke:
`grpo_shuffled_reward` (reward.shuffle_within_group), `grpo_strict_reward` (reward.strict) and
`grpo_own_trainer` (algo=grpo_onpolicy on boundlab's OnPolicyTrainer). Each: train.py exits 0, the
policy's parameters change, every checkpoint is probed, and the run's saved config holds the arm's
knobs.

The three smoke runs are one `train.py -m +arm=...` sweep on Hydra's basic launcher (its jobs run one
after another in one process), so train.py's start-up is paid once; each arm's test reads its own
job's dir and recorded outcome."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf
from safetensors.torch import load_file

from boundlab.worlds.toyworld2.paths import base_model_dir

from smoke_kit import done_sweep_job  # tests/integration, shared

ROOT = Path(__file__).resolve().parents[2]
ARMS = {
    "grpo_shuffled_reward": {"algo.name": "grpo", "reward.shuffle_within_group": True, "reward.strict": False},
    "grpo_strict_reward": {"algo.name": "grpo", "reward.shuffle_within_group": False, "reward.strict": True},
    "grpo_own_trainer": {"algo.name": "grpo_onpolicy", "algo.onpolicy.loss_type": "dapo",
                         "reward.shuffle_within_group": False, "reward.strict": False},
}

torch.set_num_threads(1)


@pytest.fixture
def arms_sweep(tmp_path_factory, built_once):
    """Every arm trained by one `train.py -m` sweep under debug=smoke, once per session: (sweep dir,
    the finished process)."""

    def build():
        work = tmp_path_factory.mktemp("settled_arms")
        env = dict(os.environ, BOUNDLAB_STORE=str(work / "store.sqlite"), WANDB_MODE="offline",
                   HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true")
        # H1 only, 8 rollouts: the base is right (strictly, too) on about 10% of H1 samples, so most
        # groups have a reward spread (all-equal rewards leave nothing to learn; E is always right).
        proc = subprocess.run([sys.executable, str(ROOT / "train.py"), "-m", f"+arm={','.join(sorted(ARMS))}",
                               "debug=smoke", "backend.torch_threads=1", "task.toy2.train_mix={H1:1.0}",
                               "algo.rollouts=8", "algo.per_device_train_batch_size=16",
                               f"hydra.sweep.dir={work / 'sweep'}"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=900 * len(ARMS))
        return work / "sweep", proc

    return built_once("settled_arms_sweep", build)


@pytest.mark.slow
@pytest.mark.parametrize("arm", sorted(ARMS))
def test_arm_trains_under_smoke(arms_sweep, arm):
    sweep_dir, proc = arms_sweep
    run_dir = done_sweep_job(sweep_dir, proc, sorted(ARMS).index(arm), f"+arm={arm}")

    cfg = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
    for key, want in ARMS[arm].items():
        assert OmegaConf.select(cfg, key) == want, (arm, key)

    base = load_file(base_model_dir() / "model.safetensors")
    after = load_file(run_dir / "checkpoints" / "checkpoint-4" / "model.safetensors")
    assert any(not torch.equal(base[k], after[k]) for k in base), f"{arm} did not change the policy"

    rows = [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["step"]) for r in rows] == [("base", 0), ("checkpoint", 2), ("checkpoint", 4)]
