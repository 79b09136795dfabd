"""Experiment tracking: W&B runs (online or offline), the no-op logger, metric names, segment records.

    from boundlab.tracking import build_logger
    with build_logger(cfg.logger, run_dir, run_config) as logger:   # finishes the run on exit
        logger.define_step_metric("probe", "probe/step")
        logger.log({"probe/pass@1": 0.25, "probe/step": 10})

`boundlab.tracking.segments` records in the run dir what each process logged, which is all a
resume reads. `boundlab.tracking.reader` decodes W&B's offline files (a format private to one W&B
release): tests and checks read back what was logged with it; no library code imports it (an
import-linter contract in pyproject.toml says so).

Plots live in their own package, `boundlab.plots` (it imports matplotlib). `wandb` is
imported only when a W&B logger is built: `import boundlab.tracking` is cheap.
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

__all__ = [
    "NoneLogger",
    "PROBE_STEP",
    "RunLogger",
    "TRAIN_STEP",
    "WandbLogger",
    "build_logger",
    "has_wandb_credentials",
    "metric_key",
    "passk_key",
    "resolve_mode",
]

