"""The numbers of the report, as pure functions of per-problem counts (n, c) and pass@k matrices.

Every number of `report.md` is computed here, in `boundlab.report.perplexity` or in
`boundlab.probe`, never inline in the report writer, so each has a unit test.

Departures from the paper, and why:
- The crossing k gets a confidence interval (`boundlab.probe.compare.crossing_with_ci`, shared
  with boundary tracking): problems are resampled (the same indices for both models), both mean
  curves recomputed, and the crossing found again.
- dSE uses k = min(dse_k, n): with fewer than 256 samples the gap is reported at n, and says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from boundlab.probe.compare import (CROSSES, NO_CROSSING, NOT_ABOVE_AT_1, Crossing,  # noqa: F401
                                    compare, crossing_k, crossing_with_ci)
from boundlab.probe.curves import Curve, compute_curve, curve_from_matrix
from boundlab.probe.estimator import bootstrap_diff_ci, powers_of_two
from boundlab.probe.runner import ProbeResult

# Problem.meta fields that tag problems for breakdowns, in the order they are tried.
TAG_FIELDS = ("hard", "level", "subject", "difficulty", "type", "platform")


# -- problem sets -------------------------------------------------------------------------------
def natural_key(problem_id: str) -> list:
    """Sort key that puts `math500-9` before `math500-10`."""
    return [int(t) if i % 2 else t for i, t in enumerate(re.split(r"(\d+)", problem_id))]


def common_problems(per_probe: Sequence[Mapping[str, int]]) -> list[str]:
    """Problem ids with at least one sample in every probe, in natural order."""
    if not per_probe:
        return []
    ids = set(pid for pid, n in per_probe[0].items() if n > 0)
    for d in per_probe[1:]:
        ids &= {pid for pid, n in d.items() if n > 0}
    return sorted(ids, key=natural_key)


def aligned(counts: Mapping[str, tuple[int, int]], ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(n, c) arrays in the order of `ids` from {problem_id: (n, c)}."""
    n = np.array([counts[p][0] for p in ids], dtype=np.int64)
    c = np.array([counts[p][1] for p in ids], dtype=np.int64)
    return n, c


# -- summaries ----------------------------------------------------------------------------------
@dataclass
class Summary:
    """pass@1 and pass@n (n = the smallest per-problem sample count) with bootstrap CIs."""
    n: int
    problems: int
    solvable: int
    pass1: float
    pass1_ci: tuple[float, float]
    passn: float
    passn_ci: tuple[float, float]
    # Mean pass@k over problems for k = 1..n, and its CI band.
    curve: np.ndarray = field(repr=False)
    ci_low: np.ndarray = field(repr=False)
    ci_high: np.ndarray = field(repr=False)
    # problems x n matrix of per-problem pass@k (for paired comparisons).
    per_problem: np.ndarray = field(repr=False)
    # The curve and the per-problem sample counts behind it: what `probe_result` hands to the
    # checkpoint-vs-base comparison shared with boundary tracking (`boundlab.probe.compare`).
    source: Curve | None = field(default=None, repr=False)
    sample_n: np.ndarray | None = field(default=None, repr=False)


def _summary(cur: Any, n: Sequence[int], c: Sequence[int]) -> Summary:
    k = cur.kmax
    return Summary(k, len(cur.per_problem), int(np.sum(np.asarray(c) > 0)),
                   cur.at(1), (float(cur.ci_low[0]), float(cur.ci_high[0])),
                   cur.at(k), (float(cur.ci_low[-1]), float(cur.ci_high[-1])),
                   cur.pass_at_k, cur.ci_low, cur.ci_high, cur.per_problem,
                   cur, np.asarray(n, dtype=np.int64))


def summarize(n: Sequence[int], c: Sequence[int], iters: int = 1000, ci: float = 0.95,
              seed: int = 0) -> Summary:
    return _summary(compute_curve(n, c, bootstrap_iters=iters, ci=ci, seed=seed), n, c)


def summarize_matrix(mat: np.ndarray, n: Sequence[int], c: Sequence[int], iters: int = 1000,
                     ci: float = 0.95, seed: int = 0) -> Summary:
    """`summarize` for a per-problem pass@k matrix built by the probe's own design (adaptive
    probes: boundlab.probe.adaptive.matrix); n, c are the samples behind it."""
    return _summary(curve_from_matrix(mat, n, c, bootstrap_iters=iters, ci=ci, seed=seed), n, c)


def probe_result(s: Summary, ids: Sequence[str], c: Sequence[int], key: str = "") -> ProbeResult:
    """The summary as the probe result that `boundlab.probe.compare.compare` takes (its problem
    ids, curve and solved problems; names and answer stats are not needed there)."""
    if s.source is None or s.sample_n is None:
        raise ValueError("this summary was not made by summarize(): it has no curve to compare")
    return ProbeResult(key, "", "", list(ids), s.sample_n, np.asarray(c, dtype=np.int64), None,
                       s.source, None)


