"""Run files are strict JSON: a non-finite float is written as a string, never as the `Infinity` or
`NaN` literal Python's json emits by default (no other JSON reader takes those), and is read back as
the float it was."""

import json
import math

import numpy as np
import pytest

from boundlab.rundir.io import append_jsonl, atomic_write_json, dumps, read_json, read_jsonl


def _strict(text: str):
    def refuse(const):
        raise ValueError(f"non-standard JSON constant {const}")
    return json.loads(text, parse_constant=refuse)


ROW = {"step": 10, "crossing_k": None, "crossing_k_ci_low": 3.5, "crossing_k_ci_high": math.inf,
       "delta": -math.inf, "ratio": float("nan"), "np": np.float64("inf"), "np32": np.float32("nan"),
       "groups": {"H1": {"crossing_k_ci_high": math.inf, "curve": [0.5, math.inf]}}, "name": "Infinity?"}


def test_probes_jsonl_holds_no_nonfinite_literal_and_reads_back(tmp_path):
    path = tmp_path / "probes.jsonl"
    append_jsonl(path, ROW)
    append_jsonl(path, {"step": 20, "crossing_k_ci_high": 7.0})
    for line in path.read_text().splitlines():
        _strict(line)  # raises on Infinity / NaN
    rows = read_jsonl(path)
    r = rows[0]
    assert r["crossing_k_ci_high"] == math.inf and r["delta"] == -math.inf and math.isnan(r["ratio"])
    assert r["np"] == math.inf and math.isnan(r["np32"])
    assert r["groups"]["H1"]["crossing_k_ci_high"] == math.inf and r["groups"]["H1"]["curve"] == [0.5, math.inf]
    assert r["crossing_k"] is None and r["crossing_k_ci_low"] == 3.5 and r["name"] == "Infinity?"
    assert rows[1] == {"step": 20, "crossing_k_ci_high": 7.0}


def test_run_dir_json_files_are_strict_and_read_back(tmp_path):
    path = tmp_path / "run_info.json"
    atomic_write_json(path, ROW)
    data = _strict(path.read_text())
    assert data["crossing_k_ci_high"] == "Infinity" and data["ratio"] == "NaN" and data["delta"] == "-Infinity"
    back = read_json(path)
    assert back["crossing_k_ci_high"] == math.inf and math.isnan(back["ratio"])


def test_dumps_refuses_nothing_and_emits_no_literal():
    text = dumps({"a": [math.inf, -math.inf, math.nan]})
    assert _strict(text) == {"a": ["Infinity", "-Infinity", "NaN"]}
    with pytest.raises(ValueError):
        _strict(json.dumps({"a": math.inf}))  # what Python writes by default: the defect fixed here
