"""The fairness audit of the shipped second-edition toy world runs end to end on a tiny probe, and
what it measures is what the world promises by construction (no luck on X, the teacher knows X)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from boundlab.worlds.toyworld2.audit import weights_sha256
from boundlab.worlds.toyworld2.paths import base_model_dir, teacher_model_dir

pytestmark = pytest.mark.skipif(not (base_model_dir() / "model.safetensors").exists(),
                                reason="the toy2 base is not shipped in this checkout")


def test_audit_on_a_tiny_probe(tmp_path):
    out = tmp_path / "audit.json"
    r = subprocess.run([sys.executable, "-m", "boundlab.worlds.toyworld2.audit", "--n", "8", "--per-tier", "3",
                        "--support-n", "16", "--support-per-tier", "2",
                        "--teacher", str(teacher_model_dir()), "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "decision rates" in r.stdout and "checks:" in r.stdout
    a = json.loads(out.read_text())
    assert set(a["tiers"]) == {"E", "H1", "H2", "H3", "B3", "B4", "X"}
    for t in a["tiers"].values():
        assert t["problems"] == 3 and t["n"] == 8
        assert 0.0 <= t["strict_pass@1"] <= t["answer_pass@1"] <= 1.0
    # The base never writes `#` right: nothing strict on X, and no lucky answer either.
    assert a["tiers"]["X"]["strict_pass@1"] == 0.0
    assert a["tiers"]["X"]["answer_pass@8"] == 0.0
    # Every decision cell carries an exact interval around its rate.
    for cell, d in a["decision_rates"].items():
        assert d["ci"][0] <= d["rate"] <= d["ci"][1], cell
        assert d["n"] > 0
    assert set(a["support"]) == {"B3", "B4", "H2"}
    assert all(s["problems"] == 2 and s["n"] == 16 for s in a["support"].values())
    # The teacher knows the out-of-support family; under the base its X traces are improbable.
    assert a["teacher"]["X"]["strict_pass@1"] > 0.5
    ppl = a["perplexity_under_base"]
    assert ppl["teacher_X_traces"] > 2 * ppl["canonical_H1_traces"]
    assert set(a["checks"]) == {"decision_rates_within_2x", "luck", "support", "unsaturated_B_H2"}
    assert a["base_sha256"] == weights_sha256(base_model_dir())

    # The teacher alone, on top of that audit of the same base: the base sections are kept as they
    # are (same n, problems and seed), the teacher is sampled again, and the check that ties them is
    # the weights' sha256.
    out2 = tmp_path / "audit_teacher.json"
    r = subprocess.run([sys.executable, "-m", "boundlab.worlds.toyworld2.audit", "--base-audit", str(out),
                        "--teacher", str(teacher_model_dir()), "--out", str(out2)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    b = json.loads(out2.read_text())
    for key in ("decision_rates", "tiers", "composition", "support", "n", "per_tier", "seed"):
        assert b[key] == a[key], key
    assert b["teacher"] == a["teacher"] and b["perplexity_under_base"] == a["perplexity_under_base"]
    assert b["teacher_sha256"] == weights_sha256(teacher_model_dir())

    # An audit of other weights is refused, in one line.
    a["base_sha256"] = "0" * 64
    out.write_text(json.dumps(a))
    r = subprocess.run([sys.executable, "-m", "boundlab.worlds.toyworld2.audit", "--base-audit", str(out),
                        "--out", str(tmp_path / "x.json")], capture_output=True, text=True, timeout=600)
    assert r.returncode != 0 and "cannot be reused" in r.stderr
    assert not (tmp_path / "x.json").exists()
