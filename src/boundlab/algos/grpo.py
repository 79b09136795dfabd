"""GRPO, Dr. GRPO and RLOO through TRL's own trainers.

The reward is the task's verifier (1 for a correct final answer, else 0), exactly what the probe
counts. Departures from TRL's defaults, and why:
- `loss_type="grpo"` (per-sequence mean, then batch mean), the objective of the GRPO paper;
  `dapo`/`dr_grpo` stay one override away.
- `kl.coef=0` by default, as in DAPO and Dr. GRPO; with 0 TRL loads no reference model.
- `learning_rate=2e-4`: TRL's 1e-6 barely moves a 1M-parameter model trained from scratch.
"""

from __future__ import annotations

from typing import Any

from boundlab.algos import ALGOS
from boundlab.config import ConfigError


def training_args_common(cfg: Any, output_dir: str, report_to: list[str]) -> dict[str, Any]:
    """Arguments every TRL config takes the same way, from the train/backend/algo groups."""
    a, b, t = cfg.algo, cfg.backend, cfg.train
    kw: dict[str, Any] = dict(
        output_dir=output_dir,
        max_steps=t.max_steps,
        save_strategy="steps",
        save_steps=t.save_steps,
        # BoundLab rotates (training/checkpoints.rotate, from the probe callback): HF would delete
        # checkpoints inside its save, before the callback could probe or hand them on.
        save_total_limit=None,
        logging_steps=t.logging_steps,
        seed=t.seed,
        learning_rate=a.learning_rate,
        per_device_train_batch_size=a.per_device_train_batch_size,
        gradient_accumulation_steps=a.gradient_accumulation_steps,
        weight_decay=a.weight_decay,
        warmup_steps=a.warmup_steps,
        max_grad_norm=a.max_grad_norm,
        lr_scheduler_type=a.lr_scheduler_type,
        use_cpu=b.use_cpu,
        bf16=b.bf16,
        gradient_checkpointing=b.gradient_checkpointing,
        report_to=report_to,
        disable_tqdm=False,
        save_only_model=False,
    )
    if b.deepspeed:
        kw["deepspeed"] = b.deepspeed
    if b.ddp_backend:
        kw["ddp_backend"] = b.ddp_backend
    return kw


def _check_batch(a: Any) -> None:
    if a.per_device_train_batch_size % a.rollouts:
        raise ConfigError(f"algo.per_device_train_batch_size ({a.per_device_train_batch_size}) must be "
                         f"a multiple of algo.rollouts ({a.rollouts})")


def check_grpo(cfg: Any) -> None:
    a, kl = cfg.algo, cfg.kl
    if a.rollouts < 2:
        # TRL would fail only after the models are loaded; with one rollout every group-normalised
        # advantage is 0, so nothing could be learned anyway.
        raise ConfigError(f"algo={a.name} normalises each reward within the group of rollouts of its "
                          f"prompt, so algo.rollouts must be >= 2 (got {a.rollouts})")
    _check_batch(a)
    if kl.coef > 0 and (kl.where not in ("auto", "loss") or kl.estimator not in ("auto", "k3")):
        raise ConfigError(f"algo={a.name} puts KL in the loss with the k3 estimator (TRL GRPOTrainer); "
                          f"kl.where={kl.where} kl.estimator={kl.estimator} is not available")


def check_rloo(cfg: Any) -> None:
    a, kl = cfg.algo, cfg.kl
    _check_batch(a)
    if a.rollouts < 2:
        raise ConfigError("algo=rloo needs algo.rollouts >= 2 (the baseline leaves one sample out)")
    if kl.coef > 0 and (kl.where not in ("auto", "reward") or kl.estimator not in ("auto", "k1")):
        raise ConfigError(f"algo=rloo puts KL in the reward with the k1 estimator (TRL RLOOTrainer); "
                          f"kl.where={kl.where} kl.estimator={kl.estimator} is not available")


def _rl_args(cfg: Any) -> dict[str, Any]:
    """Arguments GRPOConfig and RLOOConfig take alike: rollouts, KL, clipping, sampling."""
    a, kl = cfg.algo, cfg.kl
    return dict(
        num_generations=a.rollouts,
        beta=kl.coef if kl.where != "none" else 0.0,
        epsilon=a.epsilon,
        epsilon_high=a.epsilon_high if a.epsilon_high is not None else a.epsilon,
        num_iterations=a.num_iterations,
        max_completion_length=a.max_completion_length,
        temperature=a.temperature,
        top_p=1.0,
        top_k=0,
    )


def _grpo_family(cfg: Any, model: Any, tokenizer: Any, train_dataset: Any, reward_funcs: list,
                 callbacks: list, output_dir: str, report_to: list[str], peft_config: Any,
                 loss_type: str, scale_rewards: str):
    from trl import GRPOConfig, GRPOTrainer

    check_grpo(cfg)
    args = GRPOConfig(**training_args_common(cfg, output_dir, report_to), **_rl_args(cfg),
                      loss_type=loss_type, scale_rewards=scale_rewards)
    return GRPOTrainer(model=model, reward_funcs=reward_funcs, args=args, train_dataset=train_dataset,
                       processing_class=tokenizer, callbacks=callbacks, peft_config=peft_config)


@ALGOS.register("grpo")
def build_grpo(cfg: Any, model: Any, tokenizer: Any, train_dataset: Any, reward_funcs: list,
               callbacks: list, output_dir: str, report_to: list[str], peft_config: Any = None):
    return _grpo_family(cfg, model, tokenizer, train_dataset, reward_funcs, callbacks, output_dir,
                        report_to, peft_config, cfg.algo.loss_type, cfg.algo.scale_rewards)


@ALGOS.register("dr_grpo")
def build_dr_grpo(cfg: Any, model: Any, tokenizer: Any, train_dataset: Any, reward_funcs: list,
                  callbacks: list, output_dir: str, report_to: list[str], peft_config: Any = None):
    """Dr. GRPO (Liu et al. 2025): no length normalisation (TRL loss_type=dr_grpo divides by a
    constant) and no std scaling of rewards, the two biases the paper removes."""
    return _grpo_family(cfg, model, tokenizer, train_dataset, reward_funcs, callbacks, output_dir,
                        report_to, peft_config, "dr_grpo", "none")


@ALGOS.register("rloo")
def build_rloo(cfg: Any, model: Any, tokenizer: Any, train_dataset: Any, reward_funcs: list,
               callbacks: list, output_dir: str, report_to: list[str], peft_config: Any = None):
    """RLOO through TRL's RLOOTrainer: leave-one-out baseline; TRL puts the KL in the reward with
    the k1 estimator, so that is the only placement offered."""
    from trl import RLOOConfig, RLOOTrainer

    check_rloo(cfg)
    args = RLOOConfig(**training_args_common(cfg, output_dir, report_to), **_rl_args(cfg))
    return RLOOTrainer(model=model, reward_funcs=reward_funcs, args=args, train_dataset=train_dataset,
                       processing_class=tokenizer, callbacks=callbacks, peft_config=peft_config)


build_grpo.check = check_grpo  # type: ignore[attr-defined]
build_dr_grpo.check = check_grpo  # type: ignore[attr-defined]
build_rloo.check = check_rloo  # type: ignore[attr-defined]
