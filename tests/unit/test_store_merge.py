"""Merging per-node probe stores by key (`python -m boundlab.probe.store merge A B --out C`): disjoint
probes and samples add up, identical samples dedupe, a compact store's dropped text is restored from
a full one, and any disagreement is a one-line error that leaves --out as it was."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.errors import StoreError
from boundlab.probe.merge import MergeConflict, merge_stores
from boundlab.probe.store import SampleRow, Store

ROOT = Path(__file__).resolve().parents[2]


def _row(pid, idx, text=None, correct=False, outcome=None):
    return SampleRow(pid, idx, text if text is not None else f"{pid}-{idx} answer",
                     "4" if correct else "5", correct, None, outcome or ("correct" if correct else "wrong"), 7,
                     {"finish": "eos"})


def _store(path, probes: dict[str, list[SampleRow]], keep_text="all") -> Path:
    s = Store(path)
    for key, rows in probes.items():
        s.ensure_probe(key, f"model-{key}", "task-1", {"seed": 0, "key": key}, model_name=key, task_name="t")
        s.add_samples(key, rows, keep_text=keep_text)
    s.close()
    return Path(path)


def _contents(path) -> dict:
    s = Store(path, writable=False)
    out = {p["key"]: sorted((r.problem_id, r.idx, r.text, r.correct) for r in s.samples(p["key"]))
           for p in s.list_probes()}
    s.close()
    return out


def test_disjoint_and_identical_samples_merge(tmp_path):
    shared = [_row("p1", 0, correct=True), _row("p1", 1)]
    a = _store(tmp_path / "a.sqlite", {"base": shared, "ckpt2": [_row("p1", 0)]})
    b = _store(tmp_path / "b.sqlite", {"base": shared + [_row("p1", 2)], "ckpt4": [_row("p2", 0, correct=True)]})
    a_bytes = a.read_bytes()
    report = merge_stores([a, b], tmp_path / "out.sqlite")
    assert a.read_bytes() == a_bytes  # inputs are read, never changed
    merged = _contents(tmp_path / "out.sqlite")
    assert sorted(merged) == ["base", "ckpt2", "ckpt4"]
    assert [r[:2] for r in merged["base"]] == [("p1", 0), ("p1", 1), ("p1", 2)]
    assert report["inputs"][str(b)] == {"probes": 1, "samples": 2, "duplicates": 2, "texts_restored": 0}
    # The merged store is an ordinary store: counts and pass@k readers work on it.
    s = Store(tmp_path / "out.sqlite")
    assert {c.problem_id: (c.n, c.c) for c in s.counts("base")} == {"p1": (3, 1)}
    s.close()


def test_differing_sample_under_the_same_key_is_an_error_and_nothing_is_written(tmp_path):
    a = _store(tmp_path / "a.sqlite", {"base": [_row("p1", 0, text="x = 4", correct=True)]})
    b = _store(tmp_path / "b.sqlite", {"base": [_row("p1", 0, text="x = 5")]})
    out = _store(tmp_path / "out.sqlite", {"old": [_row("p9", 0)]})
    before = out.read_bytes()
    with pytest.raises(MergeConflict) as e:
        merge_stores([a, b], out)
    assert str(e.value).startswith(f"sample 0 of problem p1 in probe base differs between {b} and the stores "
                                   f"before it (text, extracted, correct, outcome)")
    assert "\n" not in str(e.value)
    assert out.read_bytes() == before and not (tmp_path / "out.sqlite.merging").exists()


def test_same_key_with_other_settings_is_an_error(tmp_path):
    a = _store(tmp_path / "a.sqlite", {"base": [_row("p1", 0)]})
    b = tmp_path / "b.sqlite"
    s = Store(b)
    s.ensure_probe("base", "model-base", "task-1", {"seed": 1}, model_name="base")
    s.close()
    with pytest.raises(MergeConflict, match="another model, task or settings under the same key"):
        merge_stores([a, b], tmp_path / "out.sqlite")
    assert not (tmp_path / "out.sqlite").exists()


def test_a_dropped_text_is_the_same_sample_when_its_hash_matches(tmp_path):
    # Compact keeps each problem's first 4 wrong texts: the 6th wrong sample's text is dropped.
    rows = [_row("p1", i) for i in range(6)]
    compact = _store(tmp_path / "c.sqlite", {"base": rows}, keep_text="compact")
    full = _store(tmp_path / "f.sqlite", {"base": rows})
    report = merge_stores([compact, full], tmp_path / "out.sqlite")
    assert report["inputs"][str(full)]["texts_restored"] == 2
    assert [r[2] for r in _contents(tmp_path / "out.sqlite")["base"]] == [r.text for r in rows]
    # ...and a dropped text whose hash does not match is a conflict.
    other = _store(tmp_path / "o.sqlite", {"base": rows[:5] + [_row("p1", 5, text="something else")]})
    with pytest.raises(MergeConflict, match="sample 5 of problem p1"):
        merge_stores([compact, other], tmp_path / "out2.sqlite")


def test_out_may_be_an_existing_store_and_is_merged_too(tmp_path):
    out = _store(tmp_path / "out.sqlite", {"base": [_row("p1", 0)]})
    a = _store(tmp_path / "a.sqlite", {"base": [_row("p1", 0), _row("p1", 1)]})
    merge_stores([a], out)
    assert [r[:2] for r in _contents(out)["base"]] == [("p1", 0), ("p1", 1)]
    assert not Path(f"{out}-wal").exists()  # no stale WAL beside the renamed file
    with pytest.raises(StoreError, match="both an input and --out"):
        merge_stores([out], out)


def test_the_command_line(tmp_path):
    a = _store(tmp_path / "a.sqlite", {"base": [_row("p1", 0)]})
    b = _store(tmp_path / "b.sqlite", {"base": [_row("p1", 0, text="other")]})
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    cmd = [sys.executable, "-m", "boundlab.probe.store", "merge"]
    ok = subprocess.run(cmd + [str(a), "--out", str(tmp_path / "m.sqlite")], env=env, capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["inputs"][str(a)]["samples"] == 1
    bad = subprocess.run(cmd + [str(a), str(b), "--out", str(tmp_path / "n.sqlite")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: sample 0 of problem p1 in probe base differs") and \
        bad.stderr.count("\n") == 1
    missing = subprocess.run(cmd + [str(tmp_path / "nope.sqlite"), "--out", str(tmp_path / "x.sqlite")],
                             env=env, capture_output=True, text=True, timeout=120)
    assert (missing.returncode, missing.stderr) == (2, f"error: store {tmp_path / 'nope.sqlite'} does not exist\n")


def test_not_a_store_is_one_line(tmp_path):
    junk = tmp_path / "junk.sqlite"
    db = sqlite3.connect(junk)
    db.execute("CREATE TABLE t (x)")
    db.close()
    with pytest.raises(StoreError, match="is not a probe store"):
        merge_stores([junk], tmp_path / "out.sqlite")
