"""Probe archives (boundlab.probe.archive): a store's probes carried between machines in git.
Every column of every carried sample comes back exactly; an update never loses a sample the old
archive held; a damaged or conflicting archive is one line and changes nothing."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.errors import StoreError
from boundlab.probe.archive import pack, unpack
from boundlab.probe.merge import MergeConflict
from boundlab.probe.store import SampleRow, Store

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_COLS = "key, problem_id, idx"


def _store(path: Path, tags=("a", "b"), n=7, other_text=False) -> Path:
    """A store with probes `tags`, every sample column populated somewhere (strict, info, entropy,
    a compact store's text_hash), adaptive states and a file hash."""
    s = Store(path)
    for tag in tags:
        s.ensure_probe(f"probe-{tag}-0123", f"model-{tag}", "task", {"seed": 0, "t": tag}, model_name=tag,
                       task_name="t", meta={"step": 3})
        rows = [SampleRow("p1", i, f"{tag} text {i}{' other' if other_text else ''}", str(i), i == 0,
                          i % 2 == 0, "correct" if i == 0 else "wrong", 10 + i, {"finish": "eos", "i": i}, None,
                          0.125 * (i + 1)) for i in range(n)]
        s.add_samples(f"probe-{tag}-0123", rows, keep_text="compact")
        s.put_adaptive_states(f"probe-{tag}-0123", [("p1", n, 1, "certified", 2)])
    s.put_file_hash("/w/x.safetensors", 123, 456, "ab" * 32)
    s.close()
    return path


def _rows(path: Path, table: str, order: str) -> list[tuple]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
    finally:
        db.close()


def test_pack_then_unpack_restores_every_column_of_the_chosen_probes(tmp_path):
    src = _store(tmp_path / "src.sqlite")
    before = src.read_bytes()
    report = pack(src, ["a"], tmp_path / "arc" / "a.sqlite.xz")
    assert src.read_bytes() == before  # the store is read, never written
    assert report["probes"] == {"probe-a-0123": {"model_name": "a", "samples": 7}}
    want = [r for r in _rows(src, "samples", SAMPLE_COLS) if r[0] == "probe-a-0123"]
    assert any(r[-2] is not None for r in want) and any(r[-2] is None for r in want)  # hashes and texts
    unpack(tmp_path / "arc" / "a.sqlite.xz", tmp_path / "new.sqlite")
    assert _rows(tmp_path / "new.sqlite", "samples", SAMPLE_COLS) == want  # values and their types
    assert _rows(tmp_path / "new.sqlite", "probes", "key") == [r for r in _rows(src, "probes", "key")
                                                               if r[0] == "probe-a-0123"]
    # Not carried: the adaptive record (recomputed from the samples) and this machine's file hashes.
    assert _rows(tmp_path / "new.sqlite", "adaptive_state", "key") == []
    assert _rows(tmp_path / "new.sqlite", "file_hashes", "path") == []
    # The restored store is an ordinary store: the probe continues from its counts.
    s = Store(tmp_path / "new.sqlite")
    assert {c.problem_id: (c.n, c.c) for c in s.counts("probe-a-0123")} == {"p1": (7, 1)}
    s.close()


def test_unpacking_twice_changes_nothing_and_a_differing_sample_is_refused(tmp_path):
    arc = tmp_path / "a.sqlite.xz"
    pack(_store(tmp_path / "src.sqlite"), ["a"], arc)
    into = tmp_path / "store.sqlite"
    unpack(arc, into)
    rows = _rows(into, "samples", SAMPLE_COLS)
    again = unpack(arc, into)
    assert again["written"]["samples"] == 0 and again["written"]["duplicates"] == 7
    assert _rows(into, "samples", SAMPLE_COLS) == rows
    # A store that sampled the same probe independently (other texts under the same indices).
    other = _store(tmp_path / "other.sqlite", tags=("a",), other_text=True)
    other_bytes = other.read_bytes()
    with pytest.raises(MergeConflict, match="differs"):
        unpack(arc, other)
    assert other.read_bytes() == other_bytes


def test_an_update_must_contain_the_old_archive(tmp_path):
    arc = tmp_path / "a.sqlite.xz"
    pack(_store(tmp_path / "small.sqlite", n=3), ["a"], arc)
    # The probe grew (same samples, more of them): packing again replaces the archive.
    grown = _store(tmp_path / "grown.sqlite", n=7)
    assert pack(grown, ["a"], arc)["probes"]["probe-a-0123"]["samples"] == 7
    # A store holding fewer samples than the archive: refused, the archive left as it was.
    old = arc.read_bytes()
    with pytest.raises(StoreError, match="holds samples that"):
        pack(tmp_path / "small.sqlite", ["a"], arc)
    assert arc.read_bytes() == old
    # A store with other samples under the same indices: a conflict, the archive left as it was.
    with pytest.raises(MergeConflict):
        pack(_store(tmp_path / "other.sqlite", tags=("a",), other_text=True), ["a"], arc)
    assert arc.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no leftovers


def test_selection_by_key_prefix_and_one_line_errors(tmp_path):
    src = _store(tmp_path / "src.sqlite")
    assert list(pack(src, ["probe-b-"], tmp_path / "b.sqlite.xz")["probes"]) == ["probe-b-0123"]
    with pytest.raises(StoreError, match="names 2 probes"):
        pack(src, ["probe-"], tmp_path / "x.sqlite.xz")
    with pytest.raises(StoreError, match="no probe in the store has model name or key 'zz'"):
        pack(src, ["zz"], tmp_path / "x.sqlite.xz")
    with pytest.raises(StoreError, match="ends in .sqlite.xz"):
        pack(src, ["a"], tmp_path / "x.db")
    with pytest.raises(StoreError, match="does not exist"):
        unpack(tmp_path / "missing.sqlite.xz", tmp_path / "s.sqlite")


def test_a_damaged_archive_is_refused_and_the_store_untouched(tmp_path):
    arc = tmp_path / "a.sqlite.xz"
    pack(_store(tmp_path / "src.sqlite"), ["a"], arc)
    data = bytearray(arc.read_bytes())
    data[len(data) // 2] ^= 0xFF
    arc.write_bytes(bytes(data))
    into = _store(tmp_path / "into.sqlite", tags=("b",))
    before = into.read_bytes()
    with pytest.raises(StoreError, match="damaged or not an xz file"):
        unpack(arc, into)
    assert into.read_bytes() == before


def test_the_command_line(tmp_path):
    src = _store(tmp_path / "src.sqlite")
    run = [sys.executable, "-m", "boundlab.probe.store"]
    p = subprocess.run(run + ["pack", str(src), "--models", "a,b", "--out", str(tmp_path / "ab.sqlite.xz")],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(run + ["unpack", str(tmp_path / "ab.sqlite.xz"), "--store", str(tmp_path / "s.sqlite")],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    assert len(_rows(tmp_path / "s.sqlite", "samples", SAMPLE_COLS)) == 14
    p = subprocess.run(run + ["pack", str(src), "--models", "nope", "--out", str(tmp_path / "n.sqlite.xz")],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0 and p.stderr.startswith("error: ")
