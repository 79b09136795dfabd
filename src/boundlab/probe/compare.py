"""Checkpoint vs base on the same problems: the one comparison that boundary tracking (each probe's
row) and the report (each run's table) both show, so the two can never disagree.

The headline metric is *strict* pass@k (right answer and a valid trace) wherever the verifier can
tell (both probes have `c_strict`), else answer-only pass@k; `compare` says which in `metric` and,
under strict, adds the answer-only comparison beside it (`answer_*` keys).

`crossing_k` interpolates in log2(k), not in k: the curves are drawn and read on a log-k axis.
`crossing_with_ci` gives it a bootstrap interval (problems resampled, the same indices for both
models, both mean curves recomputed and the crossing found again). A resample whose curves never
cross by n counts as a crossing beyond n (+inf), one where the model is not above the base even at
k = 1 counts as k = 1, so the interval's bounds are order statistics, not interpolated. The report
and boundary tracking both call it (one implementation).

Saturation: when every problem is solved at k = n (pass@n = 1), a bootstrap CI of pass@n (and of
Δpass@n against such a base) collapses to [0, 0], which is saturation, not precision. `saturation`
flags it with the rule of three: with P problems all solved, the 95% upper bound on the share of
problems the model cannot solve (at this n) is 3/P (capped at 1: below 3 problems it says nothing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from boundlab.probe.curves import Curve
from boundlab.probe.estimator import bootstrap_ci, bootstrap_diff_ci
from boundlab.probe.runner import ProbeResult

STRICT, ANSWER = "strict", "answer"


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


# -- crossing k with a bootstrap interval --------------------------------------------------------
CROSSES, NO_CROSSING, NOT_ABOVE_AT_1 = "crosses", "no_crossing", "not_above_at_1"


@dataclass
class Crossing:
    # crosses: the model starts above the base and falls strictly below it at k (interpolated);
    # no_crossing: it stays above up to n; not_above_at_1: it is not above the base even at k = 1.
    status: str
    k: float | None
    ci_low: float
    ci_high: float  # +inf: some resamples do not cross by n
    n: int
    # Share of bootstrap resamples whose curves cross by n (not above at k = 1 counts as 1).
    p_cross: float
    # not_above_at_1 only: the model rises above the base at some larger k (the reverse order).
    above_later: bool = False

    def describe(self, ci: float = 0.95) -> str:
        pct = f"{round(ci * 100):d}%"
        hi = f"> {self.n}" if math.isinf(self.ci_high) else f"{self.ci_high:.1f}"
        lo = f"> {self.n}" if math.isinf(self.ci_low) else f"{self.ci_low:.1f}"
        if self.status == CROSSES:
            return f"k ≈ {self.k:.1f} ({pct} CI {lo} to {hi})"
        if self.status == NO_CROSSING:
            return (f"no crossing up to n = {self.n} (curves cross by n in "
                    f"{self.p_cross:.0%} of bootstrap resamples)")
        if self.above_later:
            return (f"no crossing: the model starts at or below the base at k = 1 and rises above it "
                    f"by k = {self.n} (the reverse of sharpening)")
        return f"no crossing: the model is at or below the base at every k up to n = {self.n}"

    def fields(self) -> dict[str, Any]:
        """The row fields boundary tracking writes (boundary.csv, probes.jsonl, W&B)."""
        return {"crossing_k": self.k, "crossing_k_ci_low": self.ci_low,
                "crossing_k_ci_high": self.ci_high, "crossing_share": self.p_cross}


def _crossing_value(base: np.ndarray, model: np.ndarray) -> float:
    k = crossing_k(base, model)
    if k is not None:
        return k
    return 1.0 if model[0] - base[0] <= 0 else math.inf


def crossing_with_ci(base_pp: np.ndarray, model_pp: np.ndarray, iters: int = 1000,
                     ci: float = 0.95, seed: int = 0) -> Crossing:
    """The crossing k of the mean curves (`crossing_k`, interpolated in log2 k on the difference)
    over k = 1..min(n_base, n_model), with a percentile bootstrap CI over problems."""
    base_pp, model_pp = np.asarray(base_pp, float), np.asarray(model_pp, float)
    if base_pp.shape[0] != model_pp.shape[0] or base_pp.shape[0] == 0:
        raise ValueError("the crossing needs the same (non-empty) problem set for base and model")
    kmax = min(base_pp.shape[1], model_pp.shape[1])
    base_pp, model_pp = base_pp[:, :kmax], model_pp[:, :kmax]
    b_mean, m_mean = base_pp.mean(axis=0), model_pp.mean(axis=0)
    k = crossing_k(b_mean, m_mean)
    d = m_mean - b_mean
    status = CROSSES if k is not None else (NOT_ABOVE_AT_1 if d[0] <= 0 else NO_CROSSING)
    p = base_pp.shape[0]
    rng = np.random.default_rng(seed)
    vals = np.empty(iters, dtype=np.float64)
    for i in range(iters):
        w = np.bincount(rng.integers(0, p, size=p), minlength=p).astype(np.float64) / p
        vals[i] = _crossing_value(w @ base_pp, w @ model_pp)
    vals.sort()
    alpha = 1 - ci
    lo = vals[min(iters - 1, int(math.floor(alpha / 2 * iters)))]
    hi = vals[max(0, int(math.ceil((1 - alpha / 2) * iters)) - 1)]
    return Crossing(status, k, float(lo), float(hi), kmax, float(np.isfinite(vals).mean()),
                    bool(status == NOT_ABOVE_AT_1 and np.any(d > 0)))


# -- the headline metric -------------------------------------------------------------------------
def headline_metric(*results: ProbeResult) -> str:
    """strict when every result knows it (the verifier checks the trace), else answer."""
    return STRICT if results and all(r.curve_strict is not None for r in results) else ANSWER


def view(res: ProbeResult, metric: str) -> tuple[Curve, np.ndarray]:
    """The curve and per-problem correct counts of one metric."""
    if metric == STRICT:
        if res.curve_strict is None or res.c_strict is None:
            raise ValueError(f"probe {res.key} has no strict (valid-trace) counts")
        return res.curve_strict, np.asarray(res.c_strict)
    return res.curve, np.asarray(res.c)


def saturation(curve: Curve, rows: np.ndarray | None = None) -> dict[str, Any]:
    """{"saturated": pass@n == 1 on these problems, "rule_of_three": min(1, 3/P) when saturated
    else None}.
    `rows` picks a subset of problems (a group)."""
    last = curve.per_problem[:, -1] if rows is None else curve.per_problem[rows, -1]
    p = len(last)
    sat = bool(p > 0 and np.all(last >= 1.0 - 1e-12))
    return {"saturated": sat, "rule_of_three": min(1.0, 3.0 / p) if sat else None}


def group_stats(res: ProbeResult, metric: str, rows: np.ndarray, ci: float = 0.95,
                iters: int = 1000) -> dict[str, Any]:
    """One probe on a group of its problems (`rows`): pass@1 and pass@n with bootstrap CIs over
    the group's problems, solvable, saturation, answer-only pass@1 and pass@n, the mean curve."""
    cur, c = view(res, metric)
    acur, _ = view(res, ANSWER)
    pp = cur.per_problem[rows]
    lo, hi = bootstrap_ci(pp[:, [0, -1]], iters=iters, alpha=1 - ci)
    return {"problems": len(rows), "pass@1": float(pp[:, 0].mean()), "pass@1_ci_low": float(lo[0]),
            "pass@1_ci_high": float(hi[0]), "pass@n": float(pp[:, -1].mean()),
            "pass@n_ci_low": float(lo[1]), "pass@n_ci_high": float(hi[1]),
            "solvable": int(np.sum(c[rows] > 0)), **saturation(cur, rows),
            "answer_pass@1": float(acur.per_problem[rows, 0].mean()),
            "answer_pass@n": float(acur.per_problem[rows, -1].mean()),
            "curve": [round(float(x), 6) for x in pp.mean(axis=0)]}


