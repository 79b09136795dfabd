"""Choose each recipe's learning rate (and KL) from a remedies_lr sweep on the training reward only
(issue 39: a fair run for every recipe, chosen never on the evaluation slice).

    python scripts/choose_lr.py outputs/sweeps/remedies_lr-<stamp> [--json]

Per run dir of the sweep (`.hydra/overrides.yaml` names its `+remedy=` and `+lr_search=`), the mean
training reward over the last third of the logged steps, read from the latest complete checkpoint's
trainer_state.json (the trainer's own log, not W&B's and not a probe). A run "collapsed" when that
mean is below half the best logged mean of any earlier third. Per arm, the setting with the highest
late reward among the runs that did not collapse is chosen (ties: the smaller learning rate). A run
that left no training log is listed and counts as missing: an arm with a missing run says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _overrides(run: Path) -> dict[str, str]:
    import yaml

    f = run / ".hydra" / "overrides.yaml"
    out = {}
    for item in (yaml.safe_load(f.read_text()) if f.is_file() else None) or []:
        k, _, v = str(item).partition("=")
        out[k.lstrip("+~")] = v
    return out


def _rewards(run: Path) -> Optional[list[tuple[int, float]]]:
    from boundlab.rundir import CHECKPOINTS_DIR
    from boundlab.rundir.checkpoints import latest_complete

    ck = latest_complete(run / CHECKPOINTS_DIR)
    if ck is None or not (ck / "trainer_state.json").is_file():
        return None
    hist = json.loads((ck / "trainer_state.json").read_text()).get("log_history", [])
    return [(int(h["step"]), float(h["reward"])) for h in hist if "reward" in h and "step" in h]


def late_reward(points: list[tuple[int, float]]) -> tuple[float, bool]:
    """(mean reward over the last third of the logged points, collapsed?)."""
    if not points:
        raise ValueError("no logged reward")
    pts = sorted(points)
    cut = max(1, len(pts) // 3)
    late = [r for _, r in pts[-cut:]]
    mean = sum(late) / len(late)
    early = pts[:-cut]
    thirds = [early[i:i + cut] for i in range(0, len(early), cut)]
    best_before = max((sum(r for _, r in t) / len(t) for t in thirds if t), default=mean)
    return mean, mean < 0.5 * best_before


def choose(sweep: Path) -> dict[str, Any]:
    runs = sorted(p.parent.parent for p in sweep.glob("*/.hydra/overrides.yaml"))
    if not runs:
        raise SystemExit(f"error: {sweep}: no run dirs with .hydra/overrides.yaml (is it a remedies_lr sweep?)")
    arms: dict[str, dict[str, Any]] = {}
    for run in runs:
        o = _overrides(run)
        arm, point = o.get("remedy", "?"), o.get("lr_search", "?")
        entry = arms.setdefault(arm, {"runs": [], "missing": []})
        pts = _rewards(run)
        if not pts:
            entry["missing"].append({"run": run.name, "setting": point})
            continue
        mean, collapsed = late_reward(pts)
        entry["runs"].append({"run": run.name, "setting": point, "late_reward": round(mean, 4),
                              "collapsed": collapsed, "steps": max(s for s, _ in pts)})
    for arm, e in arms.items():
        ok = [r for r in e["runs"] if not r["collapsed"]]
        e["chosen"] = (max(ok, key=lambda r: (r["late_reward"], -_lr(r["setting"])))["setting"]
                       if ok else None)
    return arms


def _lr(setting: str) -> float:
    try:
        return float(setting.split("_")[0].removeprefix("lr"))
    except ValueError:
        return 0.0


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not a.sweep.is_dir():
        print(f"error: {a.sweep}: no such sweep dir", file=sys.stderr)
        return 2
    arms = choose(a.sweep)
    if a.json:
        print(json.dumps(arms, indent=1))
        return 0
    for arm, e in sorted(arms.items()):
        print(f"{arm}: chosen {e['chosen'] or 'none (every run collapsed or is missing)'}"
              + (f"; MISSING {', '.join(m['setting'] for m in e['missing'])}" if e["missing"] else ""))
        for r in sorted(e["runs"], key=lambda r: r["setting"]):
            print(f"  {r['setting']:>14}  late reward {r['late_reward']:.4f}"
                  + ("  collapsed" if r["collapsed"] else "") + f"  ({r['run']}, {r['steps']} steps)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
