"""Shared by the integration tests that need a finished smoke run (conftest.py's `smoke_run`):
train.py's environment, the run itself, and a copy a test may change."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def train_env(work: Path) -> dict[str, str]:
    """The environment of a train.py child working in `work` (its own probe store there)."""
    e = dict(os.environ, BOUNDLAB_STORE=str(work / "store.sqlite"), WANDB_MODE="offline",
             HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true")
    e.pop("WANDB_SERVICE", None)  # see tests/conftest.py
    e.pop("RANK", None)
    return e


def train(work: Path, *overrides: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`train.py debug=smoke backend.torch_threads=1 task.toy2.train_mix={H1:0.5,B3:0.5} OVERRIDES` in
    `work` (with `env`, else train_env(work)), which must exit 0."""
    proc = subprocess.run([sys.executable, str(ROOT / "train.py"), "debug=smoke", "backend.torch_threads=1",
                           "task.toy2.train_mix={H1:0.5,B3:0.5}", *overrides], cwd=work,
                          env=env or train_env(work), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"train.py failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def build_smoke_run(work: Path):
    """One finished `train.py debug=smoke` run on the second toy world, trained on H1 and B3 (the
    base gets them right sometimes, so GRPO groups have a reward spread): steps 2 and 4 saved and
    probed inline (n=4 on 8 problems), logged to an offline W&B run. Its console is the one a user
    sees (test_quiet_console reads it): W&B not silenced, no PYTHONWARNINGS. Returns (run dir, its
    probe store, the finished train.py process)."""
    run_dir = work / "run"
    env = train_env(work)
    env.pop("WANDB_SILENT", None)
    env.pop("PYTHONWARNINGS", None)
    proc = train(work, f"hydra.run.dir={run_dir}", env=env)
    assert (run_dir / "training_done").is_file()
    return run_dir, work / "store.sqlite", proc


def build_sft_run(work: Path):
    """One finished `algo=sft_distill` smoke run (the same settings as build_smoke_run): the
    teacher's verified traces, SFT on them, steps 2 and 4 saved and probed. Returns (run dir, the
    finished train.py process)."""
    run_dir = work / "sft"
    proc = train(work, "algo=sft_distill", f"hydra.run.dir={run_dir}")
    assert (run_dir / "training_done").is_file()
    return run_dir, proc


def copy_smoke_run(smoke, dest: Path) -> Path:
    """A copy of the shared smoke run at dest/run and of its store at dest/store.sqlite (where
    `train_env(dest)` points); returns the copy's run dir."""
    run_dir, store, _ = smoke
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(run_dir, dest / "run", symlinks=True)
    for f in store.parent.glob(store.name + "*"):  # the database and any -wal/-shm beside it
        shutil.copy2(f, dest / f.name)
    return dest / "run"


def done_sweep_job(sweep_dir: Path, proc: subprocess.CompletedProcess, index: int, override: str) -> Path:
    """The run dir of job `index` of a finished `train.py -m` sweep, whose first override must be
    `override`; asserts the sweep recorded its jobs (and exited 0 when every job is done) and that
    this job is done, naming the failure otherwise (a failed job's own test names it)."""
    from boundlab.sweep import sweep_jobs

    jobs = sweep_jobs(sweep_dir)
    assert jobs is not None, f"train.py -m failed ({proc.returncode}):\n{proc.stderr[-5000:]}"
    if all(j.status == "done" for j in jobs):
        assert proc.returncode == 0, f"train.py -m failed ({proc.returncode}):\n{proc.stderr[-5000:]}"
    job = jobs[index]
    assert job.overrides[0] == override
    assert job.status == "done", f"{override}: train.py failed ({job.reason}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return Path(job.dir)
