"""Sweeps are runs too: a Hydra `-m` sweep reports every job it defined.

- `sweep_job` wraps an entry point's task function (inside `friendly_errors`). In a multirun, a job
  that fails with a user error (a bad value, a missing file: what would be one line and exit 2 for a
  single run) prints that line with its job number and overrides, is recorded as failed, and
  returns: the launcher goes on with the other jobs (as Hydra's launchers do for an exception),
  instead of the whole sweep ending at the first bad job. Every job's outcome is appended to
  SWEEP_DIR/sweep_jobs.jsonl (one line each, written by the job itself, so a joblib or submitit
  launcher's jobs in other processes record theirs too).
- `SweepSummary`, a Hydra callback (conf/train.yaml, conf/probe.yaml `hydra.callbacks`), prints at the
  sweep's end one line per failed or skipped job and `sweep: D done, F failed, S skipped (of N)`;
  any failed or skipped job makes the exit status 1.
- `sweep_jobs(SWEEP_DIR)` (`boundlab.rundir.sweeps`, a reader below every app): every job the sweep
  defined, with its dir and recorded outcome, so report.py can name the jobs that left no probes.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from boundlab.rundir.sweeps import STATUS_FILE, Job, defined_jobs, summary_lines, sweep_jobs  # noqa: F401


def _multirun_job() -> Any:
    """The HydraConfig of the running job when it is a job of a multirun, else None."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
            return HydraConfig.get()
    except Exception:  # noqa: BLE001 - no Hydra around: a plain call
        return None
    return None


def _record(h: Any, status: str, reason: str | None = None) -> None:
    line = {"num": int(h.job.num), "overrides": list(h.overrides.task), "status": status,
            "reason": reason, "dir": str(h.runtime.output_dir)}
    sweep_dir = Path(str(h.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    # One O_APPEND write per line: jobs of a parallel launcher do not interleave within a line.
    fd = os.open(sweep_dir / STATUS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def sweep_job(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from boundlab.cli import USER_ERRORS

        h = _multirun_job()
        if h is None:
            return fn(*args, **kwargs)
        try:
            out = fn(*args, **kwargs)
        except USER_ERRORS as e:
            reason = _first_line(e)
            print(f"error: job {h.job.num} ({' '.join(h.overrides.task)}): {reason}", file=sys.stderr)
            _record(h, "failed", reason)
            return None  # the launcher goes on with the other jobs
        except Exception as e:
            _record(h, "failed", f"{type(e).__name__}: {_first_line(e)}")
            raise  # a bug: Hydra runs the other jobs of the batch, then reports it
        _record(h, "done")
        return out

    return wrapper


try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover
    Callback = object  # type: ignore[misc,assignment]


class SweepSummary(Callback):  # type: ignore[misc]
    """Hydra callback: the sweep's summary at its end, and exit status 1 when any job failed."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        jobs = sweep_jobs(str(config.hydra.sweep.dir))
        if not jobs:
            return
        print("\n".join(summary_lines(jobs)), file=sys.stderr, flush=True)
        if any(j.status != "done" for j in jobs):
            raise SystemExit(1)  # not an Exception: Hydra's callback runner would only warn
