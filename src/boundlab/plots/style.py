"""The shared look of every figure: palette, markers, figure, the log2-k axis, atomic save."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

# Colour-blind-safe (Okabe-Ito), in the order curves are given.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
BASE_COLOR = "#555555"


def _new_figure(width: float = 6.4, height: float = 4.4) -> tuple[Figure, object]:
    fig = Figure(figsize=(width, height), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, which="major", alpha=0.35, linewidth=0.8)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _save(fig: Figure, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    return path


def _finite(values: Sequence[float] | None) -> list[float] | None:
    if values is None:
        return None
    return [float("nan") if v is None else float(v) for v in values]


def _log2_ticks(ax, ks: Sequence[float]) -> None:
    """Ticks at powers of two, labelled as plain integers (1, 2, 4, ..., 1024)."""
    lo, hi = min(ks), max(ks)
    first, last = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    ticks = [2.0**e for e in range(first, last + 1)]
    step = max(1, math.ceil(len(ticks) / 11))  # at most ~11 labels
    ax.xaxis.set_major_locator(FixedLocator(ticks[::step]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.set_xlim(lo / 2**0.25, hi * 2**0.25)
