"""Schemas of what training reads: KL, the algorithm and its typed blocks, the backend, the
rollouts, PEFT, the training loop, and train.py's main config (a probing config plus these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from boundlab.config.probing import ModelConfig, ProbingMain


@dataclass
class KLConfig:
    # KL penalty coefficient to the reference model; 0 loads no reference model at all.
    coef: float = 0.0
    # auto (the algorithm's own placement), none, loss (a KL term in the loss) or reward
    # (subtracted from the token rewards).
    where: str = "auto"
    # auto (the algorithm's own), k1 = log(p/q), k2 = (log(p/q))^2 / 2, k3 = q/p - 1 - log(q/p)
    # (Schulman's estimators; p the policy, q the reference).
    estimator: str = "auto"
    # Reference model folder; null = the base model (model.path).
    reference: Optional[str] = None


@dataclass
class CriticConfig:
    # Value model folder; null = a value head on a copy of the policy's backbone.
    model: Optional[str] = None
    # Critic learning rate (null = the policy's).
    learning_rate: Optional[float] = None


@dataclass
class PolicyGradientConfig:
    """The clipped policy-gradient knobs both RL families read (each from its own block)."""
    # Loss aggregation, by TRL's names: grpo (per-sequence mean, then batch mean), dapo (token-level
    # mean), dr_grpo, bnpo.
    loss_type: str = "grpo"
    # Reward scaling: group (divide by group std), batch, none.
    scale_rewards: str = "group"
    # PPO-style clip range; epsilon_high (DAPO's clip-higher) defaults to epsilon when null.
    epsilon: float = 0.2
    # DAPO's clip-higher upper clip range; null = epsilon.
    epsilon_high: Optional[float] = None
    # Policy updates per generated batch (PPO epochs).
    num_iterations: int = 1


@dataclass
class GRPOFamilyConfig(PolicyGradientConfig):
    """`algo.grpo`: read by grpo, dr_grpo and rloo (TRL's GRPOTrainer and RLOOTrainer)."""


@dataclass
class OnPolicyConfig(PolicyGradientConfig):
    """`algo.onpolicy`: read by ppo, reinforce_pp, reinforce_pp_baseline, remax, dapo, passk_grpo,
    weighted_reinforce, nsr and pkpo (boundlab's OnPolicyTrainer)."""
    # DAPO: drop groups whose rewards are all equal and refill the batch with groups that carry signal.
    dynamic_sampling: bool = False
    # DAPO: most extra generation rounds spent refilling the batch after dynamic sampling; then it
    # trains on the groups it has.
    max_refill_rounds: int = 4
    # DAPO overlong shaping: a linear penalty over the last `overlong_buffer` tokens before the limit.
    overlong_buffer: int = 0
    # DAPO overlong shaping: the penalty reached at the length limit.
    overlong_penalty: float = 1.0
    # PPO: GAE discount and trace decay. gamma=1 (no discounting within an episode, reward at the end),
    # lam=0.95 trades a little bias for much lower variance than lam=1.
    gamma: float = 1.0
    # PPO: GAE trace decay (see gamma above).
    lam: float = 0.95
    # PPO: value loss weight and value clip range.
    vf_coef: float = 0.1
    # PPO: value clip range.
    cliprange_value: float = 0.2
    # PPO: the learned value model.
    critic: CriticConfig = field(default_factory=CriticConfig)
    # passk_grpo: k of the group's pass@k reward (1 <= k < algo.rollouts: at k = rollouts no signal).
    passk_k: int = 4
    # pkpo: k at the last step, annealed linearly from passk_k (None: k stays passk_k).
    passk_k_final: Optional[int] = None
    # weighted_reinforce: the weight of correct samples (wrong ones get -1); 0 = pure NSR (algo=nsr).
    positive_weight: float = 0.1


@dataclass
class DistillConfig:
    """`algo.distill`: read by sft_distill and onpolicy_distill."""
    # Teacher samples per training problem, and the most verified, distinct traces kept per problem
    # (rejection sampling, then de-duplication, then the cap). sft_distill only.
    teacher_samples: int = 8
    # Distillation: most verified, distinct traces kept per problem (see teacher_samples).
    max_traces_per_problem: int = 4
    # Sampling temperature of the teacher when it writes traces. sft_distill only.
    teacher_temperature: float = 1.0
    # onpolicy_distill: TRL's generalised JSD interpolation (0 forward KL, 1 reverse KL).
    beta: float = 1.0


@dataclass
class ShapingConfig:
    """`algo.shaping`: reward shaping any group algorithm can take (grpo, dr_grpo, rloo, dapo,
    reinforce_pp_baseline; boundlab.algos.shaping)."""
    # Unlikeliness reward (He et al. 2025): a correct sample's reward times 1 - beta * rank / G, rank 0
    # the least likely of its group of G by mean token log-prob; beta in [0, 1], 0 = off.
    unlikeliness: float = 0.0


@dataclass
class AlgoConfig:
    """Knobs every algorithm reads at `algo.*`; each family reads its own block below. Every block is
    present whatever the algorithm (so one `debug`/`experiment` file can set any of them); the
    algorithm's `family` (boundlab.algos) says which block it reads."""
    # Registry name: grpo, dr_grpo, dapo, rloo, reinforce_pp, reinforce_pp_baseline, remax, ppo,
    # passk_grpo, pkpo, weighted_reinforce, nsr, grpo_onpolicy, sft_distill, onpolicy_distill.
    name: str = "grpo"
    # Optimizer step size. TRL's GRPO default (1e-6) is far too small for the toy model.
    learning_rate: float = 2e-4
    # Completions sampled per prompt (the paper's rollout count); mapped to each trainer's argument.
    rollouts: int = 8
    # Longest completion during training, in tokens.
    max_completion_length: int = 32
    # Sampling temperature of the rollouts.
    temperature: float = 1.0
    # Completions per device per optimizer step (a multiple of rollouts).
    per_device_train_batch_size: int = 32
    # Batches accumulated per optimizer step.
    gradient_accumulation_steps: int = 1
    # AdamW weight decay.
    weight_decay: float = 0.0
    # Learning-rate warmup steps.
    warmup_steps: int = 0
    # Gradient clipping norm.
    max_grad_norm: float = 1.0
    # Learning-rate schedule (HF names: constant, linear, cosine, ...).
    lr_scheduler_type: str = "constant"
    # Entropy bonus: loss - entropy_coef * mean token entropy of the completions (0 = off; TRL's
    # GRPOConfig.entropy_coef on grpo/dr_grpo, our trainer's loss on the on-policy algorithms).
    entropy_coef: float = 0.0
    # Reward shaping for group algorithms (the unlikeliness reward).
    shaping: ShapingConfig = field(default_factory=ShapingConfig)
    # TRL GRPO family (grpo, dr_grpo, rloo).
    grpo: GRPOFamilyConfig = field(default_factory=GRPOFamilyConfig)
    # boundlab's on-policy trainer (ppo, reinforce_pp, reinforce_pp_baseline, remax, dapo).
    onpolicy: OnPolicyConfig = field(default_factory=OnPolicyConfig)
    # Distillation (sft_distill, onpolicy_distill).
    distill: DistillConfig = field(default_factory=DistillConfig)


# Run dirs written before the family blocks existed hold these knobs flat under `algo:`; where each
# one lives now (lift_flat_algo_keys). The clipped policy-gradient knobs go to both RL blocks: only the
# algorithm's own block is read, so the copy in the other one is inert.
_FLAT_ALGO_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    **{k: (("grpo", k), ("onpolicy", k))
       for k in ("loss_type", "scale_rewards", "epsilon", "epsilon_high", "num_iterations")},
    **{k: (("onpolicy", k),) for k in ("dynamic_sampling", "max_refill_rounds", "overlong_buffer",
                                        "overlong_penalty", "gamma", "lam", "vf_coef", "cliprange_value",
                                        "critic")},
    **{k: (("distill", k),) for k in ("teacher_samples", "max_traces_per_problem", "teacher_temperature")},
    "distill_beta": (("distill", "beta"),),
}


