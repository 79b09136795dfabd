"""Seed-level intervals recomputed from a report's shipped per-problem file (issue 40, item 3).

`problems.csv` (written beside every report in docs/, e.g. docs/toy2_paper/) holds, per problem,
`base_n, base_c` and `<arm> n, <arm> c` for each probed model: the counts of the report's headline
metric (strict in the toy worlds). From it alone, without the store, this module recomputes each
arm's Δpass@k against the base with the hierarchical bootstrap (`boundlab.probe.hierarchical`)
and labels each cell by the unresolved rule (`boundlab.probe.significance`), overall and per tier.

Arms are grouped from the column names as the report groups run dirs (`remedies.arm_of`:
`0_grpo_s0`, `1_grpo_s1`, `2_grpo_s2` form the arm `grpo`); `groups` overrides that.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from boundlab.errors import UserError
from boundlab.probe.hierarchical import ITERS, HierResult, hierarchical_delta
from boundlab.probe.significance import classify

ALL = "all"


@dataclass(frozen=True)
class Cell:
    arm: str
    seeds: tuple[str, ...]
    tier: str
    problems: int
    result: HierResult
    labels: tuple[str, ...]  # one per k


def read_problems_csv(path: Path) -> tuple[list[str], tuple[np.ndarray, np.ndarray],
                                           dict[str, tuple[np.ndarray, np.ndarray]]]:
    """(problem ids, the base's (n, c), {model column name: (n, c)}) from a report's problems.csv."""
    path = Path(path)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        rows = list(reader)
    for need in ("problem_id", "base_n", "base_c"):
        if need not in cols:
            raise UserError(f"{path}: no column {need!r} (a report's problems.csv has problem_id, base_n, "
                            f"base_c and '<model> n', '<model> c' per model)")
    models = [c[:-2] for c in cols if c.endswith(" n") and f"{c[:-2]} c" in cols]
    if not rows:
        raise UserError(f"{path}: no problems")

    def ints(col: str) -> np.ndarray:
        try:
            return np.array([int(r[col]) for r in rows], dtype=np.int64)
        except (TypeError, ValueError):
            bad = next(i for i, r in enumerate(rows, 2) if not str(r[col]).strip().lstrip("-").isdigit())
            raise UserError(f"{path}, line {bad}: column {col!r} is not an integer: {rows[bad - 2][col]!r}") from None

    def table(n_col: str, c_col: str) -> tuple[np.ndarray, np.ndarray]:
        n, c = ints(n_col), ints(c_col)
        bad = np.nonzero((n < 1) | (c < 0) | (c > n))[0]
        if len(bad):
            i = int(bad[0])
            raise UserError(f"{path}, line {i + 2}: need 0 <= c <= n and n >= 1 ({n_col}={n[i]}, {c_col}={c[i]})")
        return n, c

    ids = [r["problem_id"] for r in rows]
    return ids, table("base_n", "base_c"), {m: table(f"{m} n", f"{m} c") for m in models}


def group_arms(models: Sequence[str], groups: Mapping[str, Sequence[str]] | None = None
               ) -> dict[str, list[str]]:
    """{arm: its model columns}: `groups` as given, else by the report's run-dir naming."""
    from boundlab.report.sections.remedies import arm_of

    if groups is not None:
        missing = [m for ms in groups.values() for m in ms if m not in models]
        if missing:
            raise UserError(f"no such model in problems.csv: {', '.join(missing)} (have: {', '.join(models)})")
        return {a: list(ms) for a, ms in groups.items()}
    out: dict[str, list[str]] = {}
    for m in models:
        out.setdefault(arm_of(m, m), []).append(m)
    return out


def seed_cells(ids: Sequence[str], base: tuple[np.ndarray, np.ndarray],
               models: Mapping[str, tuple[np.ndarray, np.ndarray]], arms: Mapping[str, Sequence[str]],
               tiers: Mapping[str, str] | None, ks: Sequence[int], iters: int | None = ITERS,
               ci: float = 0.95, seed: int = 0) -> list[Cell]:
    """Every arm's hierarchical Δpass@k per tier (in natural order) and on all problems."""
    from boundlab.report.analysis import _tag_sort_key

    groups: dict[str, list[int]] = {}
    if tiers is not None:
        missing = [p for p in ids if p not in tiers]
        if missing:
            raise UserError(f"no tier for problem {missing[0]} ({len(missing)} of {len(ids)} untagged)")
        for i, p in enumerate(ids):
            groups.setdefault(tiers[p], []).append(i)
    order = [*sorted(groups, key=_tag_sort_key), ALL]
    groups[ALL] = list(range(len(ids)))
    cells = []
    for arm, names in arms.items():
        for tier in order:
            rows = np.array(groups[tier])
            sub = [(models[m][0][rows], models[m][1][rows]) for m in names]
            h = hierarchical_delta(sub, [(base[0][rows], base[1][rows])], ks, iters=iters, ci=ci, seed=seed)
            labels = tuple(classify(float(h.lo[j]), float(h.hi[j]), len(rows)) for j in range(len(ks)))
            cells.append(Cell(arm, tuple(names), tier, len(rows), h, labels))
    return cells


def toy2_tiers(ids: Sequence[str]) -> dict[str, str]:
    """{problem id: tier} for toy2 test problems (the shipped test split), through the task registry
    (the report layer does not import a world; the entry point registers it: boundlab.builtins)."""
    from boundlab.config import TaskConfig
    from boundlab.tasks import build_task

    want = set(ids)
    task = build_task(TaskConfig(name="toy2", split="test"))  # every tier, every problem
    return {p.problem_id: p.meta["tier"] for p in task.problems if p.problem_id in want}
