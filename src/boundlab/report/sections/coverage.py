"""Solvable-set coverage: which problems the base, each model, both or neither ever solve."""

from __future__ import annotations

from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table, id_list


def render(r: Report, d: Doc) -> None:
    from boundlab.report.plots import plot_coverage

    cfg, base = r.cfg, r.base
    d.add("A problem is solvable by a model when at least one of its n samples is correct (c > 0). "
          "Training that only sharpens leaves the model's solvable set inside the base's.")
    rows, long_rows, cov_rows, labels = [], [], [], []
    for p, vs in r.pairs():
        cov = vs.coverage
        k = cov.counts()
        rows.append([p.entry.label, k["both"], k["base_only"], k["model_only"], k["neither"],
                     base.summary.solvable, p.summary.solvable, cov.is_subset, cov.outside_base])
        cov_rows.append(k)
        labels.append(p.entry.label)
        for cell in ("base_only", "model_only", "both", "neither"):
            long_rows += [[p.entry.label, cell, pid] for pid in getattr(cov, cell)]
        verdict = ("inside the base's (a subset)" if cov.is_subset else
                   f"not inside the base's: {cov.outside_base} problem(s) only the model solves")
        d.add(f"**{p.entry.label}**: solvable set {verdict}.",
              f"- base only ({k['base_only']}): {id_list(cov.base_only, cfg.list_ids)}",
              f"- model only ({k['model_only']}): {id_list(cov.model_only, cfg.list_ids)}",
              f"- both ({k['both']}): {id_list(cov.both, cfg.list_ids)}",
              f"- neither ({k['neither']}): {id_list(cov.neither, cfg.list_ids)}")
    if not rows:
        d.add("No models to compare.")
        return
    png = plot_coverage(cov_rows, labels, d.out / "coverage.png")
    d.figure(png, "solvable-set coverage")
    d.table(Table("coverage", ["model", "both", "base_only", "model_only", "neither", "base_solvable",
                               "model_solvable", "subset_of_base", "outside_base"], rows))
    d.csv(Table("coverage_problems", ["model", "cell", "problem_id"], long_rows))
    per = [[pid, int(base.n[i]), int(base.c[i])] + [int(x) for p in r.models for x in (p.n[i], p.c[i])]
           for i, pid in enumerate(r.ids)]
    d.csv(Table("problems", ["problem_id", "base_n", "base_c"] +
                [f"{p.entry.label} {x}" for p in r.models for x in ("n", "c")], per))
    d.add("Every problem id by cell: [coverage_problems.csv](coverage_problems.csv); "
          "(n, c) per problem and model: [problems.csv](problems.csv).")