def lift_flat_algo_keys(saved: Any) -> Any:
    """A saved train config (`.hydra/config.yaml`, a DictConfig) with the family knobs moved from
    `algo.*` into their blocks, so a run started before the blocks existed can still be resumed with
    the same settings. A config already in blocks comes back unchanged."""
    from omegaconf import OmegaConf

    algo = saved.get("algo") if hasattr(saved, "get") else None
    if algo is None or not any(k in algo for k in _FLAT_ALGO_KEYS):
        return saved
    data = OmegaConf.to_container(saved, resolve=False)
    flat = data["algo"]
    for key, targets in _FLAT_ALGO_KEYS.items():
        if key in flat:
            value = flat.pop(key)
            for block, name in targets:
                flat.setdefault(block, {})[name] = value
    return OmegaConf.create(data)


@dataclass
class BackendConfig:
    # cpu, gpu, zero2, zero3.
    name: str = "cpu"
    # Force the CPU even when a GPU is visible.
    use_cpu: bool = True
    # bf16 mixed precision (GPUs only; TRL turns it on by default, which fails on CPU).
    bf16: bool = False
    # DeepSpeed JSON config (ZeRO-2/3), used when launched with `accelerate launch`.
    deepspeed: Optional[str] = None
    # torch.distributed backend: null (auto), nccl, gloo (CPU multi-process).
    ddp_backend: Optional[str] = None
    # Trade compute for memory on large models.
    gradient_checkpointing: bool = False
    # torch intra-op threads on CPU; null = one per core.
    torch_threads: Optional[int] = None


