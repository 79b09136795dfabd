"""The boundary alarm: say so while training runs when a checkpoint's boundary has shrunk.

A probed checkpoint raises the alarm on a scope (all problems, or one `task.group_by` group such as a
toy-world tier) when its headline pass@n is below the base's with the paired bootstrap interval of
the difference excluding 0 (`delta_pass@n_ci_high < 0`) and, where the run has a base-vs-base null,
the drop is beyond the null's own interval on that scope (`delta_pass@n < null delta_pass@n_ci_low`):
a drop that two probes of the same model can show by chance does not count.

What fires is kept in the checkpoint's probe row (`alarm`: the scopes), appended to
`alarms.jsonl` in the run dir, printed as one line per scope, and logged: `probe/alarm` (the number
of scopes, 0 when silent) on every checkpoint, and a W&B alert where the run is online. With
`train.stop_on_shrink=true` training stops at the first alarm (`stop_requested`), and the
best-boundary checkpoint (`best_boundary`) is kept out of `train.save_total_limit`'s rotation
(without it, rotation is unchanged).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from boundlab.rundir import ALARMS_FILE, CHECKPOINTS_DIR
from boundlab.rundir.io import append_jsonl, read_jsonl


def shrinkage(row: dict[str, Any], null: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The scopes on which a compared probe row's pass@n fell below the base's beyond chance."""
    null_groups = (null or {}).get("groups") or {}
    scopes = [("all", row, null)] + [(str(tag), g, null_groups.get(tag))
                                     for tag, g in (row.get("groups") or {}).items()]
    fired = []
    for scope, r, nl in scopes:
        hi, delta = r.get("delta_pass@n_ci_high"), r.get("delta_pass@n")
        if hi is None or delta is None or not hi < 0:
            continue
        band = nl.get("delta_pass@n_ci_low") if nl else None
        if band is not None and not delta < band:
            continue
        fired.append({"scope": scope, "delta_pass@n": delta, "ci_low": r["delta_pass@n_ci_low"],
                      "ci_high": hi, "null_ci_low": band})
    return fired


def describe(row: dict[str, Any], hit: dict[str, Any]) -> str:
    where = "all problems" if hit["scope"] == "all" else f"{row.get('group_by') or 'group'} {hit['scope']}"
    null = (f", beyond the base-vs-base null's {hit['null_ci_low']:+.3f}" if hit["null_ci_low"] is not None
            else " (no base-vs-base null in this run: probe.null_seed_offset)")
    return (f"boundary alarm at step {row['step']}: {row.get('metric', 'answer')} pass@{row['n']} on {where} "
            f"is {hit['delta_pass@n']:+.3f} [{hit['ci_low']:+.3f}, {hit['ci_high']:+.3f}] against the base{null}")


def raise_alarm(run_dir: Path, row: dict[str, Any], logger: Any) -> None:
    """Record, print and log the alarm of a checkpoint row whose `alarm` holds fired scopes."""
    append_jsonl(Path(run_dir) / ALARMS_FILE, {"step": row["step"], "metric": row.get("metric"),
                                               "n": row["n"], "scopes": row["alarm"], "time": time.time()})
    lines = [describe(row, hit) for hit in row["alarm"]]
    for line in lines:
        print(f"[boundlab] {line}", flush=True)
    if logger is not None:
        logger.alert(f"BoundLab: the boundary shrank at step {row['step']}", "\n".join(lines))


def stop_requested(run_dir: Path) -> bool:
    """Some probe of this run raised the alarm (read from disk: a detached watcher writes it)."""
    return bool(read_jsonl(Path(run_dir) / ALARMS_FILE))  # [] when no alarm file exists


def best_boundary(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The probed checkpoint with the widest boundary: the highest headline pass@n, then pass@1, then
    the earliest step."""
    ck = [r for r in rows if r.get("kind") == "checkpoint"]
    if not ck:
        return None
    return max(ck, key=lambda r: (r["pass@n"], r["pass@1"], -int(r["step"])))


def best_boundary_path(run_dir: Path, rows: list[dict[str, Any]]) -> set[Path]:
    """The best-boundary checkpoint's dir, as a `rotate(keep=...)` set (empty when none is probed)."""
    best = best_boundary(rows)
    if best is None:
        return set()
    return {Path(run_dir) / CHECKPOINTS_DIR / f"checkpoint-{int(best['step'])}"}
