"""Ctrl-C during `python train.py` ends with one line naming the step reached and the exact resume
command (exit 130), not a traceback; running that command finishes the run, and W&B holds each
training step and each probe row once (steps trained after the last checkpoint included)."""

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_ctrl_c_says_the_step_and_the_resume_command_and_that_command_finishes(tmp_path):
    """Ctrl-C once step 3 is logged (the last checkpoint is at 2): exit 130 with one line naming the
    step and the exact resume command, no traceback, and the run's W&B file, closed cleanly, holds
    step 3. Running that command trains step 3 again from checkpoint-2 and finishes the run, and must
    not log step 3 twice: W&B holds each training step and each probe row once.

    (One interrupted run checks both what the Ctrl-C line says and what W&B keeps; they were two
    tests, each training and resuming its own run.)"""
    from boundlab.tracking.reader import read_offline_run

    run_dir = tmp_path / "run"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    args = ["debug=smoke", "train.max_steps=6", "backend.torch_threads=1", f"hydra.run.dir={run_dir}"]
    # Its own session, so the SIGINT goes to the whole process group, as a terminal's Ctrl-C does
    # (the verifier's and W&B's helper processes get it too).
    proc = subprocess.Popen([sys.executable, str(ROOT / "train.py"), *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    out_lines: list[str] = []
    err_lines: list[str] = []
    step3 = threading.Event()

    def read_out() -> None:
        for line in proc.stdout:
            out_lines.append(line)
            if line.lstrip().startswith("step 3/6"):
                step3.set()

    def read_err() -> None:
        for line in proc.stderr:
            err_lines.append(line)

    readers = [threading.Thread(target=f, daemon=True) for f in (read_out, read_err)]
    for r in readers:
        r.start()
    try:
        while not step3.is_set():  # the test's own condition, not a time limit
            assert proc.poll() is None, f"training ended before Ctrl-C:\n{''.join(err_lines)[-3000:]}"
            step3.wait(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    for r in readers:
        r.join(timeout=60)
    out, err = "".join(out_lines), "".join(err_lines)
    assert proc.returncode == 130, (proc.returncode, err[-3000:])
    assert "Traceback" not in err and "Traceback" not in out, err[-5000:]
    last = [x for x in err.splitlines() if x.strip()][-1]
    m = re.fullmatch(r"interrupted at step (\d+) of 6 \(the last checkpoint is checkpoint-(\d+), so it "
                     r"continues from step \d+\); resume with: (python train\.py resume=\S+)", last)
    assert m, err[-3000:]
    # The state this test is about: a step after the last checkpoint reached W&B's closed file.
    assert int(m.group(1)) >= 3 > int(m.group(2)) >= 2, last
    stopped = read_offline_run(run_dir / "wandb").history
    assert 3 in [h["train/global_step"] for h in stopped if "train/reward" in h]
    cmd = shlex.split(m.group(3))
    assert cmd[2] == f"resume={run_dir}"

    done = subprocess.run([sys.executable, str(ROOT / cmd[1]), *cmd[2:]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (run_dir / "checkpoints" / "checkpoint-6").is_dir()
    # W&B holds each training step and each probe row once: the steps the stopped run trained after
    # its last checkpoint are trained again but not logged again (its closed file holds them).
    history = read_offline_run(run_dir / "wandb").history
    steps = [h["train/global_step"] for h in history if "train/reward" in h]
    assert sorted(steps) == list(range(1, 7)), steps
    probes = [h["probe/step"] for h in history if "probe/pass@1" in h]
    assert sorted(probes) == [0, 2, 4, 6], probes
