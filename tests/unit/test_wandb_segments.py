"""The run dir's W&B segment records (boundlab.tracking.segments): what a resume re-logs is decided
from them alone; W&B's own files are only read back here, to check what W&B ended up holding."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from boundlab.rundir import PROBES_FILE
from boundlab.rundir.io import append_jsonl, read_jsonl
from boundlab.tracking import build_logger
from boundlab.tracking.reader import find_run_files, read_offline_run
from boundlab.tracking.segments import Segment, read_segments, resume_plan, set_aside

pytest.importorskip("wandb")


def _segment(run_dir: Path, name: str, role: str = "train", from_step: int = 0, mode: str = "offline"):
    sync_dir = run_dir / "wandb" / name
    (sync_dir / "files").mkdir(parents=True)
    return Segment(run_dir, sync_dir, "rid", mode, role, from_step)


def test_the_plan_keeps_closed_segments_and_sets_killed_trainers_aside(tmp_path):
    run = tmp_path / "run"
    first = _segment(run, "offline-run-1")  # Ctrl-C at step 4: finished, so its file is complete
    first.note_probe("base", 0)
    first.note_probe("checkpoint", 2)
    first.note_train_to(4)
    first.close()
    killed = _segment(run, "offline-run-2", from_step=4)  # SIGKILLed: what its file holds is unknown
    killed.note_probe("checkpoint", 6)
    watcher = _segment(run, "offline-run-3", role="probe")  # a probe worker, maybe still alive
    watcher.note_probe("checkpoint", 8)

    plan = resume_plan(run)
    assert [s["segment"] for s in plan.killed] == ["offline-run-2"] and not plan.legacy
    assert plan.held_probes == {("base", 0), ("checkpoint", 2), ("checkpoint", 8)}
    assert plan.probe_missing("checkpoint", 6) and plan.probe_missing("null", 0)
    assert not plan.probe_missing("base", 0)
    assert [s for s in range(1, 9) if plan.train_missing(s)] == [5, 6, 7, 8]

    assert set_aside(run, plan.killed) == ["wandb_killed/offline-run-2"]
    assert not (run / "wandb" / "offline-run-2").exists()
    assert (run / "wandb_killed" / "offline-run-2" / "files").is_dir()
    # The record says so, and the next resume neither sets it aside again nor counts its rows.
    again = resume_plan(run)
    assert again.killed == [] and again.held_probes == plan.held_probes

    # A resume from checkpoint 6 that logs steps 5 and 6 again, then trains to 8 and finishes.
    resumed = _segment(run, "offline-run-4", from_step=6)
    resumed.note_train_relogged([5, 6])
    resumed.note_train_to(8)
    resumed.close()
    assert [s for s in range(1, 11) if resume_plan(run).train_missing(s)] == [9, 10]
    # Every record is strict JSON.
    for f in (run / "wandb_segments").glob("*.json"):
        json.loads(f.read_text(), parse_constant=lambda c: pytest.fail(f"{f}: {c}"))


def test_a_restarted_watcher_sets_aside_killed_watchers_only(tmp_path):
    run = tmp_path / "run"
    trainer = _segment(run, "offline-run-1")  # training on (detached): open, alive
    trainer.note_probe("base", 0)  # (a detached trainer logs none; held either way)
    dead = _segment(run, "offline-run-2", role="probe")  # the killed watcher
    dead.note_probe("checkpoint", 2)
    done = _segment(run, "offline-run-3", role="probe")  # an earlier watcher that finished
    done.note_probe("checkpoint", 4)
    done.close()
    plan = resume_plan(run, role="probe")
    assert [s["segment"] for s in plan.killed] == ["offline-run-2"]
    assert plan.held_probes == {("base", 0), ("checkpoint", 4)}
    # The trainer's own resume never sets a watcher's segment aside (it may be alive).
    assert resume_plan(run).killed == [trainer.data]


def test_an_online_segment_is_never_set_aside(tmp_path):
    run = tmp_path / "run"
    online = _segment(run, "run-1", mode="online")
    online.note_probe("base", 0)
    plan = resume_plan(run)
    assert plan.killed == [] and plan.held_probes == {("base", 0)}


def test_w_and_b_files_without_records_are_a_legacy_run_dir(tmp_path):
    (tmp_path / "run" / "wandb" / "offline-run-x").mkdir(parents=True)
    assert resume_plan(tmp_path / "run").legacy
    assert not resume_plan(tmp_path / "fresh").legacy


CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from boundlab.rundir.io import append_jsonl
    from boundlab.tracking import build_logger

    run_dir = Path(sys.argv[1])
    logger = build_logger({"name": "wandb", "system_stats": False}, run_dir, {"seed": 1})
    logger.define_step_metric("probe", "probe/step")
    logger.open_segment("train")
    for step in (0, 2, 4):
        row = {"kind": "base" if step == 0 else "checkpoint", "step": step, "pass@1": step / 10}
        append_jsonl(run_dir / "probes.jsonl", row)            # the run dir has the row ...
        logger.log({"probe/pass@1": row["pass@1"], "probe/step": step})
        logger.segment.note_probe(row["kind"], step)            # ... and W&B was handed it
    print(logger.run_id, flush=True)
    # W&B's service (wandb-core) runs in a session of its own: kill it first, then this process,
    # so nothing it buffered reaches the disk.
    for proc in Path("/proc").iterdir():
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (proc / "cmdline").read_bytes().split(b"\\0")[0]
        except (OSError, ValueError):
            continue
        if ppid == os.getpid() and cmd.endswith(b"wandb-core"):
            os.kill(int(proc.name), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def _log_row(logger, row):
    logger.log({"probe/pass@1": row["pass@1"], "probe/step": row["step"]})
    logger.segment.note_probe(row["kind"], row["step"])


def test_a_hard_kill_after_the_run_dir_has_a_row_w_and_b_never_flushed(tmp_path):
    """Real W&B, offline, killed with its service (SIGKILL to both) right after three
    probe rows reached probes.jsonl and were handed to W&B; W&B's buffer never reached disk. The
    resume re-logs from the run dir and W&B then holds each row once."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "WANDB_SERVICE"}
    # No timed flush: W&B writes only when its 32 KiB buffer fills or the run finishes.
    env["WANDB__TRANSACTION_LOG_FLUSH_INTERVAL"] = "0"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(run_dir)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    run_id = proc.stdout.split()[0]
    rows = read_jsonl(run_dir / PROBES_FILE)
    assert [r["step"] for r in rows] == [0, 2, 4]
    # The state claimed: the run dir holds the rows, W&B's file does not.
    [killed_file] = find_run_files(run_dir)
    try:
        held = read_offline_run(killed_file).history
    except ValueError:  # nothing but part of the header reached the disk
        held = []
    assert not [h for h in held if "probe/pass@1" in h], held

    def resume():
        plan = resume_plan(run_dir)
        set_aside(run_dir, plan.killed)
        logger = build_logger({"name": "wandb", "run_id": run_id, "system_stats": False}, run_dir, {"seed": 1})
        logger.define_step_metric("probe", "probe/step")
        logger.open_segment("train")
        relogged = [r["step"] for r in read_jsonl(run_dir / PROBES_FILE) if plan.probe_missing(r["kind"], r["step"])]
        for r in read_jsonl(run_dir / PROBES_FILE):
            if plan.probe_missing(r["kind"], r["step"]):
                _log_row(logger, r)
        logger.finish()
        return relogged

    assert resume() == [0, 2, 4]
    assert resume() == []  # the first resume closed its segment: it holds every row
    run = read_offline_run(run_dir / "wandb", run_id=run_id)
    assert run.series("probe/pass@1", "probe/step") == ([0, 2, 4], [0.0, 0.2, 0.4])
    assert [s["closed"] for s in read_segments(run_dir) if not s.get("set_aside")] == [True, True]
    assert (run_dir / "wandb_killed").is_dir()
