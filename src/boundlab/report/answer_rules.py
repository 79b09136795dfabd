"""pass@k under both answer rules, from stored completions (no resampling).

A base model often states its answer in prose; a model trained with a boxed-answer reward boxes
it. Judged with the `boxed` rule the base then looks weaker than it is, and a "shrinking boundary"
can be a change of answer format. This rescoring reads every stored completion of each probe
(its first n per problem) and judges it again under `boxed` and under `lenient`, so the two can
be read side by side. A completion stored as cut off (`finish: length`) stays cut off.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from boundlab.probe.estimator import pass_at_k_curve
from boundlab.probe.store import Store, dropped_error
from boundlab.verify.extract import MODES


def rescore(store: Store, key: str, task: Any, ids: Sequence[str], n_max: int | None,
            verifiers: dict[str, Any]) -> dict[str, dict[str, float]]:
    """{rule: {"pass@1", "pass@n", "n", "boxed_share", "truncated_share"}} for one probe."""
    per_rule_c: dict[str, list[int]] = {rule: [] for rule in verifiers}
    ns: list[int] = []
    boxed = {rule: 0 for rule in verifiers}
    truncated = {rule: 0 for rule in verifiers}
    for pid in ids:
        rows = store.samples(key, problem_id=pid)[: n_max or None]
        dropped = sum(r.text is None for r in rows)
        if dropped:  # judging '' in place of a dropped text would count it wrong
            raise dropped_error(dropped, f"re-scoring problem {pid} under other answer rules", key)
        texts = [r.text for r in rows]
        cut = [bool(r.info and r.info.get("finish") == "length") for r in rows]
        ns.append(len(rows))
        problem = task.by_id(pid)
        for rule, v in verifiers.items():
            verdicts = v.score_many([(problem, texts)], cut_off=[cut])[0]
            per_rule_c[rule].append(sum(x.correct for x in verdicts))
            boxed[rule] += sum(bool(x.info.get("boxed")) for x in verdicts)
            truncated[rule] += sum(x.outcome == "truncated" for x in verdicts)
    n = np.array(ns)
    total = max(int(n.sum()), 1)
    out = {}
    for rule in verifiers:
        curve = pass_at_k_curve(n, np.array(per_rule_c[rule]), int(n.min()))
        out[rule] = {"pass@1": float(curve[0]), "pass@n": float(curve[-1]), "n": int(n.min()),
                     "boxed_share": boxed[rule] / total, "truncated_share": truncated[rule] / total}
    return out


def answer_rule_rows(store: Store, probes: Sequence[tuple[str, str]], task: Any,
                     ids: Sequence[str], n_max: int | None, workers: int = 2) -> list[list[Any]]:
    """Rows (model, rule, n, pass@1, pass@n, box share, truncated share) for (label, key) probes."""
    from boundlab.probe.context import open_verifier

    verifiers = {rule: open_verifier("math", workers=workers, extraction=rule) for rule in MODES}
    try:
        rows = []
        for label, key in probes:
            res = rescore(store, key, task, ids, n_max, verifiers)
            for rule in MODES:
                r = res[rule]
                rows.append([label, rule, r["n"], r["pass@1"], r["pass@n"], r["boxed_share"],
                             r["truncated_share"]])
        return rows
    finally:
        for v in verifiers.values():
            v.close()
