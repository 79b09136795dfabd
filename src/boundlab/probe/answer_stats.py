"""How completions ended, per probe: the share with a box and the share cut off with no answer.

The box share separates "the model lost the answer" from "the model stopped boxing it" (a base
model that states its answer in prose is judged differently by the `boxed` and `lenient` rules).
The truncated share says whether `probe.max_new_tokens` let the model finish at all: a probe where
many completions were cut off measures the length limit, not the model.
Both come from the verdicts stored with each sample (the math verifier records `answer_from` and
`boxed` in a sample's info); for other verifiers they are None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# Above this truncated share, every probe summary carries a warning.
TRUNCATED_WARN = 0.10


@dataclass(frozen=True)
class AnswerStats:
    samples: int
    boxed: int
    truncated: int

    @property
    def boxed_share(self) -> float:
        return self.boxed / self.samples if self.samples else 0.0

    @property
    def truncated_share(self) -> float:
        return self.truncated / self.samples if self.samples else 0.0


def answer_stats(store, key: str, problem_ids: Iterable[str] | None = None,
                 n_max: int | None = None) -> AnswerStats | None:
    """Counts over the first `n_max` samples of each problem (all with None); None when the
    verifier records no answer format (code, toy)."""
    ids = None if problem_ids is None else set(problem_ids)
    # One aggregate row per problem, in SQL (a probe at n = 1024 holds ~10^6 samples).
    q = ("SELECT problem_id, COUNT(*), SUM(json_extract(info, '$.answer_from') IS NOT NULL),"
         " SUM(COALESCE(json_extract(info, '$.boxed'), 0)), SUM(outcome = 'truncated') FROM ("
         " SELECT problem_id, info, outcome, ROW_NUMBER() OVER"
         " (PARTITION BY problem_id ORDER BY idx) AS rn FROM samples WHERE key=?)"
         " WHERE rn <= ? GROUP BY problem_id")
    samples = boxed = truncated = known = 0
    for pid, cnt, has_format, n_boxed, n_trunc in store.db.execute(q, (key, n_max or 2**62)):
        if ids is not None and pid not in ids:
            continue
        samples += cnt
        known += int(has_format or 0)
        boxed += int(n_boxed or 0)
        truncated += int(n_trunc or 0)
    if not known:
        return None
    return AnswerStats(samples, boxed, truncated)


def summary_lines(stats: AnswerStats | None, max_new_tokens: int | None = None) -> list[str]:
    """The lines every probe prints about answer format (empty for verifiers without one)."""
    if stats is None:
        return []
    lines = [f"  answers: {stats.boxed_share:.1%} with a box, {stats.truncated_share:.1%} truncated "
             f"(cut off with no final answer; {stats.truncated} of {stats.samples})"]
    if stats.truncated_share > TRUNCATED_WARN:
        limit = f"={max_new_tokens}" if max_new_tokens else ""
        lines.append(f"  warning: {stats.truncated_share:.0%} of completions were cut off before a "
                     f"final answer: raise probe.max_new_tokens{limit}")
    return lines
