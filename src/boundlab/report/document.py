"""report.md under construction: its lines, and the CSV tables and PNG figures it links.

Numbers are shown with 4 decimals in report.md and at full precision (`repr`) in the CSVs; the
same tables go to W&B with inf/nan as empty cells (W&B tables reject them).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np


@dataclass
class Table:
    name: str  # file stem: <name>.csv, W&B key report/<name>
    columns: list[str]
    rows: list[list[Any]]


def fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "–"
        if math.isinf(v):
            return "∞" if v > 0 else "-∞"
        return f"{v:.{digits}f}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def _csv_value(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (list, tuple)):
        return " ".join(map(str, v))
    return "" if v is None else v


def plain(v: Any) -> Any:
    """A W&B-table-friendly value (no inf/nan, no numpy scalars, no lists)."""
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (list, tuple)):
        return " ".join(map(str, v))
    return v


def anchor(title: str) -> str:
    """The markdown anchor of a `## title` heading (GitHub's rule for these titles)."""
    keep = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -")
    return keep.replace(" ", "-")


def id_list(ids: Sequence[str], limit: int) -> str:
    """Problem ids in backticks, at most `limit` of them, then how many more."""
    if not ids:
        return "none"
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    return shown + (f" … and {len(ids) - limit} more" if len(ids) > limit else "")


class Doc:
    """report.md under construction, and the CSV and PNG files it links."""

    def __init__(self, out: Path):
        self.out = out
        self.lines: list[str] = []
        self.tables: list[Table] = []
        self.figures: list[Path] = []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)
        self.lines.append("")

    def csv(self, t: Table) -> Path:
        """Write `<name>.csv` (every column and row); it is logged to W&B with the rest."""
        path = self.out / f"{t.name}.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(t.columns)
            for r in t.rows:
                w.writerow([_csv_value(v) for v in r])
        self.tables.append(t)
        return path

    def table(self, t: Table, md_columns: Sequence[str] | None = None, max_rows: int | None = None,
              caption: str = "") -> None:
        """Write `<name>.csv` and show the table (or some of its columns) in report.md."""
        path = self.csv(t)
        cols = list(md_columns or t.columns)
        idx = [t.columns.index(c) for c in cols]
        rows = t.rows if max_rows is None else t.rows[:max_rows]
        md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        md += ["| " + " | ".join(fmt(r[i]) for i in idx) + " |" for r in rows]
        more = f" ({len(t.rows) - len(rows)} more rows in the CSV)" if len(rows) < len(t.rows) else ""
        self.add(*md)
        self.add(f"{caption}{' ' if caption else ''}Table: [{path.name}]({path.name}){more}.")

    def figure(self, path: Path, alt: str) -> None:
        self.figures.append(path)
        self.add(f"![{alt}]({path.name})")

    def write(self) -> Path:
        path = self.out / "report.md"
        path.write_text("\n".join(self.lines).rstrip() + "\n", encoding="utf-8")
        return path
