"""Experiment tracking: W&B runs (online or offline), the no-op logger, metric names, offline reader.

    from boundlab.tracking import build_logger
    with build_logger(cfg.logger, run_dir, run_config) as logger:   # finishes the run on exit
        logger.define_step_metric("probe", "probe/step")
        logger.log({"probe/pass@1": 0.25, "probe/step": 10})

    run = read_offline_run(run_dir)   # history / config / summary of the offline run files

Plots live in their own package, `boundlab.plots` (it imports matplotlib). `wandb` is
imported only when a W&B logger is built or a run file is read: `import boundlab.tracking` is cheap.
"""

from boundlab.tracking.logger import (
    NoneLogger,
    RunLogger,
    WandbLogger,
    build_logger,
    has_wandb_credentials,
    resolve_mode,
)
from boundlab.tracking.names import PROBE_STEP, TRAIN_STEP, metric_key, passk_key
from boundlab.tracking.reader import OfflineRun, read_offline_run

__all__ = [
    "NoneLogger",
    "OfflineRun",
    "PROBE_STEP",
    "RunLogger",
    "TRAIN_STEP",
    "WandbLogger",
    "build_logger",
    "has_wandb_credentials",
    "metric_key",
    "passk_key",
    "read_offline_run",
    "resolve_mode",
]

