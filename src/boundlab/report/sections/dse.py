"""The sampling-efficiency gap dSE = pass@1(model) - pass@k(base), k = min(dse_k, base n)."""

from __future__ import annotations

from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table


def render(r: Report, d: Doc) -> None:
    cfg, base = r.cfg, r.base
    used = min(cfg.dse_k, base.summary.n)
    which = (f"k = {used}" if used == cfg.dse_k else
             f"k = n = {used}, since the base has n = {base.summary.n} < {cfg.dse_k} samples")
    d.add(f"ΔSE = pass@1(model) − pass@k(base), at {which}. Near zero: the model's single try is as "
          f"good as the base's best of k (sampling efficiency only); well below zero: the base's "
          f"boundary is out of the model's single-sample reach.")
    rows = []
    for p, vs in r.pairs():
        dse = vs.dse
        rows.append([p.entry.label, dse.k, dse.k_label(), dse.model_pass1, dse.base_passk, dse.value,
                     dse.ci_low, dse.ci_high])
    if rows:
        d.table(Table("delta_se", ["model", "k", "k_used", "model pass@1", "base pass@k", "dSE",
                                   "ci_low", "ci_high"], rows),
                md_columns=["model", "k_used", "model pass@1", "base pass@k", "dSE", "ci_low", "ci_high"])
    else:
        d.add("No models to compare.")