def passk_points(curve: np.ndarray) -> dict[int, float]:
    """pass@k at the powers of two up to n, and at n."""
    return {k: float(curve[k - 1]) for k in powers_of_two(len(curve))}


# -- coverage -----------------------------------------------------------------------------------
@dataclass
class Coverage:
    base_only: list[str]
    model_only: list[str]
    both: list[str]
    neither: list[str]

    @property
    def is_subset(self) -> bool:
        """The model's solvable set lies inside the base's."""
        return not self.model_only

    @property
    def outside_base(self) -> int:
        """Problems the model solves that the base never solved."""
        return len(self.model_only)

    def counts(self) -> dict[str, int]:
        return {"base_only": len(self.base_only), "model_only": len(self.model_only),
                "both": len(self.both), "neither": len(self.neither)}


def coverage(ids: Sequence[str], base_c: Sequence[int], model_c: Sequence[int]) -> Coverage:
    """Split problems by who solves them at least once (c > 0)."""
    if not (len(ids) == len(base_c) == len(model_c)):
        raise ValueError("ids, base_c and model_c must have the same length")
    cells: dict[tuple[bool, bool], list[str]] = {(a, b): [] for a in (True, False) for b in (True, False)}
    for pid, b, m in zip(ids, base_c, model_c):
        cells[(b > 0, m > 0)].append(pid)
    return Coverage(*(sorted(cells[key], key=natural_key)
                      for key in ((True, False), (False, True), (True, True), (False, False))))


# -- dSE ----------------------------------------------------------------------------------------
@dataclass
class DeltaSE:
    value: float
    ci_low: float
    ci_high: float
    # The k used, the k asked for, and whether n was smaller than it.
    k: int
    k_requested: int
    model_pass1: float
    base_passk: float

    @property
    def at_n(self) -> bool:
        return self.k < self.k_requested

    def k_label(self) -> str:
        if self.at_n:
            return f"k = n = {self.k} (n < {self.k_requested})"
        return f"k = {self.k}"


def delta_se(base_pp: np.ndarray, model_pp: np.ndarray, k: int = 256, iters: int = 1000,
             ci: float = 0.95, seed: int = 0) -> DeltaSE:
    """dSE = pass@1(model) - pass@k(base) on the same problems, k = min(k, base n), with a paired
    bootstrap CI over problems. Inputs are problems x k matrices of per-problem pass@k."""
    base_pp, model_pp = np.asarray(base_pp, float), np.asarray(model_pp, float)
    if base_pp.shape[0] != model_pp.shape[0]:
        raise ValueError("dSE needs the same problems for base and model")
    used = min(int(k), base_pp.shape[1])
    mean, lo, hi = bootstrap_diff_ci(model_pp[:, 0], base_pp[:, used - 1], iters=iters,
                                     alpha=1 - ci, seed=seed)
    return DeltaSE(mean, lo, hi, used, int(k), float(model_pp[:, 0].mean()),
                   float(base_pp[:, used - 1].mean()))


# -- crossing k ---------------------------------------------------------------------------------
# One implementation, in boundlab.probe.compare, used by the report and by boundary tracking.
# (imported above: Crossing, crossing_with_ci and the status names).


# -- checkpoints --------------------------------------------------------------------------------
def checkpoint_row(base: Summary, ckpt: Summary, base_c: Sequence[int], ckpt_c: Sequence[int],
                   ids: Sequence[str], iters: int = 1000) -> dict[str, Any]:
    """One row of the progression table: the checkpoint's pass@1 and pass@n, their change against
    the base (at the same n), and the base-solvable problems lost and the new ones gained.

    n, lost and gained come from `boundlab.probe.compare.compare`, the comparison boundary tracking
    writes to probes.jsonl for the same checkpoint (`iters` sizes its bootstrap, unused here). The
    changes are the difference of the two mean curves at k, as the report always computed them,
    not compare()'s mean of per-problem differences: the two agree in exact arithmetic and differ
    in the last bits in floats. This one is exactly the difference of the pass@1 (pass@n) values
    the same row shows: 0.0 where they are equal, where compare() can give -2.8e-17 (printed
    -0.0000)."""
    cmp = compare(probe_result(base, ids, base_c), probe_result(ckpt, ids, ckpt_c), iters)
    k = cmp["n"]
    return {"n": k, "pass@1": ckpt.pass1, "pass@1_ci_low": ckpt.pass1_ci[0],
            "pass@1_ci_high": ckpt.pass1_ci[1], "pass@n": float(ckpt.curve[k - 1]),
            "delta_pass@1": ckpt.pass1 - base.pass1,
            "delta_pass@n": float(ckpt.curve[k - 1] - base.curve[k - 1]),
            "solvable": ckpt.solvable, "lost": cmp["lost"], "gained": cmp["gained"]}


