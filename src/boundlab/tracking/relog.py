"""Put back into W&B the training metrics a hard kill took with it.

An offline W&B run keeps its newest records in a 32 KiB block in memory; a job killed hard (SIGKILL,
OOM, preemption) loses them, often every `train/*` row since the last full block. The same metrics
are durable in the resumed checkpoint's `trainer_state.json` (`log_history`), so on resume every
logged step up to that checkpoint whose `train/*` row the `.wandb` files do not hold is logged again,
with the names and the `train/global_step` key HF's WandbCallback gives them. Steps after the
checkpoint are trained (and logged) again by the resumed run, so they are not re-logged here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from boundlab.tracking.names import TRAIN_STEP

# Logged by HF into the run summary, not into history (WandbCallback.on_log).
_SUMMARY_ONLY = {"train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss",
                 "total_flos"}


def _rewrite(entry: dict[str, Any]) -> dict[str, Any]:
    """A log_history entry as HF's WandbCallback logs it (train/..., eval/..., test/...)."""
    from transformers.integrations.integration_utils import rewrite_logs

    return rewrite_logs({k: v for k, v in entry.items() if k != "step" and k not in _SUMMARY_ONLY})


def lost_train_rows(history: list[dict[str, Any]], log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows (as HF would log them, with `train/global_step`) of `log_history` entries whose step
    has no W&B history row holding any of the entry's metrics."""
    logged: dict[int, set[str]] = {}
    for h in history:
        if TRAIN_STEP in h:
            logged.setdefault(int(h[TRAIN_STEP]), set()).update(h)
    out = []
    for entry in log_history:
        if "step" not in entry:
            continue
        row = _rewrite(entry)
        if not row:
            continue
        step = int(entry["step"])
        if not logged.get(step, set()) & set(row):
            out.append({**row, TRAIN_STEP: step})
    return out


def relog_lost_train_metrics(logger: Any, run_dir: Path, run_id: str, resume_from: Path | None) -> list[int]:
    """Re-log the `train/*` rows of `resume_from`'s trainer_state.json that the offline run lost.
    Returns the steps re-logged (printed in one line when there are any)."""
    from boundlab.rundir.io import read_json
    from boundlab.tracking.reader import read_offline_run

    state_file = Path(resume_from) / "trainer_state.json" if resume_from else None
    if state_file is None or not state_file.is_file():
        return []
    log_history = read_json(state_file, {}, "the checkpoint's training log").get("log_history", [])
    try:
        history = read_offline_run(run_dir, run_id=run_id).history
    except Exception:  # noqa: BLE001 - no readable run file yet: every row is missing
        history = []
    rows = lost_train_rows(history, log_history)
    for row in rows:
        logger.log(row)
    steps = sorted({int(r[TRAIN_STEP]) for r in rows})
    if steps:
        print(f"[boundlab] re-logged train/* metrics at steps {steps} (from {state_file}) that the "
              f"killed run had not flushed to W&B", flush=True)
    return steps
