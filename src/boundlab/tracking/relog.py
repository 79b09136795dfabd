"""Put back into W&B the training metrics of a killed process's segment, from the run dir.

An offline W&B run keeps its newest records in a buffer; a job killed hard (SIGKILL, OOM,
preemption) loses them, often every `train/*` row since the start. A resume sets the killed
segment aside and keeps only closed segments (`boundlab.tracking.segments`), whose training steps
are recorded (`from_step`, `train_to`] and `train_relogged`. The same metrics are durable in the resumed checkpoint's
`trainer_state.json` (`log_history`), so every logged step up to that checkpoint that no kept
segment covers is logged again, with the names and the `train/global_step` key HF's WandbCallback
gives them. Steps after the checkpoint are trained (and logged) again by the resumed run, so they
are not re-logged here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from boundlab.tracking.names import TRAIN_STEP

# Logged by HF into the run summary, not into history (WandbCallback.on_log).
_SUMMARY_ONLY = {"train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss",
                 "total_flos"}


def _rewrite(entry: dict[str, Any]) -> dict[str, Any]:
    """A log_history entry as HF's WandbCallback logs it (train/..., eval/..., test/...)."""
    from transformers.integrations.integration_utils import rewrite_logs

    return rewrite_logs({k: v for k, v in entry.items() if k != "step" and k not in _SUMMARY_ONLY})


def train_rows_to_relog(log_history: list[dict[str, Any]], missing: Callable[[int], bool]) -> list[dict[str, Any]]:
    """The rows (as HF would log them, with `train/global_step`) of the `log_history` entries whose
    step W&B does not keep (`missing(step)`), in log order."""
    out = []
    for entry in log_history:
        if "step" not in entry:
            continue
        row = _rewrite(entry)
        step = int(entry["step"])
        if row and missing(step):
            out.append({**row, TRAIN_STEP: step})
    return out


def relog_lost_train_metrics(logger: Any, resume_from: Path | None, missing: Callable[[int], bool]) -> list[int]:
    """Re-log the `train/*` rows of `resume_from`'s trainer_state.json whose step W&B does not keep.
    Returns the steps re-logged (printed in one line when there are any)."""
    from boundlab.rundir.io import read_json

    state_file = Path(resume_from) / "trainer_state.json" if resume_from else None
    if state_file is None or not state_file.is_file():
        return []
    log_history = read_json(state_file, {}, "the checkpoint's training log").get("log_history", [])
    rows = train_rows_to_relog(log_history, missing)
    for row in rows:
        logger.log(row)
    steps = sorted({int(r[TRAIN_STEP]) for r in rows})
    segment = getattr(logger, "segment", None)
    if segment is not None:
        segment.note_train_relogged(steps)
    if steps:
        print(f"[boundlab] re-logged train/* metrics at steps {steps} (from {state_file}) that no closed "
              f"W&B segment holds", flush=True)
    return steps
