"""The run dir: every file name in it, and how each is read and written.

    checkpoints/checkpoint-N/   HF checkpoints; `boundlab_complete` marks one whose save returned
                                (rundir.checkpoints)
    probes.jsonl                one line per finished probe (base, then each checkpoint)
    alarms.jsonl                one line per checkpoint whose boundary shrank (boundary.alarm)
    boundary.csv, boundary.png  the boundary over training; passk_by_step.png
    entropy.png                 the sampling entropy over training (when the probes recorded it)
    run_info.json               W&B run id, so a resumed run logs into the same run (written once
                                training has opened its W&B run: a watcher waits for it)
    slurm_job.json              under SLURM, the job that made the dir and its config's digest,
                                written before any model work (rundir.slurm: its requeue resumes it)
    training_done               written when training finished: the watcher stops, resume refuses
    train.lock, probe.lock      flock locks naming the trainer / the prober (rundir.lock)
    .hydra/config.yaml          the run's composed config: resume and the watcher read it
    .hydra/resumes.jsonl        one line per `resume=` (the saved config files are never rewritten)
    wandb/                      the W&B run files (one `offline-run-*` folder per process that logged)
    wandb_segments/<name>.json  what each W&B process (segment) logged and whether it closed its file
                                (tracking.segments): a resume decides what to re-log from these
    wandb_killed/               the W&B folders of killed processes, set aside by a resume that
                                re-logged their rows (tracking.segments)

Writes that a resume depends on are atomic (rundir.io). This module holds names only, so any layer
can import it for a path without importing the readers.
"""

from __future__ import annotations

from pathlib import Path

CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_COMPLETE = "boundlab_complete"
PROBES_FILE = "probes.jsonl"
# Hydra's job log for train.py; probe lines and the end-of-run table are appended to it.
TRAIN_LOG = "train.log"
ALARMS_FILE = "alarms.jsonl"
BOUNDARY_CSV = "boundary.csv"
BOUNDARY_GROUPS_CSV = "boundary_groups.csv"
BOUNDARY_PNG = "boundary.png"
PASSK_BY_STEP_PNG = "passk_by_step.png"
ENTROPY_PNG = "entropy.png"
RUN_INFO = "run_info.json"
SLURM_JOB = "slurm_job.json"
DONE_MARKER = "training_done"
TRAIN_LOCK = "train.lock"
PROBE_LOCK = "probe.lock"
HYDRA_DIR = ".hydra"
HYDRA_CONFIG = Path(HYDRA_DIR) / "config.yaml"
HYDRA_RUNTIME = Path(HYDRA_DIR) / "hydra.yaml"
RESUMES_FILE = "resumes.jsonl"
WANDB_DIR = "wandb"
WANDB_SEGMENTS_DIR = "wandb_segments"
WANDB_SET_ASIDE_DIR = "wandb_killed"
