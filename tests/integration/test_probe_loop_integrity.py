"""The checkpoint-probing loop survives crashes and never changes training (issue 10, cases 4, 5, 6, 8).

- Inline probing does not move the trainer's RNG: probe.n 4 and 8 train byte-identical weights, and a
  run SIGKILLed (the whole job, W&B's service included) after its first checkpoint probe and resumed
  ends byte-identical to the run never killed. W&B's service (`wandb-core`, which runs in a session of
  its own, so a kill of the job's process group misses it) is frozen with SIGSTOP as soon as the run
  is created: whatever it had not written by then is lost for certain when the kill comes, on a busy
  machine or an idle one.
- The resume survives a torn last line in probes.jsonl, and puts back the train/* metrics and the
  probe rows the kill took out of the offline W&B run, deciding from the run dir's own records: the
  checkpoint probe row reached probes.jsonl but never W&B's file. W&B (what `wandb sync` uploads from
  run/wandb) then holds every probe row and every training step once, as the run never killed does.
- save_total_limit never drops an unprobed checkpoint: inline, old ones go as soon as they are probed;
  detached, training keeps them until the watcher has probed them, and the watcher deletes them.

The three training runs of the first test run at the same time (one torch thread each) to keep the
wall time small; each has its own store, so none reuses another's samples.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boundlab.tracking.reader import read_offline_run
from boundlab.rundir.checkpoints import checkpoints

ROOT = Path(__file__).resolve().parents[2]
# The first edition (experiment=toy1): its probes are the shortest.
# The first toy model holds 64 positions: debug=smoke's 80 new tokens (sized for the second world's
# traces) would be refused in one line (training/context_fit.py), so these runs take 32.
SMOKE = ["experiment=toy1", "debug=smoke", "train.max_steps=6", "backend.torch_threads=1",
         "probe.max_new_tokens=32", "algo.max_completion_length=32"]


def env_for(d: Path) -> dict[str, str]:
    return dict(os.environ, BOUNDLAB_STORE=str(d / "store.sqlite"), WANDB_MODE="offline",
                HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true")


def start(d: Path, *args: str, **kw) -> subprocess.Popen:
    d.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, *args], cwd=d, env=env_for(d), text=True, **kw)


def finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{out[-3000:]}\n{err[-5000:]}"
    return out + err


def wandb_services(parent: int) -> list[int]:
    """The `wandb-core` processes that `parent` started (they call setsid: not in its process group)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:  # gone meanwhile
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and cmd.endswith(b"wandb-core"):
            pids.append(int(proc.name))
    return pids


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows(run_dir: Path) -> list[tuple[str, int]]:
    # Strict parse: every line of the file must be a whole JSON row.
    return [(r["kind"], r["step"]) for r in map(json.loads, (run_dir / "probes.jsonl").read_text().splitlines())]


def train_steps_in_wandb(run_dir: Path, run_id: str) -> set[int]:
    return {int(h["train/global_step"]) for h in read_offline_run(run_dir, run_id=run_id).history
            if "train/reward" in h}


def wandb_rows(run_dir: Path) -> tuple[list[tuple], list[tuple]]:
    """(probe rows, training rows) that W&B holds under run_dir/wandb (what `wandb sync` uploads),
    in logged order: (kind, step, pass@1) and (step, reward, loss)."""
    history = read_offline_run(run_dir / "wandb").history
    probe = [("checkpoint" if "probe/delta/pass@1" in h else "base", h["probe/step"], h["probe/pass@1"])
             for h in history if "probe/pass@1" in h]
    probe += [("null", h["probe/step"], None) for h in history if "probe/null/lost" in h]
    train = [(h["train/global_step"], h["train/reward"], h.get("train/loss")) for h in history
             if "train/reward" in h]
    return probe, train


