"""The typed schema of `report.py` (`conf/report.yaml`).

Kept free of heavy imports: `boundlab.config.register_configs()` imports it on every entry point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from boundlab.config import LoggerConfig, StoreConfig, TaskConfig


@dataclass
class PerplexityConfig:
    # Score responses with the base model (the only model work the report does); false skips it.
    enabled: bool = True
    # Responses drawn per group (base, each model, the teacher), at random without replacement.
    samples: int = 64
    # Seed of that draw: the same seed draws the same responses.
    seed: int = 0
    # Only correct responses (the paper's comparison); false draws from all responses.
    only_correct: bool = True
    # The scoring model folder; null = the base's own (its run's model config, or the probe's
    # meta.path in the store).
    model_path: Optional[str] = None
    # auto (cuda when visible), cpu or cuda.
    device: str = "auto"
    # torch dtype for the scoring model: auto (float32 on CPU), float32, bfloat16, float16.
    dtype: str = "auto"
    # Most (padded) tokens per forward pass; bounds memory on long responses.
    batch_tokens: int = 4096
    # torch intra-op threads on CPU; null = one per core.
    torch_threads: Optional[int] = None


@dataclass
class ReportMain:
    # The reference model: a training run dir (its base probe), a sweep dir (the base its runs
    # share), a probe key (or a unique prefix of one, 6+ characters) or a model name in the store.
    base: Optional[str] = None
    # Models to set against the base: probe keys, model names in the store, or run dirs (their
    # final checkpoint).
    models: list[str] = field(default_factory=list)
    # Training run dirs: each adds its final checkpoint as a model, its checkpoint series to the
    # progression section and a row to the algorithm comparison.
    runs: list[str] = field(default_factory=list)
    # Sweep dirs (outputs/sweeps/<name>): every run dir inside is added to `runs`.
    sweeps: list[str] = field(default_factory=list)
    # A teacher probe (key, name or run dir) whose correct responses form a third perplexity group.
    teacher: Optional[str] = None
    # The report folder: report.md, its PNG figures and a CSV for every table.
    out: str = "outputs/report/report"
    # Use at most this many samples per problem (the first n by index); null = all stored.
    n: Optional[int] = None
    # The k of the sampling-efficiency gap dSE = pass@1(model) - pass@k(base); n when n < k.
    dse_k: int = 256
    # Bootstrap resamples (over problems) for every confidence interval, and their level.
    bootstrap_iters: int = 1000
    # Resamples for every Δ interval a verdict reads (the remedies mark, the seed-level intervals;
    # issue 40: at least 10,000); the seed-level table is exact where it can be enumerated.
    delta_bootstrap_iters: int = 10000
    ci: float = 0.95
    # Seed of every bootstrap.
    seed: int = 0
    # Case studies shown in report.md (all of them go to case_studies.csv).
    case_studies: int = 5
    # Cut the base trace printed in a case study at this many characters (the CSV keeps it
    # whole); null = print it whole.
    trace_chars: Optional[int] = None
    # Problem.meta fields to break results down by; null = those the task tags (hard, level,
    # subject, difficulty, type, platform).
    breakdown: Optional[list[str]] = None
    # Problem ids listed in report.md per coverage cell (all of them go to the CSV).
    list_ids: int = 20
    # The task, when it cannot be rebuilt from a run's config or the store (task=math500 ...);
    # null = from the base's run config, else from the task's name in the store.
    task: Optional[TaskConfig] = None
    perplexity: PerplexityConfig = field(default_factory=PerplexityConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
