"""A SLURM job preempted after its first checkpoint and requeued (same SLURM_JOB_ID, SLURM_RESTART_COUNT
1, the batch script's command line unchanged) resumes its own run dir and finishes it; another job, or
the same job's first start run twice, is refused as a fresh run in a used dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _env(work, job_id, restart):
    e = dict(os.environ, BOUNDLAB_STORE=str(work / "store.sqlite"), WANDB_MODE="offline",
             HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true",
             SLURM_JOB_ID=str(job_id), SLURM_RESTART_COUNT=str(restart))
    for key in ("WANDB_SERVICE", "RANK", "SLURM_CLUSTER_NAME"):  # see tests/conftest.py
        e.pop(key, None)
    return e


def _train(argv, work, job_id, restart):
    return subprocess.run([sys.executable, str(ROOT / "train.py"), *argv], cwd=work,
                          env=_env(work, job_id, restart), capture_output=True, text=True, timeout=600)


def _ckpts(run):
    return sorted(int(p.name.split("-")[1]) for p in (run / "checkpoints").glob("checkpoint-*"))


def test_a_requeued_job_resumes_its_own_run_dir(tmp_path):
    run = tmp_path / "run"
    argv = ["debug=smoke", "backend.torch_threads=1", f"hydra.run.dir={run}"]  # the batch script's line
    first = _train(argv, tmp_path, 4242, 0)
    assert first.returncode == 0, first.stderr[-3000:]
    assert json.loads((run / "slurm_job.json").read_text())["job_id"] == "4242"
    assert "slurm_job" not in json.loads((run / "run_info.json").read_text())
    # Preempted after checkpoint-2 was saved and probed.
    shutil.rmtree(run / "checkpoints" / "checkpoint-4")
    (run / "training_done").unlink()
    rows = (run / "probes.jsonl").read_text().splitlines()
    (run / "probes.jsonl").write_text("\n".join(rows[:2]) + "\n")
    hydra_before = {p.name: p.read_bytes() for p in (run / ".hydra").iterdir()}

    for job_id, restart in ((4243, 1), (4242, 0)):  # another job; the same job's first start again
        refused = _train(argv, tmp_path, job_id, restart)
        assert refused.returncode == 2
        assert refused.stderr.startswith(f"error: hydra.run.dir={run} is the run dir of another training run")
    assert {p.name: p.read_bytes() for p in (run / ".hydra").iterdir()} == hydra_before

    requeued = _train(argv, tmp_path, 4242, 1)
    assert requeued.returncode == 0, requeued.stderr[-3000:]
    out = requeued.stdout.splitlines()
    assert out[0] == (f"[boundlab] SLURM job 4242 (restart 1) restarted in the run dir it made: resuming it "
                      f"(train.py resume={run})")
    assert f"[boundlab] resuming from {run}/checkpoints/checkpoint-2" in out
    assert _ckpts(run) == [2, 4] and (run / "training_done").is_file()
    assert [json.loads(x)["step"] for x in (run / "probes.jsonl").read_text().splitlines()] == [0, 2, 4]
    assert {p.name: p.read_bytes() for p in (run / ".hydra").iterdir()} == {
        **hydra_before, "resumes.jsonl": (run / ".hydra" / "resumes.jsonl").read_bytes()}
    line = json.loads((run / ".hydra" / "resumes.jsonl").read_text())
    assert line["slurm"] == {"job_id": "4242", "cluster": "", "restart": 1}
    assert line["argv"] == ["train.py", f"resume={run}", "debug=smoke", "backend.torch_threads=1"]

    again = _train(argv, tmp_path, 4242, 2)  # requeued once more after it finished
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already finished training" in again.stdout.splitlines()[-1]
