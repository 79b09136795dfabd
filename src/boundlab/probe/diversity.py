"""Answer diversity per problem (issue 39; "The Invisible Leash", arXiv 2507.14843, finds token entropy
can rise while distinct final answers fall): from the final answers a probe already stored (the
`extracted` column), no new sampling.

Per problem, over its samples that have a final answer:
- `distinct_answers`: how many different answers;
- `answer_entropy`: the plug-in entropy of the answer distribution, in nats (0 when one answer);
- `top_answer_share`: the share of samples on the most frequent answer.
Averaged over problems (and per group). Samples without an answer (truncated, unparseable) are left
out of all three and counted in `no_answer_share`; a problem with no answer at all is left out of the
means. The plug-in entropy is biased low at small n (it cannot see unseen answers): compare models at
the same n only.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

COLUMNS = ("distinct_answers", "answer_entropy", "top_answer_share", "no_answer_share")


@dataclass(frozen=True)
class ProblemDiversity:
    samples: int
    answered: int
    distinct: int
    entropy: float
    top_share: float


def problem_diversity(answers: Iterable[Optional[str]]) -> ProblemDiversity:
    """One problem's answers (None or '' for a sample without one)."""
    answers = list(answers)
    counts = Counter(a for a in answers if a)
    m = sum(counts.values())
    if not m:
        return ProblemDiversity(len(answers), 0, 0, 0.0, 0.0)
    ent = -sum((v / m) * math.log(v / m) for v in counts.values())
    return ProblemDiversity(len(answers), m, len(counts), max(ent, 0.0), max(counts.values()) / m)


def summarize(per_problem: Mapping[str, ProblemDiversity],
              problem_ids: Optional[Iterable[str]] = None) -> dict[str, Optional[float]]:
    """The four columns over the given problems (all with None)."""
    ids = list(per_problem) if problem_ids is None else [p for p in problem_ids if p in per_problem]
    rows = [per_problem[p] for p in ids]
    answered = [r for r in rows if r.answered]
    total = sum(r.samples for r in rows)
    if not answered:
        return {c: None for c in COLUMNS}
    k = len(answered)
    return {"distinct_answers": sum(r.distinct for r in answered) / k,
            "answer_entropy": sum(r.entropy for r in answered) / k,
            "top_answer_share": sum(r.top_share for r in answered) / k,
            "no_answer_share": 1 - sum(r.answered for r in rows) / total if total else None}


def store_diversity(store, key: str, n_max: Optional[int] = None) -> dict[str, ProblemDiversity]:
    """Per-problem diversity of a stored probe, over each problem's first n_max samples (all with None),
    the same samples pass@k reads."""
    q = ("SELECT problem_id, extracted FROM samples WHERE key=? AND idx < ? ORDER BY problem_id, idx")
    by: dict[str, list] = {}
    for pid, ext in store.db.execute(q, (key, n_max if n_max is not None else 2**62)):
        by.setdefault(pid, []).append(ext)
    return {pid: problem_diversity(a) for pid, a in by.items()}
