"""Exact match after stripping whitespace: the answer is the text after the last `A:` (or the
whole completion when there is none)."""

from __future__ import annotations

from typing import Sequence

from boundlab.tasks.base import Problem
from boundlab.verify.base import Verdict, Verifier


def extract_exact(completion: str, marker: str = "A:") -> str | None:
    text = completion
    if marker and marker in text:
        text = text.rsplit(marker, 1)[1]
    text = text.strip().splitlines()[0].strip() if text.strip() else ""
    return text or None


class ExactVerifier(Verifier):
    name = "exact"
    # Only the marker changes a verdict (it has no `verify.exact` block: the default marker).
    verdict_settings = frozenset({"marker"})

    def __init__(self, marker: str = "A:"):
        self.marker = marker

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        gold = problem.answer.strip()
        out = []
        for c in completions:
            ans = extract_exact(c, self.marker)
            if ans is None:
                out.append(Verdict(False, None, "no_answer"))
            else:
                ok = ans == gold
                out.append(Verdict(ok, ans, "correct" if ok else "wrong"))
        return out


from boundlab.verify import VERIFIERS  # noqa: E402

VERIFIERS.register("exact")(ExactVerifier)
