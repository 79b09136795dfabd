"""The report's own figures (coverage, perplexity, progression, algorithms, breakdowns); the pass@k
curves use `boundlab.plots.curves.plot_passk`. Agg canvas, never pyplot (see boundlab.plots)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.ticker import MaxNLocator

from boundlab.plots.style import BASE_COLOR, MARKERS, PALETTE, _new_figure, _save

# Coverage cells, in drawing order, with colours that read without a legend lookup.
CELLS = (("both", "both solve", "#009E73"), ("base_only", "base only", "#D55E00"),
         ("model_only", "model only", "#0072B2"), ("neither", "neither", "#BBBBBB"))


def plot_coverage(rows: Sequence[Mapping[str, int]], labels: Sequence[str], path: str | os.PathLike,
                  title: str = "Solvable-set coverage against the base") -> Path:
    """One horizontal stacked bar per model: problems both solve, only the base, only the model,
    neither; each segment labelled with its count."""
    fig, ax = _new_figure(7.2, 1.5 + 0.55 * max(1, len(labels)))
    y = np.arange(len(labels))[::-1]
    left = np.zeros(len(labels))
    total = max(sum(rows[0].values()), 1) if rows else 1
    for key, name, color in CELLS:
        vals = np.array([r[key] for r in rows], dtype=float)
        ax.barh(y, vals, left=left, color=color, label=name, height=0.6, edgecolor="white")
        for yi, l, v in zip(y, left, vals):
            if v / total >= 0.04:
                ax.text(l + v / 2, yi, f"{int(v)}", ha="center", va="center", fontsize=8,
                        color="black" if key == "neither" else "white")
        left += vals
    ax.set_yticks(y, labels)
    ax.set_xlabel("problems")
    ax.set_xlim(0, total)
    ax.grid(False)
    fig.suptitle(title)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=4, frameon=False, fontsize=8)
    return _save(fig, path)


def plot_perplexity(groups: Mapping[str, Sequence[float]], path: str | os.PathLike,
                    title: str = "Perplexity under the base model") -> Path:
    """Box plots of per-response perplexity, one box per group, points overlaid."""
    fig, ax = _new_figure(max(5.5, 1.6 + 1.4 * len(groups)), 4.4)
    names = list(groups)
    data = [np.asarray(groups[n], dtype=float) for n in names]
    pos = np.arange(1, len(names) + 1)
    nonempty = [i for i, d in enumerate(data) if d.size]
    if nonempty:
        ax.boxplot([data[i] for i in nonempty], positions=pos[nonempty], widths=0.5, showfliers=False,
                   medianprops={"color": "black"})
    rng = np.random.default_rng(0)
    for i, d in enumerate(data):
        color = BASE_COLOR if names[i].lower().startswith("base") else PALETTE[i % len(PALETTE)]
        ax.scatter(pos[i] + rng.uniform(-0.15, 0.15, d.size), d, s=8, alpha=0.5, color=color, zorder=3)
    finite = np.concatenate([d for d in data if d.size]) if nonempty else np.array([1.0])
    if finite.size and np.nanmax(finite) / max(np.nanmin(finite), 1e-12) > 30:
        ax.set_yscale("log")
    ax.set_xticks(pos, [f"{n}\n({d.size} responses)" for n, d in zip(names, data)], fontsize=8)
    ax.set_ylabel("perplexity under the base")
    ax.set_title(title)
    return _save(fig, path)


def plot_progression(series: Mapping[str, tuple[Sequence[int], Sequence[float], Sequence[float]]],
                     base_pass1: float, base_passn: float, n: int, path: str | os.PathLike) -> Path:
    """pass@1 (left) and pass@n (right) against the training step, one line per run, with the base
    as a dashed grey line (the paper's Table 3 as a figure)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.6, 4.0), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, j, name, base in ((axes[0], 1, "pass@1", base_pass1), (axes[1], 2, f"pass@{n}", base_passn)):
        for i, (label, vals) in enumerate(series.items()):
            ax.plot(vals[0], vals[j], marker=MARKERS[i % len(MARKERS)], markersize=4, linewidth=1.8,
                    color=PALETTE[i % len(PALETTE)], label=label)
        ax.axhline(base, color=BASE_COLOR, linestyle="--", linewidth=1.3, label="base")
        ax.set_title(name)
        ax.set_xlabel("training step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-0.02, 1.02)
        ax.grid(True, alpha=0.35)
        ax.spines[["top", "right"]].set_visible(False)
    axes[0].set_ylabel("pass@k")
    axes[1].legend(loc="best", frameon=False, fontsize=8)
    fig.suptitle("Checkpoint progression")
    return _save(fig, path)


def plot_grouped_bars(groups: Sequence[str], bars: Mapping[str, Sequence[float]],
                      path: str | os.PathLike, title: str, ylabel: str = "pass@k",
                      errors: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None) -> Path:
    """Bars per group (x) and series (colour), with optional (low, high) error bars per series."""
    fig, ax = _new_figure(max(5.5, 1.5 + 0.35 * len(groups) * max(1, len(bars))), 4.2)
    x = np.arange(len(groups))
    width = 0.8 / max(1, len(bars))
    for i, (name, vals) in enumerate(bars.items()):
        vals = np.asarray(vals, dtype=float)
        xs = x - 0.4 + width * (i + 0.5)
        yerr = None
        if errors and name in errors:
            lo, hi = (np.asarray(e, dtype=float) for e in errors[name])
            yerr = np.vstack([np.clip(vals - lo, 0, None), np.clip(hi - vals, 0, None)])
        color = BASE_COLOR if name.lower().startswith("base") else PALETTE[i % len(PALETTE)]
        ax.bar(xs, vals, width=width * 0.95, color=color, label=name, yerr=yerr, capsize=2,
               error_kw={"linewidth": 0.8})
    ax.set_xticks(x, groups, fontsize=8, rotation=0 if len(groups) <= 6 else 30,
                  ha="center" if len(groups) <= 6 else "right")
    ax.set_ylim(0, 1.05 if all(math.isfinite(v) and v <= 1 for vs in bars.values() for v in vs) else None)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="best", frameon=False, fontsize=8)
    return _save(fig, path)


def plot_breakdown(tags: Sequence[str], panels: Mapping[str, Mapping[str, Sequence[float]]],
                   path: str | os.PathLike, title: str) -> Path:
    """One panel per metric (pass@1, pass@n); in each, bars per tag (x) and model (colour), the
    base in grey."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    models = list(next(iter(panels.values()))) if panels else []
    width_in = max(4.0, 1.2 + 0.3 * len(tags) * max(1, len(models)))
    fig = Figure(figsize=(2 * width_in, 4.0), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True))
    x = np.arange(len(tags))
    width = 0.8 / max(1, len(models))
    for ax, (name, series) in zip(axes, panels.items()):
        colour_i = 0
        for i, (label, vals) in enumerate(series.items()):
            is_base = label.lower().startswith("base")
            color = BASE_COLOR if is_base else PALETTE[colour_i % len(PALETTE)]
            colour_i += 0 if is_base else 1
            ax.bar(x - 0.4 + width * (i + 0.5), np.asarray(vals, float), width=width * 0.95,
                   color=color, label=label)
        ax.set_xticks(x, tags, fontsize=8, rotation=0 if len(tags) <= 6 else 30,
                      ha="center" if len(tags) <= 6 else "right")
        ax.set_title(name)
        ax.set_ylim(0, 1.05)
        ax.grid(True, axis="y", alpha=0.35)
        ax.spines[["top", "right"]].set_visible(False)
    axes[0].set_ylabel("pass@k")
    axes[-1].legend(loc="best", frameon=False, fontsize=8)
    fig.suptitle(title)
    return _save(fig, path)


def plot_tradeoff(points: Sequence[tuple[str, float, float, bool]], base: tuple[float, float],
                  path: str | os.PathLike, title: str, xlabel: str = "pass@1",
                  ylabel: str = "pass@n") -> Path:
    """One point per (group, x, y, marked): colour by group, a ring around marked points, the base
    as a black star with dashed guides (up and right of both guides: better on both axes)."""
    fig, ax = _new_figure(6.0, 4.6)
    groups = list(dict.fromkeys(g for g, *_ in points))
    for i, g in enumerate(groups):
        xs = [x for gg, x, _, _ in points if gg == g]
        ys = [y for gg, _, y, _ in points if gg == g]
        ax.scatter(xs, ys, s=28, color=PALETTE[i % len(PALETTE)], marker=MARKERS[i % len(MARKERS)],
                   label=g, zorder=3)
    marked = [(x, y) for _, x, y, m in points if m]
    if marked:
        ax.scatter(*zip(*marked), s=120, facecolors="none", edgecolors="black", linewidths=1.0,
                   label="raises pass@1, no tier loses pass@n", zorder=4)
    ax.scatter([base[0]], [base[1]], s=140, marker="*", color=BASE_COLOR, label="base", zorder=5)
    ax.axvline(base[0], color=BASE_COLOR, linestyle="--", linewidth=0.7)
    ax.axhline(base[1], color=BASE_COLOR, linestyle="--", linewidth=0.7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="best", frameon=False, fontsize=7)
    return _save(fig, path)
