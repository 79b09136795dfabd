"""The paper's Figure 2 layout: one panel per benchmark, pass@k against k (log2 axis) with bootstrap
CIs, the base model against each other model, read from the probe store (nothing re-sampled).

    python -m boundlab.report.grid --store ~/.cache/boundlab/store.sqlite \\
        --models base=smollm2-135m --tasks gsm8k math500 minerva olympiadbench aime24 amc23 \\
        --out docs/img/grid.png

A model is `label=NAME`, NAME being a model name or a probe key (or a unique prefix of one, 6+
characters) in the store; a label starting with "base" is drawn as the reference (grey, dashed).
For each (task, model) the newest probe of that model whose task name is the task's is used; a
cell with no probe is left out of its panel and listed on stdout. A probe's curve runs to the
smallest n among its problems. The probes are run first, e.g. with `+experiment=paper_grid`
(conf/experiment/paper_grid.yaml: probe.py over the six math benchmarks in one multirun).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from boundlab.probe.curves import Curve, compute_curve
from boundlab.probe.store import Store
from boundlab.plots.style import BASE_COLOR, MARKERS, PALETTE, _log2_ticks, _save

PAPER_MATH = ("gsm8k", "math500", "minerva", "olympiadbench", "aime24", "amc23")
PAPER_CODE = ("livecodebench", "humaneval_plus", "mbpp_plus")


def _matches(info: dict[str, Any], spec: str) -> bool:
    return info["model_name"] == spec or (len(spec) >= 6 and info["key"].startswith(spec))


def find_probe(probes: Sequence[dict[str, Any]], spec: str, task: str) -> dict[str, Any] | None:
    """The newest probe of model `spec` (name or key prefix) on task `task` (by name), or None."""
    hits = [p for p in probes if p["task_name"] == task and _matches(p, spec)]
    return max(hits, key=lambda p: p["created"]) if hits else None


def grid_curves(store: Store, models: Mapping[str, str], tasks: Sequence[str],
                iters: int = 1000, ci: float = 0.95, seed: int = 0
                ) -> tuple[dict[str, dict[str, Curve]], list[str]]:
    """{task: {label: Curve}} for every (task, model) with a probe, and the cells without one."""
    probes = store.list_probes()
    panels: dict[str, dict[str, Curve]] = {}
    missing: list[str] = []
    for task in tasks:
        panels[task] = {}
        for label, spec in models.items():
            info = find_probe(probes, spec, task)
            counts = [pc for pc in store.counts(info["key"])] if info else []
            counts = [pc for pc in counts if pc.n > 0]
            if not counts:
                missing.append(f"{task}/{label}")
                continue
            panels[task][label] = compute_curve([pc.n for pc in counts], [pc.c for pc in counts],
                                                bootstrap_iters=iters, ci=ci, seed=seed)
    return panels, missing


def plot_grid(panels: Mapping[str, Mapping[str, Curve]], path: str | os.PathLike,
              title: str = "pass@k per benchmark", ncols: int = 3) -> Path:
    """One panel per benchmark (the paper's Figure 2 layout): each model's pass@k with its CI band,
    a label starting with "base" grey and dashed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = list(panels)
    ncols = max(1, min(ncols, len(names)))
    nrows = max(1, math.ceil(len(names) / ncols))
    fig = Figure(figsize=(4.2 * ncols, 3.4 * nrows), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= len(names):
            ax.set_visible(False)
            continue
        task = names[i]
        ax.grid(True, which="major", alpha=0.35, linewidth=0.8)
        ax.spines[["top", "right"]].set_visible(False)
        colour_i, all_ks = 0, []
        for label, cur in panels[task].items():
            is_base = label.lower().startswith("base")
            color = BASE_COLOR if is_base else PALETTE[colour_i % len(PALETTE)]
            marker = "o" if is_base else MARKERS[colour_i % len(MARKERS)]
            colour_i += 0 if is_base else 1
            ks = [float(k) for k in cur.ks]
            all_ks += ks
            mark = [j for j, k in enumerate(ks) if math.log2(k).is_integer()]
            ax.plot(ks, cur.pass_at_k, label=label, color=color, marker=marker, markersize=3.5,
                    markevery=mark, linewidth=1.6, linestyle="--" if is_base else "-", zorder=3)
            ax.fill_between(ks, cur.ci_low, cur.ci_high, color=color, alpha=0.15, linewidth=0)
        ax.set_xscale("log", base=2)
        if all_ks:
            _log2_ticks(ax, all_ks)
        else:
            ax.text(0.5, 0.5, "no probe", transform=ax.transAxes, ha="center", color="#888888")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(task)
        ax.set_xlabel("k")
        ax.set_ylabel("pass@k")
        if panels[task]:
            ax.legend(loc="lower right", frameon=False, fontsize=8)
    fig.suptitle(title)
    return _save(fig, path)


def write_grid_csv(panels: Mapping[str, Mapping[str, Curve]], path: str | os.PathLike) -> Path:
    """task, model, k, pass@k, ci_low, ci_high: every point of every panel."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["task", "model", "k", "pass_at_k", "ci_low", "ci_high"])
        for task, curves in panels.items():
            for label, cur in curves.items():
                for k, v, lo, hi in zip(cur.ks, cur.pass_at_k, cur.ci_low, cur.ci_high):
                    w.writerow([task, label, int(k), f"{v:.6f}", f"{lo:.6f}", f"{hi:.6f}"])
    return path


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", default=os.environ.get(
        "BOUNDLAB_STORE", str(Path.home() / ".cache/boundlab/store.sqlite")))
    ap.add_argument("--models", nargs="+", required=True, help="label=NAME_OR_KEY ...")
    ap.add_argument("--tasks", nargs="+", default=list(PAPER_MATH))
    ap.add_argument("--out", required=True, help="the PNG; a CSV of the points is written beside it")
    ap.add_argument("--title", default="pass@k per benchmark")
    ap.add_argument("--iters", type=int, default=1000)
    a = ap.parse_args(argv)
    models = {}
    for m in a.models:
        label, sep, spec = m.partition("=")
        if not sep or not label or not spec:
            raise SystemExit(f"error: --models takes label=NAME_OR_KEY, got {m!r}")
        models[label] = spec
    if not Path(a.store).is_file():
        raise SystemExit(f"error: no probe store at {a.store} (--store FILE)")
    store = Store(a.store, writable=False)
    try:
        panels, missing = grid_curves(store, models, a.tasks, iters=a.iters)
    finally:
        store.close()
    out = plot_grid(panels, a.out, a.title)
    write_grid_csv(panels, out.with_suffix(".csv"))
    print(f"wrote {out} and {out.with_suffix('.csv')}")
    for cell in missing:
        print(f"  no probe: {cell}")


if __name__ == "__main__":
    main()
