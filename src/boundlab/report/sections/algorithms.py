"""Algorithm comparison: each run's final checkpoint against the base."""

from __future__ import annotations

from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table


def render(r: Report, d: Doc) -> None:
    from boundlab.report.plots import plot_grouped_bars

    base = r.base
    finals = [(p, vs) for p, vs in r.pairs() if p.entry.run is not None]
    if not finals:
        d.add("No training runs given (runs=[...] or sweeps=[...]): nothing to compare by algorithm.")
        return
    d.add("Each run's final checkpoint against the base: pass@1 (sharpening), pass@n (the boundary), "
          "ΔSE and the crossing k.")
    rows = [["base", "", None, base.summary.n, base.summary.pass1, base.summary.passn, None, None, ""]]
    for p, vs in finals:
        rows.append([p.entry.label, p.entry.run.algo, p.entry.step, p.summary.n, p.summary.pass1,
                     p.summary.passn, vs.dse.value, vs.dse.k, vs.crossing.describe(r.cfg.ci)])
    d.table(Table("algorithms", ["run", "algo", "step", "n", "pass@1", "pass@n", "dSE", "dSE_k",
                                 "crossing"], rows))
    labels = [row[0] for row in rows]
    probes = [base] + [p for p, _ in finals]
    ns = {p.summary.n for p in probes}
    pn = f"pass@{ns.pop()}" if len(ns) == 1 else "pass@n"
    png = plot_grouped_bars(
        labels, {"pass@1": [p.summary.pass1 for p in probes], pn: [p.summary.passn for p in probes]},
        d.out / "algorithms.png", title=f"Final checkpoints against the base ({r.cfg.ci:.0%} CI)",
        errors={"pass@1": ([p.summary.pass1_ci[0] for p in probes], [p.summary.pass1_ci[1] for p in probes]),
                pn: ([p.summary.passn_ci[0] for p in probes], [p.summary.passn_ci[1] for p in probes])})
    d.figure(png, "algorithm comparison")
