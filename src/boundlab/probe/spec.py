"""What a probe is asked to do, as one typed value: the `ProbeSpec`, built once from the `probe`
config group and handed to the boundary tracker (training and the detached watcher build it the same
way), plus the two things every probing entry point needs before it samples: the probed task (the
task group cut to `probe.limit`) and the torch thread count.

`ProbeSpec` holds only what changes what is sampled and how it is summarised (n, generation
settings, seed, bootstrap iterations, CI level), plus `keep_text`, which changes only which texts the
store keeps; it is not the store's probe key, which the runner derives from these (not keep_text)
plus the model, task and verifier identities.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from boundlab.config import ProbeSettings, ProbingMain, as_typed
from boundlab.probe.adaptive import AdaptivePlan
from boundlab.sampling.base import GenSettings
from boundlab.tasks import Task, build_task


@dataclass(frozen=True)
class ProbeSpec:
    n: int
    gen: GenSettings
    seed: int
    bootstrap_iters: int = 1000
    ci: float = 0.95
    # The base-vs-base null's sampling seed, seed + probe.null_seed_offset (None: no null probe).
    # The seed is part of the store's probe key, so the null never reads back the base's samples.
    null_seed: int | None = None
    # Adaptive probing (probe.adaptive=true); None: every problem gets n samples.
    adaptive: AdaptivePlan | None = None
    # probe.keep_text: all, or compact (boundlab.probe.store); not part of the probe key.
    keep_text: str = "all"
    # G-Pass@k's tau for the views (boundlab.probe.views); not part of the probe key.
    gpass_tau: float = 0.5
    # Base samples per problem the KL(base || model) view scores (0: off); not part of the probe key.
    kl_samples: int = 8

    @classmethod
    def from_config(cls, probe_cfg: ProbeSettings | Any) -> "ProbeSpec":
        """From the `probe` config group (validated before: see boundlab.validate): a
        `ProbeSettings`, or what `as_typed` turns into one (a DictConfig; a run's saved config,
        whose fields added since take their defaults)."""
        p = as_typed(probe_cfg, ProbeSettings)
        return cls(n=int(p.n), gen=gen_settings(p), seed=int(p.seed),
                   bootstrap_iters=int(p.bootstrap_iters), ci=float(p.ci),
                   null_seed=None if p.null_seed_offset is None else int(p.seed) + int(p.null_seed_offset),
                   adaptive=AdaptivePlan.from_config(p), keep_text=str(p.keep_text),
                   gpass_tau=float(p.gpass_tau), kl_samples=int(p.kl_samples))


def gen_settings(p: ProbeSettings) -> GenSettings:
    return GenSettings(temperature=p.temperature, top_p=p.top_p, max_new_tokens=p.max_new_tokens,
                       stop=tuple(p.stop))


def load_task(cfg: ProbingMain) -> Task:
    """The probed task: the `task` group cut to `probe.limit` (`cfg` typed, or the DictConfig
    the watcher holds)."""
    task = build_task(cfg.task)
    if cfg.probe.limit:
        task = task.with_problems(task.problems[: cfg.probe.limit])
    return task


def set_threads(n: int | None) -> int:
    """One intra-op thread per core: oversubscribing two cores is far slower than using one."""
    import torch

    n = n or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    torch.set_num_threads(n)
    return n