@pytest.mark.slow
def test_inline_probe_never_changes_training_and_a_killed_run_resumes_identically(tmp_path):
    train = str(ROOT / "train.py")
    a, c, b = tmp_path / "a", tmp_path / "c", tmp_path / "b"
    pipe = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # a: the reference; c: the same seed with probe.n=8 (and rotation to one checkpoint);
    # b: killed after its first checkpoint probe, then resumed.
    pa = start(a, train, *SMOKE, "probe.n=4", f"hydra.run.dir={a / 'run'}", **pipe)
    pc = start(c, train, *SMOKE, "probe.n=8", "train.save_total_limit=1", f"hydra.run.dir={c / 'run'}",
               **pipe)
    pb = start(b, train, *SMOKE, "probe.n=4", f"hydra.run.dir={b / 'run'}",
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    run_b = b / "run"
    deadline = time.time() + 600
    # run_info.json names the W&B run once wandb.init has returned; from then on the client only
    # sends to the service, and the frozen service writes nothing more to the offline run file.
    while not (run_b / "run_info.json").exists():
        assert pb.poll() is None, "run b ended before it created its W&B run"
        assert time.time() < deadline, "run b never created its W&B run"
        time.sleep(0.02)
    services = wandb_services(pb.pid)
    assert len(services) == 1, f"expected one wandb-core child of run b, found {services}"
    os.kill(services[0], signal.SIGSTOP)
    while not any(k == "checkpoint" for k, _ in _tolerant_rows(run_b)):
        assert pb.poll() is None, "run b ended before its first checkpoint probe"
        assert time.time() < deadline, "run b never probed a checkpoint"
        time.sleep(0.05)
    assert pb.poll() is None, "run b finished before it could be killed"
    os.killpg(pb.pid, signal.SIGKILL)  # the whole job, as a crash or a preemption does
    os.kill(services[0], signal.SIGKILL)
    pb.wait()
    assert not (run_b / "training_done").exists()
    resume_ckpt = checkpoints(run_b / "checkpoints")[-1]
    assert resume_ckpt[0] < 6
    run_id = json.loads((run_b / "run_info.json").read_text())["wandb_run_id"]
    state = json.loads((resume_ckpt[1] / "trainer_state.json").read_text())
    logged_steps = {e["step"] for e in state["log_history"] if "reward" in e}
    lost = logged_steps - train_steps_in_wandb(run_b, run_id)
    assert lost, "the kill lost no W&B training rows: nothing to re-log"
    # The state claimed: a checkpoint's probe row is in probes.jsonl, not in W&B's file.
    killed_probes = [h for h in read_offline_run(run_b, run_id=run_id).history if "probe/pass@1" in h]
    assert ("checkpoint", 2) in _tolerant_rows(run_b) and not [h for h in killed_probes if h["probe/step"] == 2]
    # A kill (or a full disk) in the middle of an append leaves a torn last line.
    n_rows = len(rows(run_b))
    with (run_b / "probes.jsonl").open("a") as f:
        f.write('{"step": 6, "kind": "checkpo')

    out_a, out_c = finish(pa), finish(pc)
    resumed = finish(start(b, train, *SMOKE, "probe.n=4", f"resume={run_b}", **pipe))

    ref = sha(a / "run" / "checkpoints" / "checkpoint-6" / "model.safetensors")
    assert sha(c / "run" / "checkpoints" / "checkpoint-6" / "model.safetensors") == ref
    assert sha(run_b / "checkpoints" / "checkpoint-6" / "model.safetensors") == ref

    assert (f"[boundlab] {run_b / 'probes.jsonl'}:{n_rows + 1}: skipped a torn last line (28 bytes, cut "
            f"off by a crash or a full disk) and rewrote the file without it") in resumed
    expected = [("base", 0), ("checkpoint", 2), ("checkpoint", 4), ("checkpoint", 6)]
    assert rows(run_b) == expected and rows(a / "run") == expected and rows(c / "run") == expected
    # Inline rotation: each old checkpoint went once it was probed.
    assert [s for s, _ in checkpoints(c / "run" / "checkpoints")] == [6]
    assert "not probed yet" not in out_c and "not probed yet" not in out_a

    assert (f"[boundlab] re-logged train/* metrics at steps {sorted(logged_steps)} (from "
            f"{resume_ckpt[1] / 'trainer_state.json'}) that no closed W&B segment holds") in resumed
    assert "[boundlab] set aside the W&B files of the killed process(es) (wandb_killed/offline-run-" in resumed
    assert train_steps_in_wandb(run_b / "wandb", run_id) == set(range(1, 7))
    # W&B holds what it holds for the run never killed: each probe row and training step once, with
    # the same values (the weights are byte-identical, so are the probes and the rewards).
    probe_b, train_b = wandb_rows(run_b)
    probe_a, train_a = wandb_rows(a / "run")
    assert sorted(probe_b) == sorted(probe_a) and len(probe_a) == len(set(probe_a)) == len(expected)
    assert sorted(train_b) == sorted(train_a) and [t[0] for t in sorted(train_a)] == list(range(1, 7))


def _tolerant_rows(run_dir: Path) -> list[tuple[str, int]]:
    from boundlab.rundir.io import read_jsonl

    return [(r["kind"], r["step"]) for r in read_jsonl(run_dir / "probes.jsonl")]


@pytest.mark.slow
def test_detached_rotation_waits_for_the_watcher(tmp_path):
    run_dir = tmp_path / "run"
    out = finish(start(tmp_path, str(ROOT / "train.py"), *SMOKE, "train.probe_mode=detached",
                       "train.save_total_limit=1", f"hydra.run.dir={run_dir}",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    # HF would have deleted checkpoint-2 and -4 inside its saves; nothing was probed yet.
    assert [s for s, _ in checkpoints(run_dir / "checkpoints")] == [2, 4, 6]
    assert ("[boundlab] save_total_limit=1: keeping 3 checkpoints; steps [2, 4] are not probed yet "
            "and are deleted once they are") in out
    finish(start(tmp_path, str(ROOT / "probe.py"), f"watch={run_dir}", "watch_poll_s=0.5",
                 "watch_timeout_s=300", f"hydra.run.dir={tmp_path / 'worker'}",
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    assert rows(run_dir) == [("base", 0), ("checkpoint", 2), ("checkpoint", 4), ("checkpoint", 6)]
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("checkpoint-*")) == ["checkpoint-6"]
