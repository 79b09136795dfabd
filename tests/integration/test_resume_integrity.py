"""The run dir is the source of truth (issue 10: resume): train.py resume= on real smoke runs.

One smoke run is trained once per session (tests/integration/conftest.py, `smoke_run`); each case
works on its own copy of it, cut back to the state a crash would leave (a finished run; one killed
while probing its last checkpoint; one killed after its first checkpoint), beside a copy of the
run's probe store."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from smoke_kit import copy_smoke_run, train_env  # tests/integration, shared

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("resume_integrity")


@pytest.fixture
def env(work):
    return train_env(work)  # the probe store is work/store.sqlite: the copy `trained` puts there


def cli(script, args, cwd, env, timeout=600):
    return subprocess.run([sys.executable, str(ROOT / script), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def trained(work, smoke_run):
    """A finished smoke run: steps 2 and 4 saved and probed (n=4 on 8 problems); the session's
    shared one, copied once into this module's work dir with its store (work/store.sqlite)."""
    run = work / "run"
    if not run.exists():
        copy_smoke_run(smoke_run, work)
    assert (run / "training_done").is_file()
    return run


def copy_of(trained, dest: Path) -> Path:
    shutil.copytree(trained, dest, symlinks=True)
    return dest


def ckpts(run):
    return sorted(int(p.name.split("-")[1]) for p in (run / "checkpoints").glob("checkpoint-*"))


def global_step(run, step):
    return json.loads((run / "checkpoints" / f"checkpoint-{step}" / "trainer_state.json").read_text())["global_step"]


def probe_rows(run):
    return [json.loads(x) for x in (run / "probes.jsonl").read_text().splitlines()]


def hydra_bytes(run):
    return {f: (run / ".hydra" / f).read_bytes() for f in HYDRA_FILES}


def cut_back(run, keep_steps):
    """The state of a run killed after its checkpoint at max(keep_steps) was saved and probed
    (or, for a step in keep_steps whose row is dropped, saved but not yet probed)."""
    for step in ckpts(run):
        if step not in keep_steps:
            shutil.rmtree(run / "checkpoints" / f"checkpoint-{step}")
    (run / "training_done").unlink()


