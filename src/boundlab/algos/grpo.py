"""GRPO, Dr. GRPO and RLOO through TRL's own trainers.

The reward is the task's verifier (1 for a correct final answer, else 0), exactly what the probe
counts. Their knobs are the `algo.grpo` block (boundlab.config.GRPOFamilyConfig).
Departures from TRL's defaults, and why:
- `loss_type="grpo"` (per-sequence mean, then batch mean), the objective of the GRPO paper;
  `dapo`/`dr_grpo` stay one override away.
- `kl.coef=0` by default, as in DAPO and Dr. GRPO; with 0 TRL loads no reference model.
- `learning_rate=2e-4`: TRL's 1e-6 barely moves a 1M-parameter model trained from scratch.
Remedies (issue 14): `algo.entropy_coef` is GRPOConfig's entropy bonus (RLOOConfig has none, so
rloo refuses it); `algo.shaping.unlikeliness` appends the unlikeliness reward (`shaping.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from boundlab.algos.rollout import check_rollout, trl_vllm_args
from boundlab.algos.shaping import with_unlikeliness
from boundlab.algos.spec import Algorithm, BuildInputs, training_args_common
from boundlab.config import ConfigError

if TYPE_CHECKING:
    from boundlab.config import AlgoConfig, TrainMain

__all__ = ["GRPO", "DR_GRPO", "RLOO", "training_args_common"]


def _check_batch(a: AlgoConfig) -> None:
    if a.per_device_train_batch_size % a.rollouts:
        raise ConfigError(f"algo.per_device_train_batch_size ({a.per_device_train_batch_size}) must be "
                         f"a multiple of algo.rollouts ({a.rollouts})")


def check_grpo(cfg: TrainMain) -> None:
    a, kl = cfg.algo, cfg.kl
    if a.rollouts < 2:
        # TRL would fail only after the models are loaded; with one rollout every group-normalised
        # advantage is 0, so nothing could be learned anyway.
        raise ConfigError(f"algo={a.name} normalises each reward within the group of rollouts of its "
                          f"prompt, so algo.rollouts must be >= 2 (got {a.rollouts})")
    _check_batch(a)
    check_rollout(a.name, cfg)
    if kl.coef > 0 and (kl.where not in ("auto", "loss") or kl.estimator not in ("auto", "k3")):
        raise ConfigError(f"algo={a.name} puts KL in the loss with the k3 estimator (TRL GRPOTrainer); "
                          f"kl.where={kl.where} kl.estimator={kl.estimator} is not available")


def check_rloo(cfg: TrainMain) -> None:
    a, kl = cfg.algo, cfg.kl
    _check_batch(a)
    if a.entropy_coef > 0:
        raise ConfigError(f"algo=rloo: TRL's RLOOConfig has no entropy bonus, so algo.entropy_coef="
                          f"{a.entropy_coef} would be ignored; use algo=grpo or dr_grpo (GRPOConfig.entropy_coef)")
    if a.rollouts < 2:
        raise ConfigError("algo=rloo needs algo.rollouts >= 2 (the baseline leaves one sample out)")
    check_rollout(a.name, cfg)
    if kl.coef > 0 and (kl.where not in ("auto", "reward") or kl.estimator not in ("auto", "k1")):
        raise ConfigError(f"algo=rloo puts KL in the reward with the k1 estimator (TRL RLOOTrainer); "
                          f"kl.where={kl.where} kl.estimator={kl.estimator} is not available")


def _rl_args(cfg: TrainMain) -> dict[str, Any]:
    """Arguments GRPOConfig and RLOOConfig take alike: rollouts, KL, clipping, sampling, and the
    rollout engine (`rollout=`: TRL's use_vllm / vllm_mode / vllm_server_* fields)."""
    a, g, kl = cfg.algo, cfg.algo.grpo, cfg.kl
    return dict(
        num_generations=a.rollouts,
        beta=kl.coef if kl.where != "none" else 0.0,
        epsilon=g.epsilon,
        epsilon_high=g.epsilon_high if g.epsilon_high is not None else g.epsilon,
        num_iterations=g.num_iterations,
        max_completion_length=a.max_completion_length,
        temperature=a.temperature,
        top_p=1.0,
        top_k=0,
        **trl_vllm_args(cfg.rollout),
    )


def _grpo_family(x: BuildInputs, loss_type: str, scale_rewards: str):
    from trl import GRPOConfig, GRPOTrainer

    # TRL's own entropy bonus: loss - entropy_coef * mean token entropy (the static form; its
    # adaptive form, use_adaptive_entropy, is not exposed).
    args = GRPOConfig(**training_args_common(x.cfg, x.output_dir, x.report_to), **_rl_args(x.cfg),
                      loss_type=loss_type, scale_rewards=scale_rewards, entropy_coef=x.cfg.algo.entropy_coef)
    return _shaped_trainer(GRPOTrainer, x, args)


def _shaped_trainer(trainer_cls, x: BuildInputs, args):
    """A TRL trainer on the task's reward functions, with the unlikeliness reward appended and bound
    to it when algo.shaping.unlikeliness is set."""
    funcs, shaper = with_unlikeliness(x.cfg.algo, x.reward_funcs)
    trainer = trainer_cls(model=x.model, reward_funcs=funcs, args=args, train_dataset=x.dataset,
                          processing_class=x.tokenizer, callbacks=x.callbacks, peft_config=x.peft_config)
    if shaper is not None:
        shaper.bind(trainer)
    return trainer


def build_grpo(x: BuildInputs):
    g = x.cfg.algo.grpo
    return _grpo_family(x, g.loss_type, g.scale_rewards)


def build_dr_grpo(x: BuildInputs):
    """Dr. GRPO (Liu et al. 2025): no length normalisation (TRL loss_type=dr_grpo divides by a
    constant) and no std scaling of rewards, the two biases the paper removes."""
    return _grpo_family(x, "dr_grpo", "none")


def build_rloo(x: BuildInputs):
    """RLOO through TRL's RLOOTrainer: leave-one-out baseline; TRL puts the KL in the reward with
    the k1 estimator, so that is the only placement offered."""
    from trl import RLOOConfig, RLOOTrainer

    args = RLOOConfig(**training_args_common(x.cfg, x.output_dir, x.report_to), **_rl_args(x.cfg))
    return _shaped_trainer(RLOOTrainer, x, args)


GRPO = Algorithm("grpo", "grpo", build_grpo, (check_grpo,), images=True)
DR_GRPO = Algorithm("dr_grpo", "grpo", build_dr_grpo, (check_grpo,), images=True)
RLOO = Algorithm("rloo", "grpo", build_rloo, (check_rloo,))
