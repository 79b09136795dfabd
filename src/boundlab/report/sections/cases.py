"""Case studies: problems the base solves and a model never does, with a correct base trace."""

from __future__ import annotations

from boundlab.report import analysis as A
from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table, fmt


def render(r: Report, d: Doc) -> None:
    cfg, base = r.cfg, r.base
    models = {p.entry.label: (p.n, p.c) for p in r.models}
    if not models:
        d.add("No models to compare.")
        return
    cases = A.case_studies(r.ids, base.n, base.c, models)
    none_solve = sum(1 for c in cases if len(c.missed_by) == len(models))
    d.add(f"Problems the base solves and a model never does: {len(cases)} ({none_solve} that no model "
          f"solves). Shown: up to {cfg.case_studies}, those no model solves first, then by the base's "
          f"success rate; with the first correct base trace (one with a valid chain of thought when "
          f"the verifier can tell).")
    rows = []
    for i, case in enumerate(cases):
        prob = r.task.by_id(case.problem_id)
        trace = A.pick_trace(r.store.samples(base.entry.key, case.problem_id, correct=True)) \
            if i < cfg.case_studies else None
        rows.append([case.problem_id, prob.question, prob.answer, f"{case.base_c}/{case.base_n}"]
                    + [f"{c}/{n}" for c, n in case.models.values()]
                    + [len(case.missed_by), None if trace is None else trace.idx,
                       None if trace is None else trace.text])
        if i >= cfg.case_studies:
            continue
        d.add(f"### {case.problem_id}", "Problem:", "```text", prob.question.strip(), "```",
              f"Gold answer: `{prob.answer}`")
        cn = [["base", f"{case.base_c}/{case.base_n}"]]
        cn += [[m, f"{c}/{n}"] for m, (c, n) in case.models.items()]
        d.add("| model | correct / n |", "|---|---|", *[f"| {fmt(a)} | {b} |" for a, b in cn])
        if trace is not None:
            cut = cfg.trace_chars
            text = trace.text if cut is None or len(trace.text) <= cut else \
                trace.text[:cut] + f"\n... ({len(trace.text) - cut} more characters in case_studies.csv)"
            valid = ", with a valid chain of thought" if trace.strict else ""
            d.add(f"A correct base trace (sample {trace.idx}{valid}):", "```text", text, "```")
    if not cases:
        d.add("None: every problem the base solves, every model solves too.")
    d.csv(Table("case_studies", ["problem_id", "question", "answer", "base c/n"] +
                [f"{m} c/n" for m in models] + ["missed_by", "trace_idx", "base_trace"], rows))
    d.add("All cases: [case_studies.csv](case_studies.csv) (traces for the ones shown).")
