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
