"""pass@1 and pass@n per problem tag (a Problem.meta field such as hard, level or subject)."""

from __future__ import annotations

from boundlab.report import analysis as A
from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table


def render(r: Report, d: Doc) -> None:
    from boundlab.report.plots import plot_breakdown

    if not r.tags:
        d.add(f"The task tags no problems ({', '.join(A.TAG_FIELDS)} in Problem.meta, with at least "
              f"two values); breakdown=[FIELD] names another meta field.")
        return
    probes = [r.base, *r.models]
    for f, per in r.tags.items():
        d.add(f"### By `{f}`")
        rows = []
        for p in probes:
            for b in A.breakdown(r.ids, per, p.summary.per_problem, p.c):
                rows.append([p.entry.label, b["tag"], b["problems"], b["solvable"], b["pass@1"], b["pass@n"],
                             b["saturated"], b["rule_of_three"]])
        d.table(Table(f"breakdown_{f}", ["model", f, "problems", "solvable", "pass@1", "pass@n",
                                         "saturated", "rule_of_three"], rows),
                caption="saturated: every problem of the tag solved at k = n, so pass@n = 1 says only "
                        "that the share it cannot solve is below rule_of_three = 3/P (95%).")
        order = [b["tag"] for b in A.breakdown(r.ids, per, r.base.summary.per_problem)]
        ns = {p.summary.n for p in probes}
        pn = f"pass@{ns.pop()}" if len(ns) == 1 else "pass@n"
        panels: dict[str, dict[str, list[float]]] = {"pass@1": {}, pn: {}}
        for p in probes:
            vals = {row[1]: (row[4], row[5]) for row in rows if row[0] == p.entry.label}
            panels["pass@1"][p.entry.label] = [vals[t][0] for t in order]
            panels[pn][p.entry.label] = [vals[t][1] for t in order]
        png = plot_breakdown([f"{f}={t}" for t in order], panels, d.out / f"breakdown_{f}.png",
                             title=f"pass@1 and {pn} by {f}")
        d.figure(png, f"breakdown by {f}")
