"""The entry layer's run functions: what `train.py` and `probe.py` call after Hydra composed the
config. They live here, above every other package, because `probe.py watch=RUN_DIR` runs the
boundary loop (boundlab.boundary), which sits above probing (boundlab.probe): the probe package
must not import its own caller.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

import boundlab.builtins  # noqa: F401 - every built-in task, verifier, sampler and algorithm
from boundlab.config import ProbeMain, TrainMain


def probe_run(cfg: ProbeMain, run_dir: str | Path) -> Any:
    """`probe.py`: probe one model, or with `watch=RUN_DIR` probe a training run's checkpoints."""
    if cfg.watch:
        from boundlab.boundary.watch import watch
        from boundlab.rundir.lock import watcher_lock

        Path(run_dir).mkdir(parents=True, exist_ok=True)
        with watcher_lock(cfg.watch):  # one prober per run dir: a second watcher stops here
            return watch(cfg.watch, cfg.watch_poll_s, cfg.watch_timeout_s, cfg.sampler,
                         cfg.watch_start_timeout_s)
    from boundlab.probe.app import run

    return run(cfg, run_dir)


def train_run(cfg: DictConfig, run_dir: str | Path) -> dict[str, Any]:
    """`train.py`: train and track the boundary (boundlab.training.app); a SLURM requeue of the job
    that made `run_dir` continues it (boundlab.resume.requeued_job). `cfg` is Hydra's composed
    DictConfig: the requeue check and the job record digest its unresolved text (interpolations such
    as `${now:...}` kept as written); training gets it typed (TrainMain)."""
    from omegaconf import OmegaConf

    from boundlab.config import as_typed
    from boundlab.resume import requeued_job
    from boundlab.training.app import run

    cfg = requeued_job(cfg, run_dir)
    return run(as_typed(cfg, TrainMain), run_dir, config_text=OmegaConf.to_yaml(cfg, resolve=False))
