"""Build a saved W&B workspace for a synced BoundLab run (issue 38: the boundary at a glance, without
arranging panels by hand). Needs `pip install wandb-workspaces` and a W&B login for --save.

    python scripts/wandb_workspace.py RUN_DIR --entity ME --project boundlab --save
    python scripts/wandb_workspace.py RUN_DIR --entity ME --project boundlab      # prints the plan only

Sections, each plotted against the probe step (`probe/step`, the training step a probe belongs to):
- Boundary: pass@1 and pass@n with the base's own series beside them, Δ with its interval, lost and
  gained, the crossing k;
- Views: KL from the base, answer diversity, G-Pass@k, sampling entropy;
- Tiers: each group's pass@1 and pass@n (`probe_tier/<tag>/...`, the tags read from the run's
  probes.jsonl);
- Training: reward, its spread, KL, entropy and loss against the training step.
The run is found by the W&B run id in RUN_DIR/run_info.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


class BadInput(Exception):
    """One line on stderr, exit 2."""


def plan(run_dir: Path) -> dict[str, Any]:
    """The sections and the keys each panel plots, read from the run dir (no W&B needed)."""
    info_f, rows_f = run_dir / "run_info.json", run_dir / "probes.jsonl"
    if not info_f.is_file() or not rows_f.is_file():
        raise BadInput(f"{run_dir}: no run_info.json and probes.jsonl (not a training run dir)")
    info = json.loads(info_f.read_text())
    rows = [json.loads(x) for x in rows_f.read_text().splitlines() if x.strip()]
    metric = next((r.get("metric") for r in rows if r.get("kind") == "base"), "answer") or "answer"
    tags = sorted({t for r in rows for t in (r.get("groups") or {})})
    boundary = [["probe/pass@1", "probe/base/pass@1"], ["probe/pass@n", "probe/base/pass@n"],
                ["probe/delta/pass@n", "probe/delta/pass@n_ci_low", "probe/delta/pass@n_ci_high"],
                ["probe/lost", "probe/gained"], ["probe/crossing_k"]]
    views = [["probe/kl_from_base"], ["probe/diversity/distinct_answers"], ["probe/diversity/answer_entropy"],
             ["probe/gpass@1", "probe/gpass@n"], ["probe/entropy/mean"]]
    tiers = [[f"probe_tier/{t}/{metric}/pass@1", f"probe_tier/{t}/{metric}/pass@n"] for t in tags]
    train = [["train/reward"], ["train/reward_std"], ["train/kl"], ["train/entropy"], ["train/loss"]]
    return {"run_id": info.get("wandb_run_id"), "name": f"boundlab {run_dir.name}",
            "sections": [("Boundary", "probe/step", boundary), ("Views", "probe/step", views),
                         ("Tiers", "probe/step", tiers), ("Training", "train/global_step", train)]}


def build(p: dict[str, Any], entity: str, project: str):
    try:
        import wandb_workspaces.reports.v2 as wr
        import wandb_workspaces.workspaces as ws
    except ImportError:
        raise BadInput("this script needs wandb-workspaces: pip install wandb-workspaces") from None
    sections = [ws.Section(name=name, is_open=True,
                           panels=[wr.LinePlot(title=", ".join(y), x=x, y=list(y)) for y in panels])
                for name, x, panels in p["sections"] if panels]
    runset = ws.RunsetSettings(filters=ws.And(ws.Metric("ID") == p["run_id"])) if p["run_id"] else ws.RunsetSettings()
    return ws.Workspace(entity=entity, project=project, name=p["name"], sections=sections, runset_settings=runset)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--entity", required=True)
    ap.add_argument("--project", required=True)
    ap.add_argument("--save", action="store_true", help="save it to W&B (online); without it, print the plan")
    a = ap.parse_args(argv)
    try:
        p = plan(a.run_dir)
        w = build(p, a.entity, a.project)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not a.save:
        for s in w.sections:
            print(f"{s.name}: " + "; ".join(", ".join(map(str, panel.y)) for panel in s.panels))
        print(f"(run {p['run_id']}; --save to create it in {a.entity}/{a.project})")
        return 0
    w.save()
    print(f"saved: {w.url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