@dataclass
class RolloutConfig:
    """`rollout`: the engine that samples training rollouts (boundlab.algos.rollout)."""
    # hf (the trainer's own generate), vllm_colocate (vLLM in each training process, sharing its
    # GPU) or vllm_server (a `trl vllm-serve` process on other GPUs or another node).
    name: str = "hf"
    # vllm_colocate: fraction of each training GPU's memory vLLM takes for weights and KV cache.
    gpu_memory_utilization: float = 0.3
    # vllm_colocate: tensor-parallel degree of the colocated engine (the server sets its own).
    tensor_parallel_size: int = 1
    # Context window (prompt + completion) vLLM reserves; null = the model config's.
    max_model_length: Optional[int] = None
    # vllm_colocate: offload vLLM's weights and KV cache during the optimizer step.
    enable_sleep_mode: bool = False
    # vllm_server: the host running `trl vllm-serve` (ignored when base_url is set).
    host: str = "localhost"
    # vllm_server: its HTTP port (`trl vllm-serve --port`).
    port: int = 8000
    # vllm_server: a full URL (http://node:8000) instead of host and port; null = use those.
    base_url: Optional[str] = None
    # vllm_server: seconds to wait for the server to come up before failing.
    timeout_s: float = 240.0
    # vllm_server: port of the NCCL group that pushes new weights to the server each step.
    group_port: int = 51216


@dataclass
class PeftConfig:
    # Train LoRA adapters instead of all weights (large models).
    enabled: bool = False
    # LoRA rank.
    r: int = 16
    # LoRA scaling alpha.
    alpha: int = 32
    # LoRA dropout.
    dropout: float = 0.05
    # Module names to adapt; "all-linear" adapts every linear layer.
    target_modules: str = "all-linear"


@dataclass
class OutcomeBonusConfig:
    """`reward.outcome_bonus`: outcome-based exploration (Song et al. 2025, arXiv 2509.06941;
    boundlab.training.outcome). Both 0 = off (the default: rewards unchanged)."""
    # Historical (UCB) bonus: a completion whose final answer `a` to problem `x` was seen N(x, a) times
    # in earlier reward calls gets ucb_coef / sqrt(1 + N(x, a)); the counts are saved with checkpoints.
    ucb_coef: float = 0.0
    # Batch penalty: a completion whose answer m of the G completions of its group share gets
    # - repeat_penalty * (m - 1) / (G - 1).
    repeat_penalty: float = 0.0


