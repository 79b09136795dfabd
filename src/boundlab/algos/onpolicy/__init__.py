"""On-policy RL that TRL 1.16 lacks: PPO, REINFORCE++, REINFORCE++-baseline, ReMax and DAPO, and the
remedies of issue 14: Pass@k Training (passk_grpo), Weighted-REINFORCE and NSR, and GRPO itself
(grpo_onpolicy: the remedies' reference on the same trainer, token-level loss).

One `transformers.Trainer` subclass, `OnPolicyTrainer` (trainer.py), serves them all; their knobs
are the `algo.onpolicy` block (boundlab.config.OnPolicyConfig). The algorithms differ only in
how advantages are estimated, so an advantage-estimator registry (`ADV_ESTIMATORS`, in the spirit of
verl's `register_adv_est`) picks the algorithm; `RECIPES` says what else each one needs (a critic, a
greedy baseline rollout, where KL goes by default). All math lives in `objectives.py`.

The package, by idea: `settings.py` (recipes, and the settings read and checked once from the config),
`rollouts.py` (a round of completions, and the sampler that makes each batch one round),
`advantages.py` (the estimators by name), `critic.py` (PPO's value model and its checkpoints),
`trainer.py` (the Trainer subclass); this file builds the trainer and declares the algorithms.

HF Trainer keeps its own loop: optimizer, scheduler, gradient accumulation, clipping, checkpoints,
callbacks (so ProbeCallback probes every checkpoint), logging, accelerate/DeepSpeed. We override:
- `get_train_dataloader`: each batch is a *round* of prompts (this process's share), repeated once
  per micro-step of the round, so HF's step and epoch accounting stay exact;
- `training_step`: at the first micro-step of a round, generate every rollout of the round, score it
  and compute advantages, and buffer it; each micro-step then trains on one slice of the buffer;
- `compute_loss`: the clipped policy loss (+ KL in the loss, + PPO's clipped value loss);
- `save_model`/`train`: PPO's critic is saved in `checkpoint-N/critic/` and restored on resume,
  while the policy stays at the checkpoint root, loadable by `AutoModelForCausalLM.from_pretrained`;
- `create_optimizer` (critic learning rate) and `log` (our metrics merged into HF's log rows).

A round is `per_device_train_batch_size * gradient_accumulation_steps` completions per process
(`per_device_train_batch_size / rollouts` prompts per micro-step), used for `num_iterations` optimizer
steps (PPO epochs), one per pass over the round: the minibatch is the whole round. Losses are
normalised by the round's token (or sequence) count, so accumulated micro-batch gradients equal the
round's loss exactly (`loss_is_scaled_for_ga`).

Departures from the papers, and why:
- PPO's critic is a copy of the policy's backbone with a zero-initialised scalar head (a fresh head
  predicting 0 everywhere is a sane prior for 0/1 rewards), or a separate value model
  (`algo.onpolicy.critic.model`). Policy and critic are one module (`PolicyWithCritic`) with one
  optimizer, so
  accelerate/DeepSpeed prepare a single engine; their gradients are clipped together.
- Advantages of PPO are whitened over the batch's valid tokens (as in verl and OpenRLHF).
- All log-probabilities are of logits divided by the sampling temperature, the distribution the
  rollouts came from.
- Dropout is switched off in the policy and critic, so rollout-time and training-time
  log-probabilities agree (ratio 1 on the first PPO epoch).
- DAPO's dynamic sampling filters on the summed reward-function score *before* overlong shaping
  (the paper's accuracy filter), refills with fresh prompts for at most
  `algo.onpolicy.max_refill_rounds` rounds,
  then trains on the groups it has (fewer than the batch, never padded with zero-advantage groups).
- ReMax's greedy rollout is scored with the same overlong shaping as the samples it baselines.
- A run resumed from a checkpoint starts a fresh round: rollouts buffered before the kill are not
  in checkpoints.
- `algo.entropy_coef` subtracts coef * the token entropy, aggregated like the policy loss
  (`loss_type`), where TRL's GRPO always takes the token mean; `algo.shaping.unlikeliness` ranks
  by the rollout policy's mean token log-prob, as the authors' release does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn
from transformers import TrainingArguments

from boundlab.algos.onpolicy.advantages import ADV_ESTIMATORS
from boundlab.algos.onpolicy.critic import CRITIC_DIR, PolicyWithCritic, build_critic, load_critic
from boundlab.algos.onpolicy.rollouts import Rollouts, RoundSampler
from boundlab.algos.onpolicy.settings import RECIPES, OnPolicySettings, Recipe, settings_from_cfg
from boundlab.algos.onpolicy.trainer import OnPolicyTrainer
from boundlab.algos.spec import Algorithm, BuildInputs, training_args_common
from boundlab.config import ConfigError

if TYPE_CHECKING:
    from boundlab.config import TrainMain

__all__ = ["ADV_ESTIMATORS", "CRITIC_DIR", "RECIPES", "OnPolicySettings", "OnPolicyTrainer",
           "PolicyWithCritic", "Recipe", "Rollouts", "RoundSampler", "build_critic", "build_onpolicy",
           "load_critic", "load_reference", "settings_from_cfg", "PPO", "REINFORCE_PP",
           "REINFORCE_PP_BASELINE", "REMAX", "DAPO", "GRPO_ONPOLICY", "PASSK_GRPO",
           "WEIGHTED_REINFORCE", "NSR", "PKPO"]


def load_reference(cfg: TrainMain) -> nn.Module:
    """The frozen KL reference: `kl.reference`, else the base model (`model.path`)."""
    from boundlab.models import load_model, resolve_model_path

    path = cfg.kl.reference or resolve_model_path(cfg.model)
    return load_model(cfg.model, "cpu" if cfg.backend.use_cpu else "cuda", path)



def build_onpolicy(name: str, x: BuildInputs) -> OnPolicyTrainer:
    cfg, model = x.cfg, x.model
    settings = settings_from_cfg(name, cfg)
    if x.peft_config is not None:
        if settings.critic:
            raise ConfigError(f"algo={name} with peft.enabled: LoRA checkpoints with a critic are not "
                             f"supported; train all weights (peft.enabled=false)")
        from peft import get_peft_model

        model = get_peft_model(model, x.peft_config)
    # kl.coef == 0 loads no reference model at all.
    ref = load_reference(cfg) if settings.kl_where != "none" else None
    critic = build_critic(cfg, model) if settings.critic else None
    args = TrainingArguments(**training_args_common(cfg, x.output_dir, x.report_to),
                             remove_unused_columns=False)
    return OnPolicyTrainer(model=model, args=args, processing_class=x.tokenizer, train_dataset=x.dataset,
                           reward_funcs=x.reward_funcs, settings=settings, callbacks=x.callbacks,
                           ref_model=ref, critic=critic)


def _algorithm(name: str) -> Algorithm:
    """One algorithm this trainer implements: its recipe (RECIPES) picks the estimator; its start-up
    check is `settings_from_cfg` itself, so what is refused at start is what the build would refuse."""

    def build(x: BuildInputs) -> OnPolicyTrainer:
        return build_onpolicy(name, x)

    def check(cfg: TrainMain) -> None:
        settings_from_cfg(name, cfg)

    build.__name__ = f"build_{name}"
    return Algorithm(name, "onpolicy", build, (check,))


PPO = _algorithm("ppo")
REINFORCE_PP = _algorithm("reinforce_pp")
REINFORCE_PP_BASELINE = _algorithm("reinforce_pp_baseline")
REMAX = _algorithm("remax")
DAPO = _algorithm("dapo")
GRPO_ONPOLICY = _algorithm("grpo_onpolicy")
PASSK_GRPO = _algorithm("passk_grpo")
WEIGHTED_REINFORCE = _algorithm("weighted_reinforce")
NSR = _algorithm("nsr")
PKPO = _algorithm("pkpo")
