"""train.py end to end on the toy world: parameters change, checkpoints are probed through the
callback, W&B holds the probes at the right steps, and a killed run resumes cleanly."""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from boundlab.worlds.toyworld2.paths import base_model_dir
from boundlab.tracking.reader import read_offline_run

ROOT = Path(__file__).resolve().parents[2]


def env_for(tmp_path):
    return dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
                HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true")


def train(tmp_path, *overrides, check=True):
    proc = subprocess.run([sys.executable, str(ROOT / "train.py"), *overrides], cwd=tmp_path,
                          env=env_for(tmp_path), capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"train.py failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


def probes(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_smoke_trains_probes_and_logs(smoke_run):
    # `debug=smoke backend.torch_threads=1 task.toy2.train_mix={H1:0.5,B3:0.5}`, trained once per session
    # (tests/integration/conftest.py) and only read here. H1 and B3 only: the base gets them right
    # sometimes, so GRPO groups have a reward spread (the default mix's first problems are mostly E,
    # always right, or X, never: zero advantages).
    run_dir, _, proc = smoke_run

    base = load_file(base_model_dir() / "model.safetensors")
    final = load_file(run_dir / "checkpoints" / "checkpoint-4" / "model.safetensors")
    changed = [k for k in base if not torch.equal(base[k], final[k])]
    assert changed, "GRPO did not change any parameter"

    rows = probes(run_dir)
    assert [(r["kind"], r["step"]) for r in rows] == [("base", 0), ("checkpoint", 2), ("checkpoint", 4)]
    for r in rows:
        assert r["n"] == 4 and r["problems"] == 8

    with (run_dir / "boundary.csv").open() as f:
        table = list(csv.DictReader(f))
    assert [int(r["step"]) for r in table] == [0, 2, 4]
    assert (run_dir / "boundary.png").stat().st_size > 1000

    run = read_offline_run(run_dir)
    at = {h["probe/step"]: h for h in run.history if "probe/pass@1" in h}
    assert sorted(at) == [0, 2, 4]
    for r in rows:
        assert at[r["step"]]["probe/pass@1"] == pytest.approx(r["pass@1"], abs=1e-9)
    assert "probe/lost" in at[2] and "probe/delta/pass@1" in at[4]
    # Training metrics land in the same run.
    assert any("train/reward" in h for h in run.history)
    # Inline probing's share of the wall time: said in one line and kept in the run's summary: the
    # probes' own seconds (probes.jsonl), a part of the whole.
    s = run.summary
    assert s["probe/inline_seconds"] == pytest.approx(sum(r["probe_seconds"] for r in rows), abs=0.05)
    assert 0 < s["probe/inline_seconds"] < s["run/wall_seconds"]
    assert s["probe/inline_share"] == pytest.approx(s["probe/inline_seconds"] / s["run/wall_seconds"], abs=1e-3)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("[boundlab] inline probing took"))
    assert f"({s['probe/inline_share']:.0%})" in line


@pytest.mark.slow
def test_killed_after_save_resumes_without_reprobing_or_losing(tmp_path):
    run_dir = tmp_path / "run"
    args = ["debug=smoke", "train.max_steps=6", "backend.torch_threads=1",
            f"hydra.run.dir={run_dir}"]
    proc = subprocess.Popen([sys.executable, str(ROOT / "train.py"), *args], cwd=tmp_path,
                            env=env_for(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while time.time() < deadline:
        time.sleep(0.2)
        if (run_dir / "checkpoints" / "checkpoint-2" / "boundlab_complete").exists():
            break
        assert proc.poll() is None, "training ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first_id = json.loads((run_dir / "run_info.json").read_text())["wandb_run_id"]

    train(tmp_path, "debug=smoke", "train.max_steps=6", "backend.torch_threads=1",
          f"resume={run_dir}")
    rows = probes(run_dir)
    steps = [(r["kind"], r["step"]) for r in rows]
    assert steps == [("base", 0), ("checkpoint", 2), ("checkpoint", 4), ("checkpoint", 6)], steps
    assert json.loads((run_dir / "run_info.json").read_text())["wandb_run_id"] == first_id
    # What `wandb sync` uploads: run/wandb (the killed process's files were set aside).
    run = read_offline_run(run_dir / "wandb", run_id=first_id)
    logged = sorted(h["probe/step"] for h in run.history if "probe/pass@1" in h)
    assert logged == [0, 2, 4, 6]


@pytest.fixture
def detached_trained(tmp_path_factory, built_once):
    """One detached smoke run (trained, nothing probed), trained once per session; each test works
    on its own copy with its own store, so each watcher probes everything afresh."""

    def build():
        work = tmp_path_factory.mktemp("detached")
        train(work, "debug=smoke", "train.probe_mode=detached", "backend.torch_threads=1",
              f"hydra.run.dir={work / 'run'}")
        return work / "run"

    return built_once("train_smoke/detached", build)


def copy_of(run_dir: Path, dest: Path) -> Path:
    shutil.copytree(run_dir, dest, symlinks=True)
    return dest


@pytest.mark.slow
def test_detached_probe_worker_probes_every_checkpoint_into_the_same_run(tmp_path, detached_trained):
    run_dir = copy_of(detached_trained, tmp_path / "run")
    assert not (run_dir / "probes.jsonl").exists()  # training itself probed nothing
    # The watcher's work list is the complete checkpoints (there is no queue file).
    from boundlab.rundir.checkpoints import checkpoints
    assert [step for step, _ in checkpoints(run_dir / "checkpoints")] == [2, 4]
    assert not (run_dir / "probe_queue.jsonl").exists()
    worker = subprocess.run([sys.executable, str(ROOT / "probe.py"), f"watch={run_dir}",
                             "watch_poll_s=0.5", "watch_timeout_s=300",
                             f"hydra.run.dir={tmp_path / 'worker'}"],
                            cwd=tmp_path, env=env_for(tmp_path), capture_output=True, text=True,
                            timeout=600)
    assert worker.returncode == 0, worker.stderr[-3000:]
    assert [(r["kind"], r["step"]) for r in probes(run_dir)] == [("base", 0), ("checkpoint", 2),
                                                                 ("checkpoint", 4)]
    run_id = json.loads((run_dir / "run_info.json").read_text())["wandb_run_id"]
    run = read_offline_run(run_dir, run_id=run_id)
    assert sorted(h["probe/step"] for h in run.history if "probe/pass@1" in h) == [0, 2, 4]
    assert any("train/reward" in h for h in run.history)


def wandb_services(parent: int) -> list[int]:
    """The `wandb-core` processes `parent` started (they call setsid: not in its process group)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes().split(b"\0")[0]
        except (OSError, ValueError):
            continue
        if proc.name.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == parent \
                and cmd.endswith(b"wandb-core"):
            pids.append(int(proc.name))
    return pids


@pytest.mark.slow
def test_a_killed_watcher_restarts_and_w_and_b_holds_each_probe_once(tmp_path, detached_trained):
    """The watcher and its W&B service are SIGKILLed once probes.jsonl holds checkpoint 2's row,
    before W&B wrote it; the restarted watcher re-logs it from the run dir, and W&B (run/wandb, what
    `wandb sync` uploads) holds each probe row once."""
    run_dir = copy_of(detached_trained, tmp_path / "run")
    env = dict(env_for(tmp_path), WANDB__TRANSACTION_LOG_FLUSH_INTERVAL="0")  # no timed flush
    watch = [sys.executable, str(ROOT / "probe.py"), f"watch={run_dir}", "watch_poll_s=0.5",
             "watch_timeout_s=300"]
    first = subprocess.Popen([*watch, f"hydra.run.dir={tmp_path / 'worker1'}"], cwd=tmp_path, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 600
    try:
        while not (run_dir / "probes.jsonl").exists() or ("checkpoint", 2) not in [
                (r["kind"], r["step"]) for r in probes(run_dir)]:
            assert first.poll() is None, "the watcher ended before it probed checkpoint 2"
            assert time.time() < deadline, "the watcher never probed checkpoint 2"
            time.sleep(0.05)
        for pid in wandb_services(first.pid):
            os.kill(pid, signal.SIGKILL)
        os.killpg(first.pid, signal.SIGKILL)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    run_id = json.loads((run_dir / "run_info.json").read_text())["wandb_run_id"]
    # The state claimed: the run dir holds checkpoint 2's row, W&B's files do not.
    held = read_offline_run(run_dir, run_id=run_id).history
    assert 2 not in [h["probe/step"] for h in held if "probe/pass@1" in h]

    second = subprocess.run([*watch, f"hydra.run.dir={tmp_path / 'worker2'}"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "set aside the W&B files of the killed watcher(s)" in second.stdout + second.stderr
    assert [(r["kind"], r["step"]) for r in probes(run_dir)] == [("base", 0), ("checkpoint", 2),
                                                                 ("checkpoint", 4)]
    run = read_offline_run(run_dir / "wandb", run_id=run_id)
    assert sorted(h["probe/step"] for h in run.history if "probe/pass@1" in h) == [0, 2, 4]
    assert any("train/reward" in h for h in run.history)


@pytest.mark.slow
def test_two_job_sweep_through_submitit_local(tmp_path):
    sweep = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, str(ROOT / "train.py"), "-m", "hydra/launcher=submitit_local",
                           "algo=grpo,dr_grpo", "debug=smoke", "logger=none", "backend.torch_threads=1",
                           f"hydra.sweep.dir={sweep}"], cwd=tmp_path, env=env_for(tmp_path),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for sub in ("0_grpo", "1_dr_grpo"):
        with (sweep / sub / "boundary.csv").open() as f:
            assert [int(r["step"]) for r in csv.DictReader(f)] == [0, 2, 4]
