"""A quiet, informative console for `train.py` (issue 38): one line per logging step instead of TRL's
~1,000-character metric dict, library warnings that are not the user's to act on filtered at the
source, no weight-loading or shard-writing bars at every checkpoint, and the probe lines and the end
summary kept in the run's train.log beside Hydra's own records.

What is filtered, and why it is safe: FutureWarning and DeprecationWarning raised inside transformers,
TRL, accelerate, PEFT, datasets and torch (API deprecations inside those libraries, e.g. TRL reading
`gradient_checkpointing` through the name transformers deprecated: nothing a user of BoundLab can
change); transformers' own logging below ERROR; the Hugging Face progress bars. A warning raised in
BoundLab's code, or any other category (UserWarning, RuntimeWarning), still shows.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Mapping

from transformers.trainer_callback import ProgressCallback

from boundlab.rundir import TRAIN_LOG

_LIBRARIES = r"(transformers|trl|accelerate|peft|datasets|torch)(\.|$)"
# The columns of a logging step's line, in order, with their label: what says whether RL is learning.
COLUMNS = (("reward", "reward"), ("reward_std", "±"), ("kl", "kl"), ("entropy", "entropy"),
           ("loss", "loss"), ("clip_ratio/region_mean", "clip"), ("learning_rate", "lr"))


def quiet_libraries() -> None:
    """Filter the libraries' own deprecation noise and progress bars (see the module docstring)."""
    for category in (FutureWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category, module=_LIBRARIES)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    try:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    except ImportError:  # pragma: no cover
        pass
    try:
        from datasets.utils.logging import disable_progress_bar

        disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


def fmt(v: Any) -> str:
    """A figure with 3 significant digits (never '0.0' for 0.04): 0.0412, 1.23e-05, 250."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int) or (math.isfinite(v) and v == int(v) and abs(v) < 1e6):
        return str(int(v))
    return f"{v:.3g}"


def step_line(step: int, max_steps: int, logs: Mapping[str, Any]) -> str | None:
    """One line for a logging step: `step 5/150  reward 0.375 ± 0.518  kl 0.00102  ...`, or None for
    a log without training metrics (the end-of-training summary TRL logs)."""
    got = [(label, logs[key]) for key, label in COLUMNS if isinstance(logs.get(key), (int, float))]
    if not got:
        return None
    parts = []
    for label, v in got:
        parts.append(f"± {fmt(v)}" if label == "±" else f"{label} {fmt(v)}")
    return f"step {step}/{max_steps}  " + "  ".join(parts)


class CondensedProgress(ProgressCallback):
    """transformers' progress bar, with each log printed as `step_line` instead of the whole dict."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or self.training_bar is None or not logs:
            return
        line = step_line(state.global_step, state.max_steps, logs)
        if line is not None:
            self.training_bar.write(line)


def condense(trainer: Any) -> None:
    """Swap the trainer's progress callback for `CondensedProgress` (a trainer built with tqdm off has
    none: nothing to do), and skip TRL's Hub model card at every checkpoint save: it reads
    `wandb.run.url`, which prints "URL not available in offline run" in every offline run, and a
    BoundLab checkpoint is not pushed to the Hub (its provenance is the run dir's own files)."""
    if hasattr(trainer, "create_model_card"):
        trainer.create_model_card = _no_model_card
    if any(isinstance(cb, ProgressCallback) for cb in trainer.callback_handler.callbacks):
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(CondensedProgress)


def _no_model_card(*args: Any, **kwargs: Any) -> None:
    return None


def to_train_log(run_dir: str | Path, lines: list[str] | str) -> None:
    """Append lines to RUN_DIR/train.log (boundlab.rundir.io.append_lines)."""
    from boundlab.rundir.io import append_lines

    append_lines(Path(run_dir) / TRAIN_LOG, lines)
