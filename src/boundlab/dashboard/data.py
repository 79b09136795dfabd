"""The JSON behind each view, built from probes.jsonl rows and the probe store. Every number shown is
one the run wrote (probes.jsonl) or a count read from the store; the only number computed here is
each curve's per-k confidence band (see `curve_band`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from boundlab.probe.alike import store_differences
from boundlab.dashboard.index import Index, RunEntry
from boundlab.probe.estimator import pass_at_k_matrix, pass_at_k_table
from boundlab.probe.store import ProblemCounts

# Samples per page in the samples view (the page shows 20 of each side; the problem's n samples are
# read from the store, milliseconds at n = 1024).
PAGE = 20
# Row fields the overview sends (the rest of a row stays on disk).
_FIELDS = ["step", "kind", "metric", "n", "problems", "pass@1", "pass@1_ci_low", "pass@1_ci_high",
           "pass@n", "pass@n_ci_low", "pass@n_ci_high", "solvable", "lost", "gained", "crossing_k",
           "crossing_k_ci_low", "crossing_k_ci_high", "crossing_share", "delta_pass@1",
           "delta_pass@n", "saturated", "curve", "group_by", "groups", "seed", "unlike_base"]


def _clean(v: Any) -> Any:
    """JSON has no inf or NaN: an interval open beyond n is sent as null with a flag."""
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def runs_list(index: Index) -> list[dict[str, Any]]:
    return [{"id": r.id, "label": r.label, "sweep": r.sweep, "overrides": r.overrides,
             "algo": r.info.get("algo"), "probes": len(r.rows),
             "steps": [x["step"] for x in r.rows if x["kind"] == "checkpoint"],
             "has_store": index.store(r) is not None} for r in index.runs]


def overview(run: RunEntry) -> dict[str, Any]:
    """Views 1, 2 and 4: every probe's curve and headline numbers, from probes.jsonl alone."""
    probes = []
    for i, r in enumerate(run.rows):
        p = {k: r.get(k) for k in _FIELDS if k in r}
        p["index"] = i
        hi = r.get("crossing_k_ci_high")
        p["crossing_open"] = isinstance(hi, float) and math.isinf(hi)
        probes.append(p)
    return _clean({"id": run.id, "label": run.label, "overrides": run.overrides, "probes": probes})


def _c(pc: ProblemCounts, metric: str) -> int:
    """The headline metric's count: strict (right answer and valid trace) when the row says so."""
    return pc.c_strict if metric == "strict" and pc.c_strict is not None else pc.c


@lru_cache(maxsize=4)
def _table(n: int) -> np.ndarray:
    """pass_at_k_table(n, n), once per n (70 ms and 8 MB at n = 1024; every band of a run shares it)."""
    t = pass_at_k_table(n, n)
    t.flags.writeable = False
    return t


def curve_band(index: Index, run: RunEntry, i: int, z: float = 1.96) -> dict[str, Any] | None:
    """A per-k 95% band for probe i's curve: mean over problems of the unbiased per-problem pass@k,
    +- z standard errors (normal approximation over problems). The rows' own pass@1 and pass@n CIs
    are bootstraps; this band is for the shape between them, and it says so on the page."""
    row = run.probe(i)
    counts = index.counts(run, row)
    if counts is None:
        return None
    n = int(row["n"])
    pcs = [pc for pc in counts.values() if pc.n >= n]
    if not pcs:
        return None
    ck = ("band", row.get("probe_key"), n, row["metric"])
    if ck in index.cache:
        return dict(index.cache[ck], index=i)
    ns = np.array([pc.n for pc in pcs])
    cs = np.array([_c(pc, row["metric"]) for pc in pcs])
    # Every problem at the same n (the usual probe): rows of one (n+1) x n table, ~30x faster
    # than the matrix at n = 1024; the same product form.
    mat = _table(n)[cs] if np.all(ns == n) else pass_at_k_matrix(ns, cs, n)
    mean = mat.mean(axis=0)
    se = mat.std(axis=0, ddof=1) / math.sqrt(len(pcs)) if len(pcs) > 1 else np.zeros(n)
    out = {"index": i, "method": f"normal approximation over {len(pcs)} problems (mean +- 1.96 SE)",
           "low": np.clip(mean - z * se, 0, 1).round(6).tolist(),
           "high": np.clip(mean + z * se, 0, 1).round(6).tolist(),
           "problems": len(pcs)}
    index.cache[ck] = out
    return out


