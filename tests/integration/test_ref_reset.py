"""train.ref_reset_every (issue 39, ProRL's hard reset) on the own trainer, in process on the first
toy world: the reference becomes the policy and the optimizer state is cleared at every N-th step
(not at the last), the reset reference is saved with each later checkpoint, a resumed run trains
exactly as the uninterrupted one, and the combinations it cannot honour are refused in one line."""

import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from boundlab.algos.resets import ReferenceReset, check_reset
from boundlab.config import ConfigError

from onpolicy_build import build_trainer, train_cfg  # tests/integration, shared

torch.set_num_threads(1)
CFG = ("algo=dapo", "debug=smoke", "kl.coef=0.05", "algo.onpolicy.dynamic_sampling=false",
       "algo.max_completion_length=8", "algo.onpolicy.overlong_buffer=0", "train.max_steps=4",
       "train.save_steps=2", "train.ref_reset_every=2")


class Spy(TrainerCallback):
    """After the reset's callback: what the optimizer and the reference hold at each step's end."""

    def __init__(self, trainer):
        self.trainer, self.state_sizes, self.ref_is_policy = trainer, {}, {}

    def on_step_end(self, args, state, control, optimizer=None, model=None, **kw):
        inner = getattr(optimizer, "optimizer", optimizer)
        self.state_sizes[state.global_step] = len(inner.state)
        pol = dict(self.trainer.accelerator.unwrap_model(model).named_parameters())
        self.ref_is_policy[state.global_step] = all(
            torch.equal(p, pol[n]) for n, p in self.trainer.ref_model.named_parameters())


class StopAt(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kw):
        if state.global_step == self.step:
            control.should_training_stop = True


def _trainer(out, resume_from=None, extra=()):
    cfg = train_cfg(*CFG)
    check_reset(cfg)
    t = build_trainer(cfg, out)
    reset = ReferenceReset(cfg.train.ref_reset_every, resume_from)
    t.add_callback(reset)
    reset.bind(t)
    for cb in extra:
        t.add_callback(cb)
    return t, reset


def test_reset_schedule_saved_reference_and_cleared_optimizer(tmp_path):
    t, reset = _trainer(tmp_path / "a")
    spy = Spy(t)
    t.add_callback(spy)
    t.train()
    assert reset.reset_steps == [2]  # not at step 4: the last step
    assert spy.ref_is_policy == {1: False, 2: True, 3: False, 4: False}
    assert spy.state_sizes[2] == 0 and spy.state_sizes[1] > 0 and spy.state_sizes[3] > 0
    ck2, ck4 = tmp_path / "a" / "checkpoint-2", tmp_path / "a" / "checkpoint-4"
    ref2, pol2 = load_file(ck2 / "reference" / "model.safetensors"), load_file(ck2 / "model.safetensors")
    assert set(ref2) <= set(pol2) and all(torch.equal(ref2[k], pol2[k]) for k in ref2)
    ref4 = load_file(ck4 / "reference" / "model.safetensors")
    assert all(torch.equal(ref4[k], ref2[k]) for k in ref2)  # no reset at 4: still step 2's policy


def test_a_resumed_run_trains_exactly_as_the_uninterrupted_one(tmp_path):
    whole, _ = _trainer(tmp_path / "whole")
    whole.train()
    first, _ = _trainer(tmp_path / "cut", extra=[StopAt(2)])
    first.train()
    assert not (tmp_path / "cut" / "checkpoint-4").exists()
    ck = tmp_path / "cut" / "checkpoint-2"
    again, reset = _trainer(tmp_path / "cut", resume_from=ck)
    spy = Spy(again)
    again.add_callback(spy)
    again.train(resume_from_checkpoint=str(ck))
    assert 2 not in spy.ref_is_policy  # the reset of step 2 is not done twice
    a = load_file(tmp_path / "whole" / "checkpoint-4" / "model.safetensors")
    b = load_file(tmp_path / "cut" / "checkpoint-4" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("over,needle", [
    (["kl.coef=0"], "kl.coef > 0"),
    (["peft.enabled=true"], "peft.enabled"),
    (["backend.deepspeed=launch/ds.json"], "DeepSpeed"),
    (["train.ref_reset_every=-1"], ">= 0"),
])
def test_refusals_are_one_line(over, needle):
    from boundlab.algos import check

    cfg = train_cfg(*CFG, *over)
    with pytest.raises(ConfigError) as e:
        check(cfg)
    assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.slow
def test_experiment_prorl_runs_under_smoke_through_train_py(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from onpolicy_build import ROOT

    run = tmp_path / "run"
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "s.sqlite"), WANDB_MODE="offline",
               WANDB_SILENT="true", HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, str(ROOT / "train.py"), "experiment=prorl", "debug=smoke",
                        "train.ref_reset_every=2", "backend.torch_threads=1", "task.toy2.train_mix={H1:0.5,B3:0.5}",
                        f"hydra.run.dir={run}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (run / "checkpoints" / "checkpoint-2" / "reference" / "model.safetensors").is_file()
    state = json.loads((run / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())
    assert [h["ref_reset"] for h in state["log_history"] if "ref_reset" in h] == [2.0]
