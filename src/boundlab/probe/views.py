"""Views that explain why a recipe keeps or loses the boundary (issue 39), per probe, from what the
probe stored (no new sampling): answer diversity (`boundlab.probe.diversity`) and G-Pass@k
(`boundlab.probe.gpass`) on the probe's headline metric (strict where the verifier checks traces).

Columns, on every boundary row and per group: `distinct_answers`, `answer_entropy`,
`top_answer_share`, `no_answer_share`, `gpass@<k>` for k = 1 and every power of two up to the
probe's smallest per-problem n (the same k the pass@k columns use), `gpass@n` at that smallest n,
and `gpass_tau`. An adaptive probe's problems that stopped early have fewer samples, so its G-Pass@k
stops at their n (pass@k's certified extension does not carry over to G-Pass@k).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np

from boundlab.probe.diversity import COLUMNS as DIVERSITY, store_diversity, summarize
from boundlab.probe.estimator import powers_of_two
from boundlab.probe.gpass import gpass_at_k


def _r(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(float(x), 6)


def gpass_fields(n: np.ndarray, c: np.ndarray, tau: float, idx: Optional[Iterable[int]] = None
                 ) -> dict[str, Any]:
    """`gpass@k` for k in 1 and the powers of two up to min(n) over the chosen problems."""
    sel = np.arange(len(n)) if idx is None else np.asarray(list(idx), dtype=np.int64)
    if not len(sel):
        return {}
    nn, cc = np.asarray(n)[sel], np.asarray(c)[sel]
    kmax = int(nn.min())
    out = {f"gpass@{k}": _r(gpass_at_k(nn, cc, k, tau)) for k in powers_of_two(kmax)}
    out["gpass@n"] = out[f"gpass@{kmax}"] if f"gpass@{kmax}" in out else _r(gpass_at_k(nn, cc, kmax, tau))
    return out


def view_fields(store: Any, res: Any, tau: float, groups: Optional[dict[str, list[int]]] = None
                ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(fields of the row, {group tag: fields}) for one probe result (`ProbeResult`)."""
    c = res.c_strict if res.c_strict is not None else res.c
    per = store_diversity(store, res.key, n_max=int(np.max(res.n)))
    row: dict[str, Any] = {k: _r(v) for k, v in summarize(per, res.problem_ids).items()}
    row.update(gpass_fields(res.n, c, tau))
    row["gpass_tau"] = tau
    by_group: dict[str, dict[str, Any]] = {}
    for tag, idx in (groups or {}).items():
        ids = [res.problem_ids[i] for i in idx]
        g = {k: _r(v) for k, v in summarize(per, ids).items()}
        g.update(gpass_fields(res.n, c, tau, idx))
        by_group[tag] = g
    return row, by_group


def add_views(row: dict[str, Any], store: Any, res: Any, tau: float,
              groups: Optional[dict[str, list[int]]] = None) -> dict[str, Any]:
    """Add the views to a boundary row (and its groups) in place; returns the row."""
    fields, by_group = view_fields(store, res, tau, groups)
    row.update(fields)
    for tag, g in by_group.items():
        if tag in (row.get("groups") or {}):
            row["groups"][tag].update(g)
    return row


COLUMNS = [*DIVERSITY, "gpass_tau"]