def problem_map(index: Index, run: RunEntry) -> dict[str, Any]:
    """View 3: problems x probes, each cell [c, n]; rows in `Index.problems` order (the base's rate,
    highest first). A problem is lost at a checkpoint when the base solved it (c > 0) and the
    checkpoint did not, gained the other way round."""
    ids = index.problems(run)
    cols = []
    for i, r in enumerate(run.rows):
        counts = index.counts(run, r) or {}
        cells = []
        for pid in ids:
            pc = counts.get(pid)
            cells.append(None if pc is None else [_c(pc, r["metric"]), pc.n])
        cols.append({"index": i, "kind": r["kind"], "step": r["step"], "cells": cells})
    base = next((c for c in cols if c["kind"] == "base"), None)
    store = index.store(run)
    base_key = next((r.get("probe_key") for r in run.rows if r["kind"] == "base"), None)
    for col, r in zip(cols, run.rows):
        col["lost"], col["gained"] = [], []
        if base is None or col is base:
            continue
        # Lost/gained against a base probed otherwise: named on the column (boundlab.probe.alike).
        col["unlike_base"] = (store_differences(store, base_key, r["probe_key"])
                              if store is not None and base_key and r.get("probe_key") else
                              r.get("unlike_base", []))
        for j, (b, x) in enumerate(zip(base["cells"], col["cells"])):
            if b is None or x is None:
                continue
            if b[0] > 0 and x[0] == 0:
                col["lost"].append(j)
            elif b[0] == 0 and x[0] > 0:
                col["gained"].append(j)
    index.flush()  # every probe's counts were just read: the next process reads them from the index
    return {"id": run.id, "problems": ids, "columns": cols, "has_store": index.store(run) is not None}


def samples_page(index: Index, run: RunEntry, p: int, i: int, page: int) -> dict[str, Any]:
    """View 5: one page of problem p's samples at probe i and at the base, from the store."""
    pid = index.problem(run, p)
    st = index.store(run)
    if st is None:
        raise KeyError(f"run {run.id} has no probe store")
    if page < 0:
        raise KeyError("page must be >= 0")
    out: dict[str, Any] = {"problem": pid, "problem_index": p, "page": page, "page_size": PAGE, "sides": []}
    sides = [("checkpoint" if run.probe(i)["kind"] != "base" else "base", run.probe(i))]
    if run.base is not None and run.probe(i) is not run.base:
        sides.append(("base", run.base))
    for who, row in sides:
        # One problem's samples (n of them, 1024 at most in practice: milliseconds), then the page.
        every = st.samples(row["probe_key"], pid)
        rows, total = every[page * PAGE:(page + 1) * PAGE], len(every)
        out["sides"].append({
            "who": who, "step": row["step"], "kind": row["kind"], "total": total,
            "samples": [{"idx": s.idx, "text": s.text, "text_dropped": s.text_dropped,
                         "extracted": s.extracted, "correct": s.correct, "strict": s.strict,
                         "outcome": s.outcome} for s in rows]})
    return out


def sweep(index: Index) -> dict[str, Any]:
    """View 6: the runs of each sweep dir side by side, with the overrides that differ between them
    (the swept values) to colour them by."""
    groups: dict[str, list[RunEntry]] = {}
    for r in index.runs:
        if r.sweep is not None:
            groups.setdefault(r.sweep, []).append(r)
    out = []
    for name, runs in groups.items():
        keys = sorted({k for r in runs for k in r.overrides})
        swept = [k for k in keys if len({r.overrides.get(k) for r in runs}) > 1]
        out.append({"name": name, "swept": swept, "runs": [
            {"id": r.id, "label": r.label, "values": {k: r.overrides.get(k) for k in swept},
             "steps": [x["step"] for x in r.rows if x["kind"] == "checkpoint"],
             "pass@1": [x["pass@1"] for x in r.rows if x["kind"] == "checkpoint"],
             "pass@n": [x["pass@n"] for x in r.rows if x["kind"] == "checkpoint"],
             "base": _clean({k: r.base.get(k) for k in ("pass@1", "pass@n", "n")}) if r.base else None,
             "last_curve": next((x["curve"] for x in reversed(r.rows) if x["kind"] == "checkpoint"), None),
             # the base's own curve, to read each last checkpoint against (runs sharing a base
             # share its probe key, and the page draws it once)
             "base_curve": r.base.get("curve") if r.base else None,
             "base_key": r.base.get("probe_key") if r.base else None}
            for r in runs]})
    return {"sweeps": out}
