"""The remedies of issue 14 wired into the trainers: the entropy bonus in the on-policy loss, the
unlikeliness reward on the on-policy rollouts and as TRL's appended reward function (by hand, on a
unigram model whose log-probs are known), the refusals, and one TRL GRPO run with both knobs on
(slow). The math itself is tested by hand in tests/unit/test_objectives.py."""

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from onpolicy_build import build_trainer, train_cfg  # tests/integration, shared

ROOT = Path(__file__).resolve().parents[2]
torch.set_num_threads(1)




DAPO = ["algo=dapo", "debug=smoke", "algo.onpolicy.dynamic_sampling=false", "algo.max_completion_length=8",
        "algo.onpolicy.overlong_buffer=0"]
PROMPTS = {"prompt": ["Q:1+2*3;", "Q:9-2*4;"], "problem_id": ["a", "b"]}


def test_entropy_bonus_is_minus_coef_times_the_token_mean_entropy_in_the_onpolicy_loss(tmp_path):
    trainer = build_trainer(train_cfg(*DAPO, "algo.entropy_coef=0.05"), tmp_path / "ckpt")
    assert trainer.s.entropy_coef == 0.05
    model = trainer.model
    batch = trainer._make_round(model, PROMPTS)
    batch.advantages = torch.linspace(-1, 1, len(batch)).unsqueeze(1) * batch.completion_mask
    with_bonus = trainer.compute_loss(model, {"rollouts": batch, "weight": 1.0})
    trainer.s = dataclasses.replace(trainer.s, entropy_coef=0.0)
    without = trainer.compute_loss(model, {"rollouts": batch, "weight": 1.0})
    # By hand: -coef * sum over valid tokens of -(p log p) / the round's token count.
    ids = torch.cat([batch.prompt_ids, batch.completion_ids], 1)
    attn = torch.cat([batch.prompt_mask, batch.completion_mask.to(batch.prompt_mask.dtype)], 1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=attn, position_ids=(attn.cumsum(1) - 1).clamp(min=0)).logits
    logits = logits[:, batch.prompt_ids.size(1) - 1:-1].double() / trainer.s.temperature
    p = logits.softmax(-1)
    ent = -(p * p.log()).sum(-1)
    mask = batch.completion_mask.double()
    expected = -0.05 * float((ent * mask).sum() / mask.sum())
    assert abs(float(with_bonus - without) - expected) < 1e-5, (float(with_bonus - without), expected)
    assert expected < 0


def test_unlikeliness_shapes_the_onpolicy_scores_by_rank_in_the_group(tmp_path):
    trainer = build_trainer(train_cfg(*DAPO, "algo.shaping.unlikeliness=0.5"), tmp_path / "ckpt")
    k = trainer.s.rollouts
    batch = trainer._make_round(trainer.model, PROMPTS)
    assert batch.old_logp is not None  # the ranking needs the rollout policy's log-probs
    m = batch.completion_mask
    seq = ((batch.old_logp * m).sum(1) / m.sum(1)).tolist()
    expected = []
    for g in range(len(seq) // k):
        vals = seq[g * k:(g + 1) * k]
        for i, v in enumerate(vals):
            rank = sum(1 for j, u in enumerate(vals) if u < v or (u == v and j < i))
            expected.append(float(batch.rewards[g * k + i]) * (1 - 0.5 * rank / k))
    assert torch.allclose(batch.scores.cpu().float(), torch.tensor(expected), atol=1e-6)
    # Not vacuous: some correct sample was not its group's least likely, so its score dropped.
    assert (batch.scores.cpu() < batch.rewards).any()
    change = float((torch.tensor(expected) - batch.rewards).mean())
    assert trainer._metrics["unlikeliness/reward_change"] == [pytest.approx(change, abs=1e-6)]


class Unigram(nn.Module):
    """Every position predicts the same distribution: token log-probs known by hand."""

    def __init__(self, logp: torch.Tensor):
        super().__init__()
        self.table = nn.Parameter(logp.clone())

    def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=None):
        b, t = input_ids.shape
        return SimpleNamespace(logits=self.table.expand(b, t, -1))


