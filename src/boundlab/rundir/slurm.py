"""A SLURM job requeued (preemption, `--requeue`, submitit's requeue on timeout) runs its batch script
again with the same job id: it must continue its own run dir, not start over or be refused as a
stranger.

- A fresh training run started under SLURM records its job (`SLURM_JOB_ID`, and
  `SLURM_CLUSTER_NAME` where set) and a digest of its composed config in `slurm_job.json` first
  thing, under the run dir's lock and before any model work, so a job preempted at any later
  point is known as the dir's owner. (Not in `run_info.json`: its appearance tells a watcher that
  training has opened its W&B run.) The file also marks the dir as a training run's
  (`rundir.owner`): another job pointed at it is refused. A job preempted before that line (while
  Hydra was still composing) left no record and no training state: its requeue is a fresh run in
  that dir, refused when the dir is named on the command line (Hydra's saved config marks it), where
  `python train.py resume=RUN_DIR` continues it.
- A process whose `SLURM_RESTART_COUNT` is 1 or more and whose job is the one recorded is that job
  restarting: the entry layer turns it into the run's own resume (boundlab.resume). Anything else
  (another job, the same job's first start running twice, a dir from before the record) is left
  to the usual refusal: a fresh run never adopts a run dir it cannot prove it made.

The job id is unique per job on a cluster (each array task has its own), and SLURM only reuses it
for a requeue, so the pair (cluster, job id) plus a restart count is the proof.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from boundlab.rundir import SLURM_JOB


def current_job() -> dict[str, str] | None:
    """This process's SLURM job ({"job_id", "cluster"}), or None outside SLURM."""
    job_id = os.environ.get("SLURM_JOB_ID", "").strip()
    if not job_id:
        return None
    return {"job_id": job_id, "cluster": os.environ.get("SLURM_CLUSTER_NAME", "").strip()}


def restart_count() -> int:
    """How many times SLURM restarted this job (0 on its first start, and outside SLURM)."""
    try:
        return max(0, int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0))
    except ValueError:
        return 0


def recorded_job(run_dir: str | Path) -> dict[str, Any] | None:
    """The SLURM job recorded as the run dir's maker, or None (no record, or not under SLURM)."""
    from boundlab.rundir.io import RunDirError, read_json

    try:
        job = read_json(Path(run_dir) / SLURM_JOB, None, "the SLURM job that made this run dir")
    except RunDirError:  # an unreadable record proves nothing; the usual checks decide (and say)
        return None
    return job if isinstance(job, dict) else None


def is_requeue_of(run_dir: str | Path) -> bool:
    """Whether this process is the SLURM job that made `run_dir`, restarted by SLURM."""
    job = current_job()
    if job is None or restart_count() < 1:
        return False
    made_by = recorded_job(run_dir)
    return made_by is not None and {k: str(made_by.get(k, "")) for k in job} == job


def config_digest(config_text: str) -> str:
    return hashlib.sha256(config_text.encode("utf-8")).hexdigest()[:16]


def same_config(run_dir: str | Path, config_text: str) -> bool:
    """Whether `config_text` is the config the recorded job started with (a job re-run through
    Hydra, as submitit's requeue does, composes it again; a changed config file would show here)."""
    made_by = recorded_job(run_dir) or {}
    return made_by.get("config") == config_digest(config_text)


def record_job(run_dir: str | Path, config_text: str) -> None:
    """A fresh run under SLURM: record its job and its config's digest in slurm_job.json
    (atomically)."""
    job = current_job()
    if job is None:
        return
    from boundlab.rundir.io import atomic_write_json

    atomic_write_json(Path(run_dir) / SLURM_JOB, {**job, "config": config_digest(config_text)})


def describe() -> str:
    """'SLURM job 123 (restart 1)' for messages; '' outside SLURM."""
    job = current_job()
    if job is None:
        return ""
    where = f" on {job['cluster']}" if job["cluster"] else ""
    return f"SLURM job {job['job_id']}{where} (restart {restart_count()})"
