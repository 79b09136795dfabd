"""pass@k against k (log2 axis), any number of models, with intervals where given."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path


from boundlab.plots.style import BASE_COLOR, MARKERS, PALETTE, _finite, _log2_ticks, _new_figure, _save


def plot_passk(
    curves: Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float] | None, Sequence[float] | None]],
    path: str | os.PathLike,
    title: str = "pass@k",
    xlabel: str = "k (number of samples)",
    ylabel: str = "pass@k",
) -> Path:
    """pass@k against k on a log2 x axis, one curve per entry, with CI bands where `lo`/`hi` are given.

    `curves` maps a label to `(ks, values, lo, hi)`; `lo` and `hi` may be None. A curve whose label
    starts with "base" is drawn in grey, dashed, so the reference reads as a reference; one whose
    label starts with "predicted" (a model's extrapolation, not a measurement) is dashed too.
    """
    fig, ax = _new_figure()
    all_ks: list[float] = []
    colour_i = 0
    for label, (ks, values, lo, hi) in curves.items():
        ks = [float(k) for k in ks]
        values = _finite(values)
        if not ks:
            continue
        all_ks.extend(ks)
        is_base = label.lower().startswith("base")
        color = BASE_COLOR if is_base else PALETTE[colour_i % len(PALETTE)]
        marker = "o" if is_base else MARKERS[colour_i % len(MARKERS)]
        if not is_base:
            colour_i += 1
        ax.plot(
            ks,
            values,
            label=label,
            color=color,
            marker=marker,
            markersize=4,
            # With every k from 1 to n, mark only the powers of two: evenly spaced on a log2 axis.
            markevery=None if len(ks) <= 16 else [i for i, k in enumerate(ks) if k > 0 and math.log2(k).is_integer()],
            linewidth=1.8,
            linestyle="--" if is_base or label.lower().startswith("predicted") else "-",
            zorder=3,
        )
        lo, hi = _finite(lo), _finite(hi)
        if lo is not None and hi is not None:
            ax.fill_between(ks, lo, hi, color=color, alpha=0.15, linewidth=0, zorder=2)
    ax.set_xscale("log", base=2)
    if all_ks:
        _log2_ticks(ax, all_ks)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if curves:
        ax.legend(loc="best", frameon=False)
    return _save(fig, path)