def test_trl_unlikeliness_reward_by_hand():
    from boundlab.algos.shaping import UnlikelinessReward
    from boundlab.models import load_tokenizer

    tok = load_tokenizer(train_cfg().model)
    v = len(tok)
    x, y, z = 5, 6, 7
    w = torch.full((v,), 0.25 / (v - 2))
    w[x], w[y] = 0.5, 0.25
    model = Unigram(w.log())

    def correct(prompts, completions, **_):
        return [1.0, 1.0, 0.0, 1.0]

    correct.__name__ = "toy_correct"
    shaper = UnlikelinessReward(0.5, 4, [correct])
    shaper.bind(SimpleNamespace(processing_class=tok, model=model, temperature=1.0))
    base, extra = shaper.funcs()
    assert base.__name__ == "toy_correct" and extra.__name__ == "unlikeliness"
    prompts = ["Q:1+2*3;"] * 4
    completions = ["xx", "y", "xy", "z"]
    ids = [[x, x], [y], [x, y], [z]]
    # Mean token log-probs: ln .5, ln .25, (ln .5 + ln .25) / 2, ln(.25 / (V - 2)): ranks 3, 1, 2, 0.
    kw = dict(prompts=prompts, completions=completions, completion_ids=ids, problem_id=["a"] * 4)
    assert base(**kw) == [1.0, 1.0, 0.0, 1.0]
    got = extra(**kw)
    # beta 0.5, G 4: 1 * (1 - 0.5 * 3/4) - 1 = -0.375; 1 * (1 - 0.5 * 1/4) - 1 = -0.125; wrong 0; least likely 0.
    assert got == pytest.approx([-0.375, -0.125, 0.0, 0.0])
    assert shaper.seq_logp(prompts, ids).tolist() == pytest.approx(
        [math.log(.5), math.log(.25), (math.log(.5) + math.log(.25)) / 2, math.log(.25 / (v - 2))], abs=1e-6)
    # The shaper reads the task reward of the same round only: not run since -> refused.
    with pytest.raises(RuntimeError, match="did not run"):
        extra(**kw)
    # A group split across processes is refused, never ranked in part.
    base(**{**kw, "prompts": prompts[:3], "completions": completions[:3]})
    with pytest.raises(RuntimeError, match="whole groups"):
        extra(**{**kw, "prompts": prompts[:3], "completions": completions[:3], "completion_ids": ids[:3]})


@pytest.mark.parametrize("overrides,needle", [
    (["algo=rloo", "algo.entropy_coef=0.01"], "RLOOConfig has no entropy bonus"),
    (["algo=passk_grpo", "algo.shaping.unlikeliness=0.25", "algo.onpolicy.passk_k=2"], "reads 0/1 verdicts"),
    (["algo=weighted_reinforce", "algo.shaping.unlikeliness=0.25"], "reads 0/1 verdicts"),
    (["algo=reinforce_pp", "algo.shaping.unlikeliness=0.25"], "no groups to rank in"),
    (["algo=nsr", "algo.onpolicy.positive_weight=0.1"], "positive_weight=0"),
    (["algo=sft_distill", "algo.entropy_coef=0.01"], "no entropy bonus or reward shaping"),
    (["algo=grpo", "algo.shaping.unlikeliness=1.5"], "algo.shaping.unlikeliness=1.5: must be in [0, 1]"),
    (["algo=grpo", "algo.entropy_coef=-0.1"], "algo.entropy_coef=-0.1: must be >= 0"),
])
def test_remedy_knobs_refused_in_one_line(overrides, needle):
    from boundlab.config import ConfigError
    from boundlab.validate import validate

    with pytest.raises(ConfigError) as e:
        validate(train_cfg("debug=smoke", *overrides))
    assert needle in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_remedy_knobs_accepted_where_they_apply():
    from boundlab.validate import validate

    for o in (["algo=grpo", "algo.shaping.unlikeliness=0.25", "algo.entropy_coef=0.01"],
              ["algo=dr_grpo", "algo.shaping.unlikeliness=0.25"], ["algo=rloo", "algo.shaping.unlikeliness=0.25"],
              ["algo=dapo", "algo.shaping.unlikeliness=0.25", "algo.entropy_coef=0.01"],
              ["algo=reinforce_pp_baseline", "algo.shaping.unlikeliness=0.25"], ["algo=nsr"]):
        validate(train_cfg("debug=smoke", *o))


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["grpo", "rloo"])
def test_trl_trains_with_the_unlikeliness_reward_and_grpo_with_the_entropy_bonus(tmp_path, algo):
    from boundlab.tracking.reader import read_offline_run

    run_dir = tmp_path / "run"
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true")
    entropy = ["algo.entropy_coef=0.01"] if algo == "grpo" else []
    proc = subprocess.run([sys.executable, str(ROOT / "train.py"), f"algo={algo}", "debug=smoke",
                           "backend.torch_threads=1", "task.toy2.train_mix={E:0.5,H1:0.5}",
                           "algo.shaping.unlikeliness=0.5", *entropy, f"hydra.run.dir={run_dir}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    rows = [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in rows][0] == "base" and any(r["kind"] == "checkpoint" for r in rows)
    history = read_offline_run(run_dir).history
    shaping = [h["train/rewards/unlikeliness/mean"] for h in history if "train/rewards/unlikeliness/mean" in h]
    assert shaping and all(s <= 1e-9 for s in shaping), shaping
    # The base solves E always (H1 sometimes): a group with several correct samples has some that are
    # not its least likely, whose reward the shaping lowers. (On H1/B3 alone the calibrated base's
    # few smoke groups can hold no correct sample at all, and then there is nothing to shape.)
    assert min(shaping) < 0, shaping
    assert any("train/entropy_coef" in h for h in history) == (algo == "grpo")
