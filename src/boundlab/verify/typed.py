"""The `typed` verifier: judges each problem by its answer type (`meta["answer_kind"]`), for the
visual benchmarks (MathVista, MathVision; `boundlab.tasks.visual`).

- Extraction is the math verifier's (`extract.py`): the boxes of the final statement, else (lenient
  mode) an anchored "answer is" statement or math-verify's own extraction over the tail; a completion
  cut off at max_new_tokens keeps only a box or an anchored statement. For `choice` and `list`
  problems an unboxed completion is read from its last "answer is" statement only
  (`answer_types.anchored_statement`): math-verify's extraction finds no letter and no option text,
  and its unanchored number scan would read a letter-less sentence as a guess.
- `choice`, `integer`, `float`, `list`, `text` are judged here (`answer_types.judge`), in-process.
- `math` (MathVision's free-form answers: `2\\sqrt{3}`, `\\frac{1}{2}`, `6`) goes to the math verifier,
  with its worker pool, hedging rule and timeouts; it is built on first use only.
- Several answers in the final statement: correct only if every one is; one right and one wrong is
  a `hedge` (as in the math verifier).
- The tasks' prompt (EasyR1's) asks for the reasoning inside `<think> </think>` and the boxed answer
  after it: after a closed think block, what follows it is read (a box drafted inside the thinking,
  close to the final one, would otherwise make a hedge); when nothing after it holds an answer, the
  whole completion is (EasyR1's own reward reads the last box anywhere).
"""

from __future__ import annotations

from typing import Any, Sequence

from boundlab.tasks.base import Problem
from boundlab.verify.answer_types import KINDS, anchored_statement, judge
from boundlab.verify.base import Verdict, Verifier
from boundlab.verify.extract import MAX_ANSWER_CHARS, MODES, extract


class TypedVerifier(Verifier):
    name = "typed"
    version = 1
    reads_cut_off = True
    verdict_neutral = frozenset({"workers", "cache_size"})
    # math-verify judges the `math` problems.
    libraries = ("math-verify", "latex2sympy2_extended", "sympy")
    # A `math` timeout means math-verify could not decide in its budget (see the math verifier).
    timeouts_are_final = False

    def __init__(self, workers: int = 2, deadline_s: float = 2.0,
                 max_answer_chars: int = MAX_ANSWER_CHARS, cache_size: int = 200_000,
                 extraction: str = "lenient"):
        if extraction not in MODES:
            raise ValueError(f"verify.typed.extraction must be one of {', '.join(MODES)}, "
                             f"got {extraction!r}")
        self.extraction = extraction
        self.max_answer_chars = int(max_answer_chars)
        self._math_options = dict(workers=workers, deadline_s=deadline_s,
                                  max_answer_chars=max_answer_chars, cache_size=cache_size,
                                  extraction=extraction)
        self._math: Any = None

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        return self.score_many([(problem, completions)])[0]

    def score_many(self, items: Sequence[tuple[Problem, Sequence[str]]],
                   cut_off: Sequence[Sequence[bool]] | None = None) -> list[list[Verdict]]:
        out: list[list[Verdict] | None] = [None] * len(items)
        math_idx = []
        items = [(p, [self._answer_part(c) for c in comps]) for p, comps in items]
        for i, (problem, comps) in enumerate(items):
            kind = answer_kind(problem)
            if kind == "math":
                math_idx.append(i)
                continue
            out[i] = [self._one(problem, kind, c, bool(cut_off and cut_off[i][j]))
                      for j, c in enumerate(comps)]
        if math_idx:
            if self._math is None:
                from boundlab.verify.math import MathVerifier

                self._math = MathVerifier(**self._math_options)
            judged = self._math.score_many([items[i] for i in math_idx],
                                           [cut_off[i] for i in math_idx] if cut_off else None)
            for i, verdicts in zip(math_idx, judged):
                out[i] = [Verdict(v.correct, v.extracted, v.outcome, v.strict,
                                  {**v.info, "kind": "math"}) for v in verdicts]
        return out  # type: ignore[return-value]

    def _answer_part(self, completion: str) -> str:
        """What follows the last `</think>` when it states an answer (a box, or an anchored
        statement), else the whole completion."""
        if "</think>" not in completion:
            return completion
        after = completion.rsplit("</think>", 1)[1]
        ex = extract(after, self.extraction)
        return after if ex.answers or (self.extraction == "lenient" and anchored_statement(after)) else completion

    def _one(self, problem: Problem, kind: str, completion: str, cut_off: bool) -> Verdict:
        meta = problem.meta or {}
        ex = extract(completion, self.extraction, cut_off)
        answers = list(ex.answers)
        source = ex.source
        if kind in ("choice", "list") and ex.source != "boxed" and ex.source != "empty_box":
            # Unboxed: only an anchored statement names an option or a list.
            said = anchored_statement(completion) if self.extraction == "lenient" else None
            answers, source = ([said], "statement") if said else ([], ex.source)
        info: dict[str, Any] = {"answer_from": source, "kind": kind}
        if ex.has_box:
            info["boxed"] = True
        if not answers:
            return Verdict(False, None, "truncated" if source == "truncated" else "no_answer", info=info)
        shown = ", ".join(answers)
        if any(len(a) > self.max_answer_chars for a in answers):
            return Verdict(False, shown[:200] + "...", "too_long", info=info)
        results = [judge(kind, problem.answer, a, meta.get("choices") or (), meta.get("precision"))
                   for a in answers]
        if kind == "choice":
            info["read_as"] = [r for _, r in results]
        oks = [ok for ok, _ in results]
        if all(oks):
            return Verdict(True, shown, "correct", info=info)
        return Verdict(False, shown, "hedge" if any(oks) else "wrong", info=info)

    def close(self) -> None:
        if self._math is not None:
            self._math.close()


def answer_kind(problem: Problem) -> str:
    kind = (problem.meta or {}).get("answer_kind")
    if kind not in KINDS:
        raise ValueError(f"problem {problem.problem_id!r}: the typed verifier needs meta['answer_kind'] "
                         f"in {', '.join(KINDS)}, got {kind!r}")
    return kind


from boundlab.verify import VERIFIERS  # noqa: E402

VERIFIERS.register("typed")(TypedVerifier)
