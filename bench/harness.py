"""One benchmark harness for every script in bench/ (issue 36, item 1).

A benchmark is a few *arms* (callables that do the work once and return their figures) compared on
a shared, noisy machine. What makes such numbers hold up, and what this module does for every arm:

- **Interleaved and order-balanced.** Repetition r runs the arms in the order rotated by r (A B C,
  B C A, C A B, ...), so each arm takes each position equally often when `reps` is a multiple of the
  number of arms; a one-off warm-up (caches, lazy imports) or a load spike is shared, not charged to
  whichever arm always ran first.
- **Spread, not one number.** Each figure is reported as min / median / max over the repetitions.
- **The floor beside each arm.** `floor()` (a dict of FLOP/s rates, e.g. the matmul rate at the
  model's shapes) is measured right before and right after every arm; the arm's fraction of the
  floor uses the mean of the two, and the before/after ratio is kept, so a rate sampled during a
  load spike shows itself instead of silently inflating the fraction.
- **The load recorded.** `os.getloadavg()` before and after each arm.
- **Paired ratios.** `ratios=[(a, b, figure)]` gives figure(a) / figure(b) per repetition, each
  pair taken back to back under the same load, and its spread.

Why not pyperf: pyperf spawns a worker process per benchmark and calibrates loops for micro-timings;
our arms are whole probes of seconds to minutes that share one loaded model and one process, need a
figure per arm that is not a time (samples/s, floor fraction), and must be interleaved with each
other, which pyperf's one-benchmark-per-run model does not do.

The JSON (`write`) has the shape
    {"figures": {"<arm>/<figure>": {"min", "median", "max", "reps"}}, "machine", "date", "command",
     "load", "order", "runs", ...}
and goes to docs/bench/<name>.json.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

Arm = Callable[[], Mapping[str, Any]]
# An arm may return, beside its figures, FLOOR_KEY: a function rates -> the seconds its work would
# take at those rates. With "seconds" among its figures the harness adds "floor_fraction".
FLOOR_KEY = "floor_seconds"


def rotated_orders(names: Sequence[str], reps: int) -> list[list[str]]:
    """Repetition r runs `names` rotated left by r."""
    k = len(names)
    return [[names[(r + i) % k] for i in range(k)] for r in range(reps)]


def spread(values: Sequence[float]) -> dict[str, float]:
    vals = [float(v) for v in values]
    return {"min": min(vals), "median": statistics.median(vals), "max": max(vals), "reps": len(vals)}


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "system": f"{platform.system()} {platform.release()}"}
    if hasattr(os, "sched_getaffinity"):
        info["usable_cores"] = len(os.sched_getaffinity(0))
    torch = sys.modules.get("torch")
    if torch is not None:
        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    return info


def run(arms: Mapping[str, Arm], reps: int = 3, floor: Callable[[], Mapping[str, float]] | None = None,
        ratios: Sequence[tuple[str, str, str]] = (), clock: Callable[[], float] = time.perf_counter,
        load: Callable[[], Sequence[float]] = os.getloadavg, log: Callable[[str], None] | None = None
        ) -> dict[str, Any]:
    """Run every arm `reps` times, interleaved and rotated; return the figures with their spread.

    Each arm's figures are what it returns (numbers), plus "seconds" (its wall time by `clock`,
    unless it reports its own) and, with `floor`, "floor_<rate>" (the mean of the rates measured
    before and after it) and "floor_fraction" (when it returns FLOOR_KEY).
    """
    if reps < 1:
        raise ValueError("reps must be >= 1")
    if not arms:
        raise ValueError("no arms")
    names = list(arms)
    for a, b, _ in ratios:
        if a not in arms or b not in arms:
            raise ValueError(f"ratio {a}/{b}: both must be arms ({names})")
    orders = rotated_orders(names, reps)
    per_arm: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    runs: list[dict[str, Any]] = []
    loads: list[float] = []
    for r, order in enumerate(orders):
        for name in order:
            load_before = list(load())
            before = dict(floor()) if floor is not None else {}
            t0 = clock()
            got = dict(arms[name]())
            secs = clock() - t0
            after = dict(floor()) if floor is not None else {}
            load_after = list(load())
            loads += [load_before[0], load_after[0]]
            floor_seconds = got.pop(FLOOR_KEY, None)
            figs = {k: float(v) for k, v in got.items()}
            figs.setdefault("seconds", secs)
            rec: dict[str, Any] = {"rep": r, "arm": name, "load_before": load_before,
                                   "load_after": load_after}
            if floor is not None:
                rates = {k: (before[k] + after[k]) / 2 for k in before}
                for k, v in rates.items():
                    figs[f"floor_{k}"] = v
                    figs[f"floor_{k}_after_over_before"] = after[k] / before[k]
                if floor_seconds is not None:
                    figs["floor_fraction"] = float(floor_seconds(rates)) / figs["seconds"]
                rec.update(floor_before=before, floor_after=after)
            rec["figures"] = figs
            per_arm[name].append(figs)
            runs.append(rec)
            if log is not None:
                log(json.dumps(rec))
    figures: dict[str, dict[str, float]] = {}
    for name in names:
        for key in per_arm[name][0]:
            figures[f"{name}/{key}"] = spread([f[key] for f in per_arm[name]])
    for a, b, key in ratios:
        figures[f"{a}_over_{b}/{key}"] = spread(
            [fa[key] / fb[key] for fa, fb in zip(per_arm[a], per_arm[b])])
    return {"figures": figures, "order": orders, "runs": runs,
            "load": {**spread(loads), "unit": "1-minute load average, before and after each arm"}}


def write(name: str, result: Mapping[str, Any], out_dir: str | Path = "docs/bench",
          command: str | None = None, **extra: Any) -> Path:
    """docs/bench/<name>.json: the result with machine, date (UTC) and command."""
    doc = {"figures": result["figures"], "machine": machine(),
           "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": command if command is not None else " ".join([sys.executable.split("/")[-1]] + sys.argv),
           "load": result["load"], **{k: v for k, v in result.items() if k not in ("figures", "load")},
           **extra}
    path = Path(out_dir) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path
