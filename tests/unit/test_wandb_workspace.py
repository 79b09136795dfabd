"""scripts/wandb_workspace.py (issue 38): the workspace plan read from a run dir, built as a real
wandb-workspaces object (not saved: that needs W&B online)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from wandb_workspace import build, plan  # noqa: E402


def _run_dir(tmp_path):
    run = tmp_path / "07-37-33_grpo"
    run.mkdir()
    (run / "run_info.json").write_text(json.dumps({"wandb_run_id": "abc123"}))
    rows = [{"kind": "base", "step": 0, "metric": "strict", "groups": {"H1": {}, "E": {}}},
            {"kind": "checkpoint", "step": 75, "metric": "strict", "groups": {"H1": {}, "E": {}}}]
    (run / "probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_plan_has_the_base_beside_the_boundary_and_one_panel_per_tier(tmp_path):
    p = plan(_run_dir(tmp_path))
    sections = {name: (x, panels) for name, x, panels in p["sections"]}
    assert p["run_id"] == "abc123"
    assert ["probe/pass@n", "probe/base/pass@n"] in sections["Boundary"][1]
    assert sections["Tiers"] == ("probe/step", [["probe_tier/E/strict/pass@1", "probe_tier/E/strict/pass@n"],
                                                ["probe_tier/H1/strict/pass@1", "probe_tier/H1/strict/pass@n"]])
    assert sections["Training"][0] == "train/global_step"


def test_builds_a_real_workspace_and_prints_the_plan(tmp_path):
    pytest.importorskip("wandb_workspaces")
    run = _run_dir(tmp_path)
    w = build(plan(run), "me", "boundlab")
    assert [s.name for s in w.sections] == ["Boundary", "Views", "Tiers", "Training"]
    assert w.sections[0].panels[1].y == ["probe/pass@n", "probe/base/pass@n"]
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "wandb_workspace.py"), str(run),
                          "--entity", "me", "--project", "boundlab"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Tiers: probe_tier/E/strict/pass@1, probe_tier/E/strict/pass@n" in out.stdout


def test_not_a_run_dir_is_one_line(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "wandb_workspace.py"), str(tmp_path),
                          "--entity", "me", "--project", "p"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: ") and "\n" not in out.stderr.strip()
