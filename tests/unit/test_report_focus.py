"""boundlab.report.focus: the problems an arm loses at k (strict counts over the first k samples),
on a hand-made store; unfinished probes are refused in one line, and a name report.py would not
resolve (inputs.find_probe) is refused as report.py refuses it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.config import ConfigError
from boundlab.errors import StoreError
from boundlab.report.focus import lost_at, write_ids
from boundlab.probe.store import SampleRow, Store

ROOT = Path(__file__).resolve().parents[2]


def _probe(store: Store, name: str, per_problem: dict[str, list[tuple[bool, bool]]]) -> None:
    """A probe named `name`: for each problem, its samples' (answer-correct, strict) in index order."""
    store.ensure_probe(f"{name}-key", f"fp-{name}", "task", {"seed": 0}, model_name=name, task_name="toy2")
    store.add_samples(f"{name}-key", [SampleRow(pid, i, "t", "a", ok, strict, "x", 3, None)
                                      for pid, rows in per_problem.items() for i, (ok, strict) in enumerate(rows)])


def _rows(k: int, right_at: int | None, strict: bool = True, n: int | None = None) -> list[tuple[bool, bool]]:
    """n samples (default k + 2), right (and strict, or answer-only) at index right_at only."""
    return [(i == right_at, i == right_at and strict) for i in range(n or k + 2)]


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    k = 4
    _probe(s, "base", {"p1": _rows(k, 0), "p2": _rows(k, 3), "p3": _rows(k, None), "p4": _rows(k, 1),
                       "p5": _rows(k, 2), "p6": _rows(k, 0)})
    # arm a: loses p1 (right only after its first k), p2 (never); keeps p4; p3 was never the base's;
    # p5 right answer with a wrong trace only: lost (strict counts); p6 not probed by the arm.
    _probe(s, "a", {"p1": _rows(k, 4), "p2": _rows(k, None), "p3": _rows(k, 0), "p4": _rows(k, 3),
                    "p5": _rows(k, 0, strict=False)})
    _probe(s, "b", {"p1": _rows(k, 0), "p2": _rows(k, 1), "p3": _rows(k, None), "p4": _rows(k, None),
                    "p5": _rows(k, 0)})
    yield s
    s.close()


def test_lost_at_k_by_strict_counts_over_the_first_k_samples(store):
    assert lost_at(store, "base", ["a", "b"], 4) == {"a": ["p1", "p2", "p5"], "b": ["p4"]}
    # At k = 5, arm a's success at index 4 counts: p1 is no longer lost.
    assert lost_at(store, "base", ["a"], 5) == {"a": ["p2", "p5"]}


def test_an_unfinished_probe_or_an_unknown_name_is_refused(store):
    _probe(store, "c", {"p1": _rows(4, 0), "p2": _rows(4, 0, n=3)})  # stopped before 4 samples on p2
    with pytest.raises(StoreError, match=r"'c' has fewer than 4 samples on 1 problem\(s\), e.g. p2: finish"):
        lost_at(store, "base", ["c"], 4)
    with pytest.raises(StoreError, match=r"the base 'base' has fewer than 7 samples on 6 problem\(s\)"):
        lost_at(store, "base", ["a"], 7)
    with pytest.raises(ConfigError, match="'nobody' is not a run dir, a sweep dir, a probe key or a model name"):
        lost_at(store, "nobody", ["a"], 4)


def test_cli_writes_the_union_once(store, tmp_path):
    out = tmp_path / "focus" / "ids.txt"
    argv = [sys.executable, "-m", "boundlab.report.focus", "--store", str(tmp_path / "s.sqlite"), "--base", "base",
            "--arms", "a,b", "--k", "4", "--out", str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "p1\np2\np4\np5\n"
    assert json.loads(proc.stdout)["lost_per_arm"] == {"a": 3, "b": 1}
    again = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert json.loads(again.stdout)["written"] is False
    bad = subprocess.run(argv[:-4] + ["--k", "9", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and bad.stderr.startswith("error: the base")
    assert out.read_text() == "p1\np2\np4\np5\n"  # left as it was


def test_write_ids_is_atomic_and_idempotent(tmp_path):
    f = tmp_path / "ids.txt"
    assert write_ids(f, ["x", "y"]) is True and f.read_text() == "x\ny\n"
    assert write_ids(f, ["x", "y"]) is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ids.txt"]