@dataclass
class RewardConfig:
    """`reward`: what the training reward pays for (boundlab.training.rewards). The defaults are the
    probe's own pass: 1 for a right answer."""
    # 1 only for a right answer reached by the canonical trace (the toy worlds' strict pass, the
    # headline there); needs a verifier that checks traces, else the run fails at start.
    strict: bool = False
    # Drift control: the rewards of each group of rollouts (the completions of one problem in a
    # batch) permuted at random, seeded by train.seed and the group's completions, so the reward
    # carries no information about which completion is right while every update keeps its size.
    shuffle_within_group: bool = False
    # Exploration bonuses on the final answer (UCB over answers seen so far, a penalty for answers
    # repeated within a group); 0 = off.
    outcome_bonus: OutcomeBonusConfig = field(default_factory=OutcomeBonusConfig)


@dataclass
class DataConfig:
    """`data`: which training problems each step draws from (boundlab.training.gate)."""
    # none (the whole split), zero_success (problems with no success in the last gate probe) or
    # low_likelihood (the gate_fraction of problems with the lowest success rate in that probe). The
    # gate probe samples the training split with the policy at the start and at every save.
    gate: str = "none"
    # Completions per training problem in each gate probe.
    gate_samples: int = 8
    # low_likelihood: the share of the training problems kept, in (0, 1].
    gate_fraction: float = 0.5


@dataclass
class TrainLoop:
    # Optimizer steps in total.
    max_steps: int = 300
    # Save (and so probe) a checkpoint every this many steps.
    save_steps: int = 75
    # Log training metrics every this many steps.
    logging_steps: int = 5
    # Seed for data order, rollouts and initialisation of any new heads.
    seed: int = 0
    # Keep at most this many checkpoints on disk (null = all). Only probed checkpoints are deleted:
    # with detached probing, unprobed ones stay until the watcher has probed them.
    save_total_limit: Optional[int] = None
    # inline: probe each checkpoint in the training process (training waits);
    # detached: only record it, for a `python probe.py watch=RUN_DIR` worker.
    probe_mode: str = "inline"
    # Stop training at the first boundary alarm (a checkpoint's pass@n below the base's beyond
    # chance, on all problems or one group; boundlab.boundary.alarm). The alarm itself always runs.
    stop_on_shrink: bool = False
    # Probe the base model before training (cached in the store across runs).
    probe_base: bool = True
    # Which split of the task to train on (the probe uses task.split).
    train_split: str = "train"
    # Train on the first N problems of that split only (null = all).
    train_limit: Optional[int] = None
    # ProRL's hard reset: every N optimizer steps the KL reference becomes the current policy and the
    # optimizer state is cleared (boundlab.algos.resets; needs kl.coef > 0). 0 = never.
    ref_reset_every: int = 0
    # Start training from these weights instead of the base's: a checkpoint folder or a run dir (its
    # latest complete checkpoint); probes still compare with the base (boundlab.training.init_from).
    init_from: Optional[str] = None
    # Most completions sampled in one generate call (own trainer; null = a whole micro-step's rollouts
    # at once): bounds generation memory at large algo.rollouts (256 per prompt on the toy world).
    generation_chunk: Optional[int] = None


@dataclass
class TrainMain(ProbingMain):
    # The training algorithm and its settings.
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    # The KL penalty to the reference model.
    kl: KLConfig = field(default_factory=KLConfig)
    # What the training reward pays for: answer-only (default), strict, or shuffled (a control).
    reward: RewardConfig = field(default_factory=RewardConfig)
    # Which training problems the steps draw from (none, or a gate on the policy's own probe).
    data: DataConfig = field(default_factory=DataConfig)
    # The teacher for distillation (sft_distill, onpolicy_distill); unused by RL algorithms.
    teacher: ModelConfig = field(default_factory=ModelConfig)
    # Where and how training runs (cpu, gpu, zero2, zero3).
    backend: BackendConfig = field(default_factory=BackendConfig)
    # The engine that samples training rollouts (hf, vllm_colocate, vllm_server).
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    # LoRA adapters instead of full fine-tuning.
    peft: PeftConfig = field(default_factory=PeftConfig)
    # The training loop: steps, saves, probing mode.
    train: TrainLoop = field(default_factory=TrainLoop)
    # Resume this run dir (its latest complete checkpoint, the same W&B run). null = a new run.
    resume: Optional[str] = None
