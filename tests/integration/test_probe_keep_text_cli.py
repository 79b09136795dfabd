"""probe.py probe.keep_text=compact end to end on the toy world: what the store keeps, and that the
same probe with every text reads the compact one back (keep_text is not part of the key)."""

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_probe(tmp_path, run_dir, *overrides):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, str(ROOT / "probe.py"), "model=toy", "task=toy_arith", "probe=toy",
           "probe.n=24", "probe.limit=12", "probe.bootstrap_iters=50", "logger=none",
           "sampler.torch_threads=1", f"hydra.run.dir={run_dir}", *overrides]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"probe.py failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_compact_probe_keeps_the_texts_readers_need_and_the_same_numbers(tmp_path):
    out = run_probe(tmp_path, tmp_path / "compact", "probe.keep_text=compact")
    assert "sampled 288 new completions" in out
    db = sqlite3.connect(tmp_path / "store.sqlite")
    rows = db.execute("SELECT problem_id, idx, text, correct, outcome, n_tokens, text_hash "
                      "FROM samples ORDER BY problem_id, idx").fetchall()
    assert len(rows) == 288
    dropped = [r for r in rows if r[6] is not None]
    assert dropped, "the toy base gets some problems wrong more than 4 times in 24"
    for pid, idx, text, correct, outcome, n_tokens, h in rows:
        if h is None:
            assert text  # kept: a real completion
        else:
            assert text == "" and not correct and outcome != "timeout" and len(h) == 8
            assert n_tokens >= 1
    wrong_kept: dict[str, int] = {}
    for pid, idx, text, correct, outcome, n_tokens, h in rows:
        if not correct:
            if h is None:
                wrong_kept[pid] = wrong_kept.get(pid, 0) + 1
            else:  # dropped only after the problem's first 4 wrong ones
                assert wrong_kept.get(pid, 0) == 4
    db.close()
    # The same probe keeping every text: same key, nothing sampled, the same curve.
    out2 = run_probe(tmp_path, tmp_path / "all", "probe.keep_text=all")
    assert "all samples came from the store" in out2
    assert (tmp_path / "compact" / "passk.csv").read_bytes() == (tmp_path / "all" / "passk.csv").read_bytes()
    # A dropped text's hash is the sha1 of the text the model wrote: sampling it again with every
    # text kept (a fresh store, the same seed) gives that text.
    pid, idx, h = next((r[0], r[1], r[6]) for r in rows if r[6] is not None)
    env_store = tmp_path / "fresh"
    env_store.mkdir()
    run_probe(env_store, env_store / "run")
    fresh = sqlite3.connect(env_store / "store.sqlite").execute(
        "SELECT text FROM samples WHERE problem_id=? AND idx=?", (pid, idx)).fetchone()[0]
    assert hashlib.sha1(fresh.encode()).digest()[:8] == bytes(h)