def _diffs(bcur: Curve, cur: Curve, rows: np.ndarray | None, kmax: int, iters: int,
           ci: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in (1, kmax):
        a, b = cur.per_problem[:, k - 1], bcur.per_problem[:, k - 1]
        if rows is not None:
            a, b = a[rows], b[rows]
        mean, lo, hi = bootstrap_diff_ci(a, b, iters=iters, alpha=1 - ci)
        tag = "1" if k == 1 else "n"
        out[f"delta_pass@{tag}"], out[f"delta_pass@{tag}_ci_low"], out[f"delta_pass@{tag}_ci_high"] = mean, lo, hi
    return out


def _compare_one(base: ProbeResult, res: ProbeResult, metric: str, kmax: int, iters: int,
                 ci: float, with_crossing: bool) -> dict[str, Any]:
    (bcur, bc), (cur, c) = view(base, metric), view(res, metric)
    out: dict[str, Any] = _diffs(bcur, cur, None, kmax, iters, ci)
    ids = base.problem_ids
    base_solved = {p for p, x in zip(ids, bc) if x > 0}
    solved = {p for p, x in zip(ids, c) if x > 0}
    out["lost"] = len(base_solved - solved)
    out["gained"] = len(solved - base_solved)
    if with_crossing:
        out.update(crossing_with_ci(bcur.per_problem[:, :kmax], cur.per_problem[:, :kmax], iters,
                                    ci).fields())
    return out


def compare(base: ProbeResult, res: ProbeResult, iters: int = 1000, ci: float = 0.95,
            metric: str | None = None) -> dict[str, Any]:
    """Deltas against the base on the same problems, with paired bootstrap CIs, lost and gained
    problems and the crossing k with its interval, on the headline metric (`metric`: strict when
    both probes know it); under strict, the answer-only deltas, lost and gained beside them."""
    if base.problem_ids != res.problem_ids:
        raise ValueError("base and checkpoint were probed on different problems")
    metric = metric or headline_metric(base, res)
    kmax = min(base.kmax, res.kmax)
    out: dict[str, Any] = {"n": kmax, "metric": metric}
    out.update(_compare_one(base, res, metric, kmax, iters, ci, with_crossing=True))
    if metric == STRICT:
        ans = _compare_one(base, res, ANSWER, kmax, iters, ci, with_crossing=False)
        out.update({f"answer_{k}": v for k, v in ans.items()})
    return out


def compare_groups(base: ProbeResult, res: ProbeResult, groups: dict[str, np.ndarray],
                   iters: int = 1000, ci: float = 0.95, metric: str | None = None
                   ) -> dict[str, dict[str, Any]]:
    """Per group (tag -> row indices into the problems): Δpass@1 and Δpass@n with paired CIs, lost
    and gained, on the headline metric."""
    if base.problem_ids != res.problem_ids:
        raise ValueError("base and checkpoint were probed on different problems")
    metric = metric or headline_metric(base, res)
    kmax = min(base.kmax, res.kmax)
    (bcur, bc), (cur, c) = view(base, metric), view(res, metric)
    out = {}
    for tag, rows in groups.items():
        d = _diffs(bcur, cur, rows, kmax, iters, ci)
        d["lost"] = int(np.sum((bc[rows] > 0) & (c[rows] == 0)))
        d["gained"] = int(np.sum((bc[rows] == 0) & (c[rows] > 0)))
        out[tag] = d
    return out