# -- case studies -------------------------------------------------------------------------------
@dataclass
class Case:
    problem_id: str
    base_c: int
    base_n: int
    # label -> (c, n) for every model
    models: dict[str, tuple[int, int]]
    # Models that never solve it.
    missed_by: list[str]


def case_studies(ids: Sequence[str], base_n: Sequence[int], base_c: Sequence[int],
                 models: Mapping[str, tuple[Sequence[int], Sequence[int]]]) -> list[Case]:
    """Problems the base solves and at least one model never does: first those no model solves,
    then by how many models miss it, then by the base's success rate, then by id."""
    cases = []
    for i, pid in enumerate(ids):
        if base_c[i] <= 0:
            continue
        per = {label: (int(c[i]), int(n[i])) for label, (n, c) in models.items()}
        missed = [label for label, (c, _) in per.items() if c == 0]
        if missed:
            cases.append(Case(pid, int(base_c[i]), int(base_n[i]), per, missed))
    cases.sort(key=lambda cs: (-len(cs.missed_by), -cs.base_c / cs.base_n, natural_key(cs.problem_id)))
    return cases


def pick_trace(rows: Iterable[Any]) -> Any | None:
    """The trace shown for a case: the first correct sample whose chain of thought is also valid
    (strict), else the first correct one; None when there is none."""
    correct = sorted((r for r in rows if r.correct), key=lambda r: r.idx)
    for r in correct:
        if r.strict:
            return r
    return correct[0] if correct else None


# -- breakdown ----------------------------------------------------------------------------------
def tag_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def problem_tags(metas: Mapping[str, Mapping[str, Any]],
                 fields: Sequence[str] | None = None) -> dict[str, dict[str, str]]:
    """{field: {problem_id: tag}} for the meta fields that tag every problem with a scalar and split
    them into at least two groups (fields=None: try TAG_FIELDS); named fields must tag every
    problem."""
    out: dict[str, dict[str, str]] = {}
    for f in (fields if fields is not None else TAG_FIELDS):
        vals = {pid: m.get(f) for pid, m in metas.items()}
        ok = all(isinstance(v, (str, int, float, bool)) for v in vals.values())
        if not ok:
            if fields is not None:
                missing = [pid for pid, v in vals.items() if not isinstance(v, (str, int, float, bool))]
                raise ValueError(f"breakdown field {f!r} does not tag every problem "
                                 f"(e.g. {missing[:3]})")
            continue
        tags = {pid: tag_value(v) for pid, v in vals.items()}
        if fields is not None or len(set(tags.values())) >= 2:
            out[f] = tags
    return out


def _tag_sort_key(t: str) -> tuple:
    try:
        return (0, float(t), t)
    except ValueError:
        return (1, 0.0, t)


def breakdown(ids: Sequence[str], tags: Mapping[str, str], per_problem: np.ndarray,
              c: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """pass@1 and pass@n (the last column of the problems x n matrix) per tag, with the number of
    problems, whether the tag is saturated (pass@n = 1) with its rule-of-three bound min(1, 3/P),
    and, given `c`, the solvable problems."""
    per_problem = np.asarray(per_problem, float)
    groups: dict[str, list[int]] = {}
    for i, pid in enumerate(ids):
        groups.setdefault(tags[pid], []).append(i)
    rows = []
    for tag in sorted(groups, key=_tag_sort_key):
        idx = np.array(groups[tag])
        passn = float(per_problem[idx, -1].mean())
        # Saturated: every problem of the tag solved at k = n; the rule of three bounds the rest.
        sat = passn >= 1.0 - 1e-12
        row = {"tag": tag, "problems": len(idx), "pass@1": float(per_problem[idx, 0].mean()),
               "pass@n": passn, "saturated": sat,
               "rule_of_three": min(1.0, 3.0 / len(idx)) if sat else None}
        if c is not None:
            row["solvable"] = int(np.sum(np.asarray(c)[idx] > 0))
        rows.append(row)
    return rows


# -- perplexity summaries -----------------------------------------------------------------------
def box_stats(values: Sequence[float]) -> dict[str, float]:
    """Count, mean, median and quartiles (numpy's linear interpolation), min and max."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return {"count": 0, "mean": math.nan, "median": math.nan, "q1": math.nan, "q3": math.nan,
                "min": math.nan, "max": math.nan}
    q1, med, q3 = np.quantile(v, [0.25, 0.5, 0.75])
    return {"count": int(v.size), "mean": float(v.mean()), "median": float(med), "q1": float(q1),
            "q3": float(q3), "min": float(v.min()), "max": float(v.max())}
