"""The mechanism, per problem: the failure types of every problem an arm loses or gains, a per-arm
narrowing-vs-execution summary, and the luck check of every probe (`boundlab.report.mechanism`)."""

from __future__ import annotations

from boundlab.probe import failures as F
from boundlab.report import mechanism as M
from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table

_SUMMARY = ["lost", "lost_strategy_share", "lost_execution_share", "lost_strategy_problems",
            "lost_execution_problems", "lost_strategy_samples", "lost_execution_samples",
            "lost_lucky_samples", "lost_base_decision_rate", "lost_arm_decision_rate",
            "gained", "gained_strategy_share", "gained_execution_share", "gained_strategy_problems",
            "gained_execution_problems", "gained_base_decision_rate", "gained_arm_decision_rate"]


def _luck_rows(r: Report) -> list[list]:
    probes = [("base", "", r.base.entry.key)] + [(p.entry.label, "", p.entry.key) for p in r.models]
    for run in r.runs:
        if run.null is not None:
            probes.append((run.label, f"null (seed {run.null[0]})", run.null[1]))
        probes += [(run.label, f"step {step}", key) for step, key, _ in run.checkpoints]
    rows, seen = [], set()
    for label, what, key in probes:
        if (label, what, key) in seen:
            continue
        seen.add((label, what, key))
        lk = M.luck(r.store, label, key, r.ids, r.cfg.n)
        if lk is not None:
            rows.append([label, what, key, lk.problems, lk.n, lk.answer_pass1, lk.strict_pass1,
                         lk.lucky_pass1])
    return rows


def _arms(r: Report, d: Doc, tags: dict[str, str]) -> list[M.ArmMechanism]:
    """Every arm's mechanism rows; [] (said in the doc) when the samples carry no toy2 replay."""
    if not M.has_replay(r.store, r.base.entry.key):
        d.add("No failure types: the base's samples carry no toy2 replay (info['strategy']); they "
              "exist for task=toy2 only.")
        return []
    arms = []
    try:
        for p, vs in r.pairs():
            arms.append(M.arm_mechanism(r.store, p.entry.label, r.base.entry.key, p.entry.key,
                                        vs.coverage.base_only, vs.coverage.model_only, r.cfg.n, tags))
    except F.NotToy2 as e:
        d.add(f"No failure types: {e}.")
        return []
    return arms


def render(r: Report, d: Doc) -> None:
    d.add("Why an arm loses a problem (strict c > 0 at the base, 0 at the arm, each over its first n "
          "samples; the coverage section's base-only cell) or gains one (the reverse): the failure "
          "type of every sample on it, at the base and at the arm. A sample's type is the first thing "
          "that went wrong in its trace: `wrong_decision` (a legal, non-canonical strategy choice, or "
          "`#` read as `+`), `slip` (wrong arithmetic), `bad_state` (the state or answer copied "
          "wrongly), `invalid_move`, `malformed`; `lucky` is a right answer without the canonical "
          "trace. **Strategy narrowing** is the share of the arm's failing samples on its lost "
          "problems that are wrong decisions; **execution regression** the share that are slips, bad "
          "states, invalid moves or malformed traces (lucky samples are counted apart). A problem's "
          "cause is the group of at least half its failing samples.")
    if r.metric != "strict":
        d.add("Skipped: failure types and the luck check need strict counts (a verifier that checks "
              "traces, task=toy2); this report's probes have answer-only counts.")
        return
    tag_field = next(iter(r.tags), None)
    tags = r.tags.get(tag_field, {}) if tag_field else {}
    arms = _arms(r, d, tags)
    if arms:
        summ = [a.summary() for a in arms]
        d.table(Table("mechanism_summary", ["arm"] + _SUMMARY, [[s["arm"]] + [s[c] for c in _SUMMARY]
                                                                 for s in summ]),
                md_columns=["arm", "lost", "lost_strategy_share", "lost_execution_share",
                            "lost_strategy_problems", "lost_execution_problems",
                            "lost_base_decision_rate", "lost_arm_decision_rate", "gained",
                            "gained_strategy_share", "gained_execution_share"],
                caption="lost_*: the arm's samples on the problems it lost; gained_*: the base's "
                        "samples on the problems the arm gained (why the base failed them). "
                        "*_decision_rate: right decisions among those met on these problems.")
        for s in summ:
            for c in ("lost", "lost_strategy_share", "lost_execution_share", "gained"):
                r.summary[f"report/mechanism/{s['arm']}/{c}"] = s[c]
        rows = []
        for a in arms:
            for pm in a.problems:
                ex = getattr(pm, pm.explaining)
                rows.append([a.label, pm.problem_id, pm.tag, pm.direction, pm.cause, pm.explaining,
                             ex.strategy, ex.execution, ex.mix[F.LUCKY],
                             pm.base.n, pm.base.c_strict, pm.arm.n, pm.arm.c_strict,
                             pm.base.decision_rate, pm.arm.decision_rate]
                            + [pm.base.mix[lab] for lab in F.LABELS]
                            + [pm.arm.mix[lab] for lab in F.LABELS])
        cols = (["arm", "problem_id", tag_field or "tag", "direction", "cause", "side",
                 "side_strategy", "side_execution", "side_lucky", "base_n",
                 "base_c_strict", "arm_n", "arm_c_strict", "base_decision_rate", "arm_decision_rate"]
                + [f"base_{lab}" for lab in F.LABELS] + [f"arm_{lab}" for lab in F.LABELS])
        if rows:
            d.table(Table("mechanism_problems", cols, rows),
                    md_columns=["arm", "problem_id", tag_field or "tag", "direction", "cause",
                                "base_c_strict", "arm_c_strict", "side", "side_strategy",
                                "side_execution", "side_lucky"],
                    caption="Every lost and gained problem. side: whose samples explain it (the "
                            "arm's on a lost problem, the base's on a gained one), with their "
                            "strategy (wrong decision), execution and lucky counts; both sides' "
                            "full mixes by label are in the CSV.")
        else:
            d.add("No arm loses or gains a problem against the base.")
    d.add("### Luck check")
    luck_rows = _luck_rows(r)
    if not luck_rows:
        d.add("No probe has strict counts (the task's verifier does not check traces).")
        return
    d.table(Table("luck", ["model", "probe", "probe key", "problems", "n", "answer_pass@1",
                           "strict_pass@1", "lucky_pass@1"], luck_rows),
            md_columns=["model", "probe", "n", "answer_pass@1", "strict_pass@1", "lucky_pass@1"],
            caption="lucky_pass@1 = answer-only minus strict pass@1: the share of samples with the "
                    "right answer and a trace that is not the canonical one, what an answer-only "
                    "reward pays for. Every probe the report reads, checkpoints and nulls included; "
                    "an adaptive probe counts its first round only.")
