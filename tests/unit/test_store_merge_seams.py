"""The merge at a cluster's seams: every column the schema has is carried (read from the schema,
so a column added later is never dropped), rows round-trip exactly, and a probe committing rows to
--out while the merge runs loses nothing (the merge takes the probe's own write lock and never
renames over --out)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from boundlab.probe import merge as merge_mod
from boundlab.probe import store as store_mod
from boundlab.probe.merge import merge_stores
from boundlab.probe.store import SampleRow, Store

TABLES = {"probes": "key", "samples": "key, problem_id, idx", "adaptive_state": "key, problem_id",
          "file_hashes": "path, size, mtime_ns"}


def _full_store(path: Path, tag: str) -> Path:
    """A store with every column of every table holding a value somewhere (strict, info, entropy,
    a compact store's text_hash, adaptive states, file hashes)."""
    s = Store(path)
    s.ensure_probe(f"k-{tag}", f"model-{tag}", "task", {"seed": 0, "t": tag}, model_name=tag, task_name="t",
                   meta={"step": 3})
    rows = [SampleRow("p1", i, f"{tag} text {i}", str(i), i == 0, i % 2 == 0, "correct" if i == 0 else "wrong",
                      10 + i, {"finish": "eos", "i": i}, None, 0.125 * (i + 1)) for i in range(7)]
    s.add_samples(f"k-{tag}", rows, keep_text="compact")  # wrong samples past the 4th: text_hash set
    s.put_adaptive_states(f"k-{tag}", [("p1", 7, 1, "certified", 2)])
    s.put_file_hash(f"/w/{tag}.safetensors", 123, 456, "ab" * 32)
    s.close()
    return path


def _rows(path: Path) -> dict[str, list[tuple]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: db.execute(f"SELECT * FROM {t} ORDER BY {pk}").fetchall() for t, pk in TABLES.items()}
    finally:
        db.close()


def _columns(path: Path, table: str) -> list[str]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    finally:
        db.close()


def test_every_column_populated_round_trips_exactly(tmp_path):
    a, b = _full_store(tmp_path / "a.sqlite", "a"), _full_store(tmp_path / "b.sqlite", "b")
    ra, rb = _rows(a), _rows(b)
    for table in TABLES:  # the fixture really populates every column the schema has
        cols = _columns(a, table)
        for j, col in enumerate(cols):
            assert any(r[j] is not None for r in ra[table]), f"{table}.{col} never set by the fixture"
    merge_stores([a, b], tmp_path / "out.sqlite")
    got = _rows(tmp_path / "out.sqlite")
    for table, pk in TABLES.items():
        assert _columns(tmp_path / "out.sqlite", table) == _columns(a, table)
        want = sorted(ra[table] + rb[table], key=repr)
        assert sorted(got[table], key=repr) == want, table  # values and their types (bytes, float)
    # Into an existing store: its own rows stay, the inputs' rows arrive the same.
    c = _full_store(tmp_path / "c.sqlite", "c")
    merge_stores([a], c)
    got = _rows(c)
    for table in TABLES:
        assert set(ra[table]) <= set(got[table])


def test_a_column_added_to_the_schema_is_carried_without_touching_the_merge(tmp_path, monkeypatch):
    # A new column on probes (in the CREATE statement) and on samples (an added column, the way
    # old stores get new columns on open): the merge knows neither by name.
    schema = store_mod._SCHEMA.replace("    meta TEXT\n);", "    meta TEXT,\n    lab TEXT\n);")
    assert schema != store_mod._SCHEMA
    monkeypatch.setattr(store_mod, "_SCHEMA", schema)
    monkeypatch.setattr(store_mod, "_ADDED_COLUMNS", store_mod._ADDED_COLUMNS + (("grade", "REAL"),))
    paths = []
    for tag in ("a", "b"):
        p = _full_store(tmp_path / f"{tag}.sqlite", tag)
        db = sqlite3.connect(p)
        db.execute("UPDATE probes SET lab=?", (f"lab-{tag}",))
        db.execute("UPDATE samples SET grade=idx * 0.5")
        db.commit()
        db.close()
        paths.append(p)
    merge_stores(paths, tmp_path / "out.sqlite")
    db = sqlite3.connect(tmp_path / "out.sqlite")
    assert db.execute("SELECT key, lab FROM probes ORDER BY key").fetchall() == [("k-a", "lab-a"), ("k-b", "lab-b")]
    assert db.execute("SELECT grade FROM samples WHERE key='k-b' ORDER BY idx").fetchall() == \
        [(i * 0.5,) for i in range(7)]
    db.close()


def test_an_input_column_that_out_lacks_is_added_to_out(tmp_path):
    out = _full_store(tmp_path / "out.sqlite", "o")
    a = _full_store(tmp_path / "a.sqlite", "a")
    db = sqlite3.connect(a)
    db.execute("ALTER TABLE samples ADD COLUMN judge TEXT")
    db.execute("UPDATE samples SET judge='j' || idx")
    db.commit()
    db.close()
    merge_stores([a], out)
    db = sqlite3.connect(out)
    assert db.execute("SELECT key, idx, judge FROM samples WHERE idx < 2 ORDER BY key, idx").fetchall() == \
        [("k-a", 0, "j0"), ("k-a", 1, "j1"), ("k-o", 0, None), ("k-o", 1, None)]
    db.close()


def test_an_unknown_table_is_refused_in_one_line(tmp_path):
    a = _full_store(tmp_path / "a.sqlite", "a")
    db = sqlite3.connect(a)
    db.execute("CREATE TABLE judgements (key TEXT PRIMARY KEY, v TEXT)")
    db.commit()
    db.close()
    with pytest.raises(store_mod.StoreError, match="table.s. judgements that this boundlab") as e:
        merge_stores([a], tmp_path / "out.sqlite")
    assert "\n" not in str(e.value) and not (tmp_path / "out.sqlite").exists()


def _live_rows(i: int) -> list[SampleRow]:
    return [SampleRow(f"q{i}", j, f"live {i}.{j}", "1", True, None, "correct", 3, None, None, 0.5)
            for j in range(3)]


def test_rows_committed_to_out_during_the_merge_are_kept(tmp_path, monkeypatch):
    out = tmp_path / "out.sqlite"
    live = Store(out)  # a probe writing to --out throughout the merge
    live.ensure_probe("live", "m", "t", {"seed": 9})
    inode, mode = out.stat().st_ino, live.db.execute("PRAGMA journal_mode").fetchone()[0]
    inputs = [_full_store(tmp_path / f"{t}.sqlite", t) for t in ("a", "b")]
    committed: list[int] = []
    stop, after_stage, more = threading.Event(), threading.Event(), threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            if live.add_samples("live", _live_rows(i)) == 3:
                committed.append(i)
            i += 1
            if after_stage.is_set() and len(committed) >= 3 and not more.is_set():
                more.set()

    real_stage = merge_mod._stage

    def stage_then_let_the_probe_commit(srcs, staged):
        got = real_stage(srcs, staged)
        n = len(committed)
        after_stage.set()
        assert more.wait(60)  # the probe commits batches after the inputs were read ...
        assert len(committed) > n
        return got  # ... and goes on committing while the merge writes --out

    monkeypatch.setattr(merge_mod, "_stage", stage_then_let_the_probe_commit)
    t = threading.Thread(target=writer)
    t.start()
    try:
        merge_stores(inputs, out)
    finally:
        stop.set()
        t.join(60)
    live.close()
    assert out.stat().st_ino == inode  # --out was written in place, not replaced
    got = _rows(out)
    keys = {(r[0], r[1], r[2]) for r in got["samples"]}
    assert {("live", f"q{i}", j) for i in committed for j in range(3)} <= keys
    for p in inputs:
        assert set(_rows(p)["samples"]) <= set(got["samples"])
    db = sqlite3.connect(out)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == mode  # left as the probe set it
    db.close()
    assert not list(tmp_path.glob("*.merging*"))


def test_an_out_locked_past_the_timeout_is_one_line_and_nothing_is_written(tmp_path, monkeypatch):
    out = _full_store(tmp_path / "out.sqlite", "o")
    a = _full_store(tmp_path / "a.sqlite", "a")
    before = _rows(out)
    holder = sqlite3.connect(out, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a probe's batch that does not end
    monkeypatch.setattr(merge_mod, "LOCK_TIMEOUT_S", 0.3)
    try:
        with pytest.raises(store_mod.StoreError) as e:
            merge_stores([a], out)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert str(e.value) == (f"--out {out} stayed locked by another process for 0.3 s; nothing was written: "
                            f"merge again when its writer is idle")
    assert _rows(out) == before and not list(tmp_path.glob("*.merging*"))
