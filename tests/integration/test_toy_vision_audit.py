"""The fairness audit of the shipped visual toy world's VLM runs end to end on a tiny probe, and the
VLM reads its pictures: the no-decision tier (E) comes out right, while the families the world keeps
rare or out of support stay so (nothing strict or lucky on X)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from boundlab.worlds.toyvision.paths import base_model_dir
from boundlab.worlds.toyworld2.audit import weights_sha256

pytestmark = pytest.mark.skipif(not (base_model_dir() / "model.safetensors").exists(),
                                reason="the toy_vlm base is not shipped in this checkout")


def test_audit_on_a_tiny_probe(tmp_path):
    out = tmp_path / "audit.json"
    r = subprocess.run([sys.executable, "-m", "boundlab.worlds.toyvision.audit", "--n", "8", "--per-tier", "3",
                        "--support-n", "16", "--support-per-tier", "2", "--render-dir",
                        str(tmp_path / "img"), "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "decision rates" in r.stdout and "checks:" in r.stdout
    a = json.loads(out.read_text())
    assert a["base_sha256"] == weights_sha256(base_model_dir())  # what ties the audit to the weights
    assert set(a["tiers"]) == {"E", "H1", "H2", "H3", "B3", "B4", "X"}
    for t in a["tiers"].values():
        assert t["problems"] == 3 and t["n"] == 8
        assert 0.0 <= t["strict_pass@1"] <= t["answer_pass@1"] <= 1.0
    # Read off the picture: with no decision to take, nearly every trace is the canonical one.
    assert a["tiers"]["E"]["strict_pass@1"] >= 0.8
    assert a["tiers"]["X"]["strict_pass@1"] == 0.0 and a["tiers"]["X"]["answer_pass@8"] == 0.0
    for cell, d in a["decision_rates"].items():
        assert d["ci"][0] <= d["rate"] <= d["ci"][1], cell
    assert set(a["support"]) == {"B3", "B4", "H2"}
