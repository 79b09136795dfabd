"""probe.py end to end: a tiny model built in the test, a real task, files, store and W&B."""

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boundlab.tracking.reader import read_offline_run

ROOT = Path(__file__).resolve().parents[2]


def run_probe(tmp_path, *overrides, check=True, env_extra=None):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    env.update(env_extra or {})
    cmd = [sys.executable, str(ROOT / "probe.py"), *overrides]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"probe.py failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def tiny_args(tiny_lm, run_dir, n=8, extra=()):
    return ["model=hf", f"model.path={tiny_lm}", "model.name=tiny", "task=aime24", "probe.limit=3",
            "task.chat=false", f"probe.n={n}", "probe.max_new_tokens=12", "probe.bootstrap_iters=100",
            "sampler.batch_size=8", "sampler.torch_threads=1", f"hydra.run.dir={run_dir}", *extra]


def test_probe_tiny_model_writes_curves_store_and_wandb(tmp_path, tiny_lm):
    run_dir = tmp_path / "run1"
    proc = run_probe(tmp_path, *tiny_args(tiny_lm, run_dir))
    assert "pass@1" in proc.stdout and "pass@8" in proc.stdout
    with (run_dir / "passk.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["k"]) for r in rows] == list(range(1, 9))
    assert set(rows[0]) == {"k", "pass_at_k", "ci_low", "ci_high"}
    for r in rows:
        assert float(r["ci_low"]) <= float(r["pass_at_k"]) + 1e-12 <= float(r["ci_high"]) + 2e-12
    with (run_dir / "problems.csv").open() as f:
        probs = list(csv.DictReader(f))
    assert [p["problem_id"] for p in probs] == ["aime24-0", "aime24-1", "aime24-2"]
    assert all(int(p["n"]) == 8 for p in probs)
    assert (run_dir / "passk.png").stat().st_size > 1000

    db = sqlite3.connect(tmp_path / "store.sqlite")
    n_samples, = db.execute("SELECT COUNT(*) FROM samples").fetchone()
    assert n_samples == 24
    text, n_tokens, outcome = db.execute("SELECT text, n_tokens, outcome FROM samples LIMIT 1").fetchone()
    assert isinstance(text, str) and 1 <= n_tokens <= 12 and outcome

    run = read_offline_run(run_dir)
    logged = [h for h in run.history if "probe/pass@1" in h]
    assert logged, run.history
    assert logged[0]["probe/step"] == 0
    assert logged[0]["probe/pass@1"] == pytest.approx(float(rows[0]["pass_at_k"]), abs=1e-9)
    assert logged[0]["probe/pass@8"] == pytest.approx(float(rows[-1]["pass_at_k"]), abs=1e-9)
    assert any("probe/problems" in h for h in run.history)
    assert run.config["task"]["name"] == "aime24"

    # Same command again: everything comes from the store; raising n samples only what is missing.
    proc = run_probe(tmp_path, *tiny_args(tiny_lm, tmp_path / "run2"))
    assert "nothing new to sample" in proc.stdout
    proc = run_probe(tmp_path, *tiny_args(tiny_lm, tmp_path / "run3", n=12))
    assert "sampled 12 new completions" in proc.stdout
    counts = db.execute("SELECT problem_id, COUNT(*), COUNT(DISTINCT idx) FROM samples GROUP BY problem_id").fetchall()
    assert counts == [("aime24-0", 12, 12), ("aime24-1", 12, 12), ("aime24-2", 12, 12)]


def test_probe_killed_midway_resumes_without_duplicates(tmp_path, tiny_lm):
    store = tmp_path / "store.sqlite"
    n = 48
    args = tiny_args(tiny_lm, tmp_path / "run_killed", n=n, extra=["probe.max_new_tokens=24",
                                                                  "sampler.batch_size=4",
                                                                  "logger=none"])
    env = dict(os.environ, BOUNDLAB_STORE=str(store), HF_HUB_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, str(ROOT / "probe.py"), *args], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    stored = 0
    while time.time() < deadline:
        time.sleep(0.2)
        if store.exists():
            try:
                stored = sqlite3.connect(store).execute("SELECT COUNT(*) FROM samples").fetchone()[0]
            except sqlite3.OperationalError:
                continue
            if stored >= 12:
                break
        assert proc.poll() is None, "probe finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    db = sqlite3.connect(store)
    mid = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert 0 < mid < 3 * n, mid

    done = run_probe(tmp_path, *args)
    assert f"sampled {3 * n - mid} new completions" in done.stdout
    rows = db.execute("SELECT problem_id, COUNT(*), COUNT(DISTINCT idx), MIN(idx), MAX(idx) "
                      "FROM samples GROUP BY problem_id").fetchall()
    assert rows == [(f"aime24-{i}", n, n, 0, n - 1) for i in range(3)]


def test_export_then_score_external_samples(tmp_path):
    out = tmp_path / "prompts.jsonl"
    run_probe(tmp_path, "task=aime24", "probe.limit=3", f"export={out}", "task.chat=false",
              f"hydra.run.dir={tmp_path / 'exp'}")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["problem_id"] for x in lines] == ["aime24-0", "aime24-1", "aime24-2"]
    assert "\\boxed{}" in lines[0]["prompt"] and lines[0]["answer"] == "204"

    samples = tmp_path / "samples.jsonl"
    with samples.open("w") as f:
        for i in range(4):  # aime24-0: 4 samples, 2 right
            f.write(json.dumps({"problem_id": "aime24-0", "completion": f"\\boxed{{{204 if i < 2 else 7}}}"}) + "\n")
        for i in range(3):  # aime24-1: 3 samples, none right
            f.write(json.dumps({"problem_id": "aime24-1", "completion": "so the answer is 1."}) + "\n")
    run_dir = tmp_path / "scored"
    proc = run_probe(tmp_path, "task=aime24", f"samples={samples}", "logger=none",
                     f"hydra.run.dir={run_dir}")
    assert "smallest n, k = 3" in proc.stdout
    assert "2 of 30 problems have samples" in proc.stdout
    with (run_dir / "passk.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3
    # pass@1 = mean(2/4, 0/3) = 0.25; pass@3 = mean(1 - C(2,3)/C(4,3), 0) = 0.5
    assert float(rows[0]["pass_at_k"]) == pytest.approx(0.25)
    assert float(rows[2]["pass_at_k"]) == pytest.approx(0.5)
    with (run_dir / "problems.csv").open() as f:
        assert list(csv.reader(f)) == [["problem_id", "n", "c"], ["aime24-0", "4", "2"], ["aime24-1", "3", "0"]]

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"problem_id": "aime24-0", "completion": "x"}) + "\n{oops\n")
    proc = run_probe(tmp_path, "task=aime24", f"samples={bad}", "logger=none", check=False,
                     env_extra={})
    assert proc.returncode == 2
    assert f"{bad}:2: bad JSON" in proc.stderr
