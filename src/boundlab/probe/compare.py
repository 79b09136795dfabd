"""Checkpoint vs base on the same problems: the one comparison that boundary tracking (each probe's
row) and the report (each run's table) both show, so the two can never disagree.

`crossing_k` interpolates in log2(k), not in k: the curves are drawn and read on a log-k axis.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boundlab.probe.estimator import bootstrap_diff_ci
from boundlab.probe.runner import ProbeResult


def crossing_k(base: np.ndarray, other: np.ndarray, tol: float = 1e-12) -> float | None:
    """First k at which `other`'s pass@k curve falls strictly below the base's after starting
    above, linearly interpolated in log2(k) on the difference. None when it never crosses: two
    curves that only meet (both reach 1.0 at k = n, say) have not crossed."""
    d = np.asarray(other, dtype=float) - np.asarray(base, dtype=float)
    if len(d) == 0 or d[0] <= tol:
        return None
    below = np.nonzero(d < -tol)[0]
    if len(below) == 0:
        return None
    j = int(below[0])
    k0, k1 = j, j + 1  # ks are 1-based: index j is k=j+1
    x0, x1 = np.log2(k0), np.log2(k1)
    y0, y1 = d[j - 1], d[j]
    x = x0 + (x1 - x0) * (y0 / (y0 - y1)) if y0 != y1 else x1
    return float(2 ** x)


def compare(base: ProbeResult, res: ProbeResult, iters: int = 1000) -> dict[str, Any]:
    """Deltas against the base on the same problems, with paired bootstrap CIs."""
    if base.problem_ids != res.problem_ids:
        raise ValueError("base and checkpoint were probed on different problems")
    kmax = min(base.kmax, res.kmax)
    out: dict[str, Any] = {"n": kmax}
    for k in (1, kmax):
        mean, lo, hi = bootstrap_diff_ci(res.curve.per_problem[:, k - 1],
                                         base.curve.per_problem[:, k - 1], iters=iters)
        tag = "1" if k == 1 else "n"
        out[f"delta_pass@{tag}"], out[f"delta_pass@{tag}_ci_low"], out[f"delta_pass@{tag}_ci_high"] = mean, lo, hi
    base_solved, solved = base.solvable, res.solvable
    out["lost"] = len(base_solved - solved)
    out["gained"] = len(solved - base_solved)
    out["crossing_k"] = crossing_k(base.curve.pass_at_k[:kmax], res.curve.pass_at_k[:kmax])
    return out
