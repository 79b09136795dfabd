"""Readers never write: report.py and the dashboard open a store `mode=ro` and leave its bytes,
its journal mode and its folder as they found them; a store that needs a migration says so in one
line naming the command, and that command (`python -m boundlab.probe.store migrate PATH`) works."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.errors import StoreError
from boundlab.probe.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _journal(path: Path) -> str:
    """From the file header (bytes 18-19: 2 = WAL), so looking does not open a connection."""
    head = path.read_bytes()[:20]
    return "wal" if head[18] == 2 and head[19] == 2 else "rollback"


def _state(path: Path) -> tuple:
    return (hashlib.sha256(path.read_bytes()).hexdigest(), _journal(path), path.stat().st_mtime_ns,
            sorted(p.name for p in path.parent.glob(path.name + "*")))


def _to_rollback(path: Path) -> None:
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    db.close()


@pytest.mark.parametrize("journal", ["wal", "rollback"])
def test_the_report_leaves_the_store_as_it_was(tmp_path, journal):
    from test_report_sections import report_cfg

    from boundlab.report.build import run

    cfg = report_cfg(tmp_path)
    store = Path(cfg.store.path)
    if journal == "rollback":  # a merged store on a network file system
        _to_rollback(store)
    assert _journal(store) == journal and not Path(f"{store}-wal").exists()
    before = _state(store)
    md = run(cfg)
    assert md.is_file() and "step 4" in md.read_text()
    assert _state(store) == before  # bytes, journal mode, mtime, no -wal/-shm/-journal left


@pytest.mark.parametrize("journal", ["wal", "rollback"])
def test_the_dashboards_data_loading_leaves_the_store_as_it_was(tmp_path, monkeypatch, journal):
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient

    from boundlab.dashboard.index import Index
    from boundlab.dashboard.server import make_app
    from boundlab.dashboard.synthetic import make_run

    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "s").mkdir()
    path = tmp_path / "s" / "store.sqlite"
    w = Store(path)
    make_run(tmp_path / "runs" / "run", w, checkpoints=2, problems=5, n=4)
    w.close()
    if journal == "rollback":
        _to_rollback(path)
    before = _state(path)
    index = Index([tmp_path / "runs"], store=str(path))
    client = TestClient(make_app(index), base_url="http://127.0.0.1:8050")  # the server answers loopback names only
    m = client.get("/api/run/0/problems").json()
    assert len(m["problems"]) == 5 and len(m["columns"]) == 3
    assert client.get("/api/run/0/overview").status_code == 200
    index.prewarm()  # its own connections, opened and closed while the index's is open
    index.close()
    assert _state(path) == before


def test_a_reader_does_not_migrate_and_names_the_command(tmp_path):
    path = tmp_path / "old.sqlite"
    s = Store(path)
    s.ensure_probe("k", "m", "t", {"seed": 0})
    s.close()
    db = sqlite3.connect(path)  # a store from before probes.meta existed
    db.execute("ALTER TABLE probes DROP COLUMN meta")
    db.commit()
    db.close()
    before = _state(path)
    with pytest.raises(StoreError) as e:
        Store(path, writable=False)
    msg = str(e.value)
    assert "\n" not in msg and "probes.meta" in msg and f"python -m boundlab.probe.store migrate {path}" in msg
    assert _state(path) == before
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, "-m", "boundlab.probe.store", "migrate", str(path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "probes.meta" in done.stdout and _journal(path) == before[1]  # journal mode kept
    ro = Store(path, writable=False)
    assert [p["key"] for p in ro.list_probes()] == ["k"]
    ro.close()
    bad = subprocess.run([sys.executable, "-m", "boundlab.probe.store", "migrate", str(tmp_path / "no.sqlite")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert (bad.returncode, bad.stderr) == (2, f"error: no probe store at {tmp_path / 'no.sqlite'}\n")


def test_a_reader_sees_a_writers_commits_and_writes_nothing(tmp_path):
    path = tmp_path / "store.sqlite"
    w = Store(path)
    w.ensure_probe("k", "m", "t", {"seed": 0})
    ro = Store(path, writable=False)
    w.ensure_probe("k2", "m", "t", {"seed": 1})  # committed while the reader is open
    assert [p["key"] for p in ro.list_probes()] == ["k", "k2"]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        ro.db.execute("INSERT INTO probes (key, model_fp, task_fp, settings) VALUES ('x','m','t','{}')")
    ro.put_file_hash("/w", 1, 2, "ab")  # a cache put on a reader keeps nothing, raises nothing
    assert ro.get_file_hash("/w", 1, 2) is None
    ro.close()
    w.close()
    assert sorted(os.listdir(tmp_path)) == ["store.sqlite"]


def test_an_empty_file_reads_as_an_empty_store_and_stays_empty(tmp_path):
    path = tmp_path / "store.sqlite"
    path.touch()
    ro = Store(path, writable=False)
    assert ro.list_probes() == [] and ro.counts("k") == [] and ro.samples("k") == []
    assert ro.adaptive_states("k") == {} and ro.get_file_hash("/w", 1, 2) is None
    ro.close()
    assert path.stat().st_size == 0 and sorted(os.listdir(tmp_path)) == ["store.sqlite"]
    junk = tmp_path / "junk.sqlite"
    db = sqlite3.connect(junk)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="is not a probe store"):
        Store(junk, writable=False)
