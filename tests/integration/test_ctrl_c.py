"""Ctrl-C during `python train.py` ends with one line naming the step reached and the exact resume
command (exit 130), not a traceback; running that command finishes the run."""

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_ctrl_c_says_the_step_and_the_resume_command_and_that_command_finishes(tmp_path):
    run_dir = tmp_path / "run"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    args = ["debug=smoke", "train.max_steps=8", "backend.torch_threads=1", f"hydra.run.dir={run_dir}"]
    # Its own session, so the SIGINT goes to the whole process group, as a terminal's Ctrl-C does
    # (the verifier's and W&B's helper processes get it too).
    proc = subprocess.Popen([sys.executable, str(ROOT / "train.py"), *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    marker = run_dir / "checkpoints" / "checkpoint-2" / "boundlab_complete"
    try:
        while not marker.exists():  # the test's own condition, not a time limit
            assert proc.poll() is None, f"training ended before Ctrl-C:\n{proc.stderr.read()[-3000:]}"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (proc.returncode, err[-3000:])
    assert "Traceback" not in err and "Traceback" not in out, err[-5000:]
    last = [x for x in err.splitlines() if x.strip()][-1]
    m = re.fullmatch(r"interrupted at step (\d+) of 8 \(the last checkpoint is checkpoint-(\d+), so it "
                     r"continues from step \d+\); resume with: (python train\.py resume=\S+)", last)
    assert m, err[-3000:]
    assert int(m.group(1)) >= int(m.group(2)) >= 2
    cmd = shlex.split(m.group(3))
    assert cmd[2] == f"resume={run_dir}"
    done = subprocess.run([sys.executable, str(ROOT / cmd[1]), *cmd[2:]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (run_dir / "checkpoints" / "checkpoint-8").is_dir()
    # W&B holds each training step and each probe row once: the steps the stopped run trained after
    # its last checkpoint are trained again but not logged again (its closed file holds them).
    from boundlab.tracking.reader import read_offline_run

    history = read_offline_run(run_dir / "wandb").history
    steps = [h["train/global_step"] for h in history if "train/reward" in h]
    assert sorted(steps) == list(range(1, 9)), steps
    probes = [h["probe/step"] for h in history if "probe/pass@1" in h]
    assert sorted(probes) == [0, 2, 4, 6, 8], probes


@pytest.mark.slow
def test_steps_trained_after_the_last_checkpoint_reach_wandb_once(tmp_path):
    """Ctrl-C once step 3 is logged (the last checkpoint is at 2): the run's W&B file, closed cleanly,
    holds step 3; the resume trains step 3 again from checkpoint-2 and must not log it twice."""
    import threading

    from boundlab.tracking.reader import read_offline_run

    run_dir = tmp_path / "run"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    args = ["debug=smoke", "train.max_steps=6", "backend.torch_threads=1", f"hydra.run.dir={run_dir}"]
    proc = subprocess.Popen([sys.executable, str(ROOT / "train.py"), *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines: list[str] = []
    step3 = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            if line.lstrip().startswith("step 3/6"):
                step3.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        while not step3.is_set():  # the test's own condition, not a time limit
            assert proc.poll() is None, "".join(lines)[-3000:]
            step3.wait(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(timeout=60)
    assert proc.returncode == 130, "".join(lines)[-3000:]
    last = [x for x in lines if x.strip()][-1]
    m = re.search(r"interrupted at step (\d+) of 6 \(the last checkpoint is checkpoint-(\d+)", last)
    # The state this test is about: a step after the last checkpoint reached W&B's closed file.
    assert m and int(m.group(2)) < 3 <= int(m.group(1)), last
    stopped = read_offline_run(run_dir / "wandb").history
    assert 3 in [h["train/global_step"] for h in stopped if "train/reward" in h]

    done = subprocess.run([sys.executable, str(ROOT / "train.py"), f"resume={run_dir}"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    history = read_offline_run(run_dir / "wandb").history
    steps = [h["train/global_step"] for h in history if "train/reward" in h]
    assert sorted(steps) == list(range(1, 7)), steps
    probes = [h["probe/step"] for h in history if "probe/pass@1" in h]
    assert sorted(probes) == [0, 2, 4, 6], probes