def test_a_finished_run_says_so_and_trains_nothing(trained, work, env):
    run = copy_of(trained, work / "finished")
    probes_before, hydra_before = (run / "probes.jsonl").read_bytes(), hydra_bytes(run)
    wandb_before = sorted(p.name for p in (run / "wandb").iterdir())
    proc = cli("train.py", [f"resume={run}"], work, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == (
        f"[boundlab] {run} already finished training (max_steps=4; its latest checkpoint is step 4): "
        f"nothing to train")
    assert ckpts(run) == [2, 4] and global_step(run, 4) == 4
    assert (run / "probes.jsonl").read_bytes() == probes_before
    assert hydra_bytes(run) == hydra_before
    assert sorted(p.name for p in (run / "wandb").iterdir()) == wandb_before  # not even W&B started
    assert len((run / ".hydra" / "resumes.jsonl").read_text().splitlines()) == 1


def test_killed_while_probing_the_last_checkpoint_probes_it_and_stops(trained, work, env):
    run = copy_of(trained, work / "last_probe")
    cut_back(run, keep_steps=[2, 4])
    rows = (run / "probes.jsonl").read_text().splitlines()
    (run / "probes.jsonl").write_text("\n".join(rows[:2]) + "\n")  # base and step 2 only
    proc = cli("train.py", [f"resume={run}"], work, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (f"[boundlab] {run}: its latest checkpoint checkpoint-4 is at max_steps=4; probed what was "
            f"left, nothing to train") in proc.stdout.splitlines()
    assert ckpts(run) == [2, 4] and global_step(run, 4) == 4  # no step 5
    assert [(r["kind"], r["step"]) for r in probe_rows(run)] == [("base", 0), ("checkpoint", 2),
                                                                 ("checkpoint", 4)]
    assert (run / "training_done").is_file()
    again = cli("train.py", [f"resume={run}"], work, env)
    assert again.returncode == 0 and "already finished training" in again.stdout.splitlines()[-1]


def test_resume_uses_the_runs_own_config_and_holds_the_run_dir(trained, work, env):
    """Killed after checkpoint-2: resumed with no overrides, it continues with the smoke settings
    (the default config would train 300 steps and probe n=128 on 200 problems). While it runs, a
    second resume and a probe watcher on the same dir are refused, naming it."""
    run = copy_of(trained, work / "own_config")
    cut_back(run, keep_steps=[2])
    rows = (run / "probes.jsonl").read_text().splitlines()
    (run / "probes.jsonl").write_text("\n".join(rows[:2]) + "\n")
    hydra_before = hydra_bytes(run)

    first = subprocess.Popen([sys.executable, str(ROOT / "train.py"), f"resume={run}"], cwd=work, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if json.loads((run / "train.lock").read_text() or "{}").get("pid") == first.pid:
                    break
            except (OSError, ValueError):
                pass
            assert first.poll() is None, first.stderr.read()[-3000:]
            time.sleep(0.1)
        # Freeze the holder so the checks below cannot race with its end; it keeps its locks.
        os.kill(first.pid, signal.SIGSTOP)
        try:
            second = cli("train.py", [f"resume={run}"], work, env, timeout=120)
            watcher = cli("probe.py", [f"watch={run}", f"hydra.run.dir={work / 'watcher'}"], work, env,
                          timeout=120)
        finally:
            os.kill(first.pid, signal.SIGCONT)
        holder = f"pid {first.pid} on {socket.gethostname()} (train.py resume={run}, since "
        assert second.returncode == 2, second.stderr[-3000:]
        assert second.stderr.count("\n") == 1
        assert second.stderr.startswith(f"error: {run} is in use: train.lock is held by {holder}")
        assert watcher.returncode == 2, watcher.stderr[-3000:]
        assert watcher.stderr.strip().splitlines()[-1].startswith(
            f"error: {run} is in use: probe.lock is held by {holder}")
        out, err = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, err[-3000:]
    assert f"[boundlab] resuming from {run}/checkpoints/checkpoint-2" in out
    assert ckpts(run) == [2, 4] and global_step(run, 4) == 4
    assert json.loads((run / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())["max_steps"] == 4
    assert [(r["kind"], r["step"], r["n"], r["problems"]) for r in probe_rows(run)] == [
        ("base", 0, 4, 8), ("checkpoint", 2, 4, 8), ("checkpoint", 4, 4, 8)]
    assert hydra_bytes(run) == hydra_before
    # Only the resume that ran is recorded; the refused one never got that far.
    resumes = [json.loads(x) for x in (run / ".hydra" / "resumes.jsonl").read_text().splitlines()]
    assert [r["argv"] for r in resumes] == [["train.py", f"resume={run}"]]
    assert resumes[0]["pid"] == first.pid and resumes[0]["changed"] == {}


def test_a_mistyped_run_dir_is_one_line_and_creates_nothing(work, env):
    typo = work / "outputs" / "train" / "no-such-run"
    proc = cli("train.py", [f"resume={typo}"], work, env)
    assert proc.returncode == 2
    assert proc.stderr == f"error: resume={typo}: no such run dir (nothing was created)\n"
    assert not typo.exists() and not (work / "outputs").exists()


def test_an_override_that_changes_the_run_is_refused(trained, work, env):
    run = copy_of(trained, work / "refused")
    hydra_before = hydra_bytes(run)
    proc = cli("train.py", [f"resume={run}", "train.max_steps=8"], work, env)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"error: resume={run}: cannot change train.max_steps on resume (the run has 4, given 8); a resumed "
        f"run keeps its own config ({run}/.hydra/config.yaml); only these may change: backend.torch_threads, "
        f"sampler.torch_threads, verify.workers, logger.mode (online|offline), rollout.host, rollout.port, "
        f"rollout.base_url\n")
    assert hydra_bytes(run) == hydra_before
    assert not (run / ".hydra" / "resumes.jsonl").exists()
    assert ckpts(run) == [2, 4]
