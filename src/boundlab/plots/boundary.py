"""The boundary over training: pass@1 and pass@n by step (all problems, one panel per tier), and the
entropy view by step."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from boundlab.plots.style import BASE_COLOR, PALETTE, _finite, _new_figure, _save


def plot_boundary(
    steps: Sequence[float],
    pass1: Sequence[float],
    passn: Sequence[float],
    base_pass1: float | None,
    base_passn: float | None,
    path: str | os.PathLike,
    n: int,
    title: str | None = None,
    xlabel: str = "training step",
) -> Path:
    """pass@1 and pass@n of each checkpoint against training step, the base model as dashed lines.

    The paper's Figure 1 (right): training lifts pass@1 while pass@n, the boundary, stays or falls.
    """
    fig, ax = _new_figure()
    c1, cn = PALETTE[0], PALETTE[1]
    steps = [float(s) for s in steps]
    ax.plot(steps, _finite(pass1), color=c1, marker="o", markersize=4, linewidth=1.8, label="pass@1", zorder=3)
    ax.plot(steps, _finite(passn), color=cn, marker="s", markersize=4, linewidth=1.8, label=f"pass@{n}", zorder=3)
    if base_pass1 is not None:
        ax.axhline(float(base_pass1), color=c1, linestyle="--", linewidth=1.3, alpha=0.8, label="base pass@1")
    if base_passn is not None:
        ax.axhline(float(base_passn), color=cn, linestyle="--", linewidth=1.3, alpha=0.8, label=f"base pass@{n}")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("pass@k")
    ax.set_title(title or f"Reasoning boundary over training (n = {n})")
    ax.legend(loc="best", frameon=False, ncols=2)
    return _save(fig, path)


def plot_boundary_panels(
    overall: Mapping[str, object],
    path: str | os.PathLike,
    n: int,
    metric: str = "answer",
    panels: Mapping[str, Mapping[str, object]] | None = None,
    group_by: str | None = None,
    xlabel: str = "training step",
) -> Path:
    """The boundary over training, all problems first and then one panel per group (tier).

    Each panel (`overall` and each of `panels`) is a mapping with `steps`, `pass@1`, `pass@n`,
    `base_pass@1`, `base_pass@n` and optionally `null_pass@1`, `null_pass@n` (the base probed again
    with another seed: the chance band around the base), `pass@1_ci` and `pass@n_ci` (each point's
    (low, high) interval, drawn as a band), `alarm_steps` (where the boundary alarm fired on this
    panel: a red line and the title says so), `saturated` and `problems`. The metric
    (strict or answer-only) is named in the title and on the y axis.
    """
    items = [("all problems", overall)] + [(f"{group_by}={t}" if group_by else str(t), p)
                                           for t, p in (panels or {}).items()]
    cols = min(4, len(items))
    rows = math.ceil(len(items) / cols)
    fig = Figure(figsize=(3.6 * cols if cols > 1 else 6.4, 3.0 * rows + 0.9 if cols > 1 else 4.4),
                 dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    c1, cn = PALETTE[0], PALETTE[1]
    name = "strict pass@k (right answer, valid trace)" if metric == "strict" else "pass@k (answer only)"
    seen: dict[str, object] = {}
    for i, (title, p) in enumerate(items):
        ax = axes[i // cols][i % cols]
        ax.grid(True, which="major", alpha=0.35, linewidth=0.8)
        ax.spines[["top", "right"]].set_visible(False)
        steps = [float(s) for s in p["steps"]]
        ax.plot(steps, _finite(p["pass@1"]), color=c1, marker="o", markersize=3.5, linewidth=1.6,
                label="pass@1", zorder=3)
        ax.plot(steps, _finite(p["pass@n"]), color=cn, marker="s", markersize=3.5, linewidth=1.6,
                label=f"pass@{n}", zorder=3)
        for key, color in (("pass@1", c1), ("pass@n", cn)):
            ci = p.get(f"{key}_ci")
            if ci:  # the 95% interval of every point (the base's at step 0), over problems
                ax.fill_between(steps, [float(a) for a, _ in ci], [float(b) for _, b in ci], color=color,
                                alpha=0.15, linewidth=0, label=f"{key} 95% CI")
        alarms = [float(s) for s in (p.get("alarm_steps") or [])]
        for s in alarms:
            ax.axvline(s, color="#c0392b", linewidth=1.4, alpha=0.85, zorder=2,
                       label="boundary alarm" if s == alarms[0] else None)
        ax.axhline(float(p["base_pass@1"]), color=c1, linestyle="--", linewidth=1.2, alpha=0.8,
                   label="base pass@1")
        ax.axhline(float(p["base_pass@n"]), color=cn, linestyle="--", linewidth=1.2, alpha=0.8,
                   label=f"base pass@{n}")
        if p.get("null_pass@1") is not None:
            ax.axhline(float(p["null_pass@1"]), color=c1, linestyle=":", linewidth=1.0, alpha=0.9,
                       label="null (base, other seed) pass@1")
            ax.axhline(float(p["null_pass@n"]), color=cn, linestyle=":", linewidth=1.0, alpha=0.9,
                       label=f"null pass@{n}")
        sub = title + (f" ({p['problems']} problems)" if p.get("problems") else "")
        if alarms:
            sub += "\nALARM at step " + ", ".join(f"{s:g}" for s in alarms)
        if p.get("saturated"):
            sub += "\nbase saturated at k = n"
        ax.set_title(sub, fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        if i // cols == rows - 1:
            ax.set_xlabel(xlabel)
        if i % cols == 0:
            ax.set_ylabel(name if len(items) == 1 else ("strict pass@k" if metric == "strict" else "pass@k"))
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)  # every entry any panel drew, once (an alarm may fire on one tier only)
    handles = (list(seen.values()), list(seen))
    for j in range(len(items), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    if len(items) == 1:
        axes[0][0].legend(loc="best", frameon=False, ncols=2, fontsize=8)
        fig.suptitle(f"Reasoning boundary over training (n = {n})")
    else:
        fig.legend(*handles, loc="outside lower center", frameon=False, ncols=3, fontsize=8)
        fig.suptitle(f"Reasoning boundary over training by {group_by}: {name}, n = {n}")
    return _save(fig, path)


def plot_entropy(
    steps: Sequence[float],
    mean: Sequence[float],
    p10: Sequence[float],
    p90: Sequence[float],
    base_mean: float | None,
    path: str | os.PathLike,
    null_mean: float | None = None,
    title: str | None = None,
    xlabel: str = "training step",
) -> Path:
    """The entropy view over training: each probe's mean per-token entropy per sample (averaged over
    samples), the 10th to 90th percentile of the per-sample values as a band, the base (and the null,
    the base with another seed) as lines. Drawn beside boundary.png: falling entropy with a flat or
    falling pass@n is the sharpening the paper describes."""
    fig, ax = _new_figure()
    c = PALETTE[2]
    steps = [float(s) for s in steps]
    ax.fill_between(steps, _finite(p10), _finite(p90), color=c, alpha=0.18, linewidth=0,
                    label="p10 to p90 of samples")
    ax.plot(steps, _finite(mean), color=c, marker="o", markersize=4, linewidth=1.8, label="mean",
            zorder=3)
    if base_mean is not None:
        ax.axhline(float(base_mean), color=BASE_COLOR, linestyle="--", linewidth=1.3, alpha=0.8,
                   label="base mean")
    if null_mean is not None:
        ax.axhline(float(null_mean), color=BASE_COLOR, linestyle=":", linewidth=1.0, alpha=0.9,
                   label="null (base, other seed) mean")
    ax.set_ylim(bottom=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("entropy per token (nats), mean per sample")
    ax.set_title(title or "Sampling entropy over training (at the probe temperature)")
    ax.legend(loc="best", frameon=False, fontsize=8)
    return _save(fig, path)
