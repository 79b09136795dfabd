"""probe.py with probe.adaptive=true on the toy world (issue 21): killed mid-round (SIGKILL), it
resumes with nothing lost or sampled twice; the per-problem table shows uneven n and why each
problem stopped; the W&B table carries the same columns."""

from __future__ import annotations

import csv
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from boundlab.tracking.reader import read_offline_run

ROOT = Path(__file__).resolve().parents[2]
P, N0, N = 40, 8, 64
ARGS = ["model=toy", "task=toy_arith", "probe=toy", "probe.adaptive=true", f"probe.n={N}",
        f"probe.n0={N0}", f"probe.limit={P}", "probe.bootstrap_iters=50", "sampler.batch_size=16",
        "sampler.torch_threads=1"]


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
                HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true")


def _stored(store: Path) -> int:
    try:
        return sqlite3.connect(store).execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_adaptive_probe_killed_mid_round_resumes_and_shows_uneven_n(tmp_path):
    store = tmp_path / "store.sqlite"
    proc = subprocess.Popen([sys.executable, str(ROOT / "probe.py"), *ARGS, "logger=none",
                             f"hydra.run.dir={tmp_path / 'killed'}"], cwd=tmp_path,
                            env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Past the first round (n0 for every problem) and 3 batches into the next: mid-round.
    deadline = time.time() + 300
    while _stored(store) <= P * N0 + 16 * 3:
        assert proc.poll() is None, "probe finished before it could be killed"
        assert time.time() < deadline, "probe never got past its first round"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    mid = _stored(store)
    run_dir = tmp_path / "resumed"
    done = subprocess.run([sys.executable, str(ROOT / "probe.py"), *ARGS,
                           f"hydra.run.dir={run_dir}"], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    with (run_dir / "problems.csv").open() as f:
        rows = list(csv.DictReader(f))
    n = {r["problem_id"]: int(r["n"]) for r in rows}
    total = sum(n.values())
    assert mid < total, (mid, total)
    assert f"sampled {total - mid} new completions" in done.stdout  # nothing sampled twice
    db = sqlite3.connect(store)
    got = db.execute("SELECT problem_id, COUNT(*), COUNT(DISTINCT idx), MIN(idx), MAX(idx) "
                     "FROM samples GROUP BY problem_id").fetchall()
    assert got == [(pid, n[pid], n[pid], 0, n[pid] - 1) for pid in sorted(n)]  # nothing lost
    # Uneven n, with the reason: certified early below the cap, or the cap.
    assert {r["stop"] for r in rows} == {"certified", "cap"}
    assert all(int(r["n"]) < N for r in rows if r["stop"] == "certified")
    assert all(int(r["n"]) == N for r in rows if r["stop"] == "cap")
    assert "adaptive (n0=8, cap=64" in done.stdout and f"{total} samples vs {P * N} fixed-n" in done.stdout
    run = read_offline_run(run_dir)
    assert any("probe/problems" in h for h in run.history)
    logged = next(h for h in run.history if "probe/pass@1" in h)
    assert logged["probe/adaptive/samples"] == total
    assert logged["probe/adaptive/certified"] == sum(r["stop"] == "certified" for r in rows)
    # Run again: everything is in the store. The prediction beyond n has its own file and line.
    again = subprocess.run([sys.executable, str(ROOT / "probe.py"), *ARGS, "logger=none",
                            "probe.predict_k=256", f"hydra.run.dir={tmp_path / 'again'}"],
                           cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0 and "nothing new to sample" in again.stdout, again.stderr
    assert (tmp_path / "again" / "problems.csv").read_text() == (run_dir / "problems.csv").read_text()
    assert (tmp_path / "again" / "passk.csv").read_text() == (run_dir / "passk.csv").read_text()
    with (tmp_path / "again" / "passk_predicted.csv").open() as f:
        pred = list(csv.DictReader(f))
    assert [int(r["k"]) for r in pred] == [128, 256]
    assert all(0 <= float(r["ci_low"]) <= float(r["predicted_pass_at_k"]) <= float(r["ci_high"]) <= 1
               for r in pred)
    assert "predicted, not measured (beta-binomial fit" in again.stdout
