"""The math verifier: extract the final answer, check it against the gold answer with math-verify.

- Extraction (see `extract.py`): last balanced `\\boxed{}`, then "the answer is X", then the last
  number.
- Each distinct extracted answer is verified once per problem and its verdict reused for every
  duplicate (at n=256 most samples repeat a handful of answers). Verdicts are also cached across
  calls, keyed by (gold, answer).
- Every math-verify call runs in a worker process (`DeadlinePool`): math-verify's own timeouts use
  `signal.alarm`, which needs a main thread and cannot interrupt C-level big-integer arithmetic, so
  the parent enforces a hard deadline and replaces a worker that overruns it.
- Answers longer than `max_answer_chars` are judged `too_long` without parsing.

- When gold and answer are both plain integers (every AIME answer, most of MATH), the verdict is
  integer equality, decided in the parent with no parse at all. That is exactly what math-verify
  concludes for such pairs (tests/unit/test_math_verifier.py checks a grid of them against it).

Otherwise a call is exactly `verify(parse("$gold$"), parse("$answer$"))`, so the verdict is the one
a plain math-verify call gives; only the work is shared.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, Sequence

from boundlab.tasks.base import Problem
from boundlab.verify.base import Verdict, Verifier
from boundlab.verify.extract import MAX_ANSWER_CHARS, extract_math_answer
from boundlab.verify.pool import CRASH, TIMEOUT, DeadlinePool

# Per-call budgets inside the worker (math-verify takes whole seconds).
_PARSE_TIMEOUT_S = 1
_VERIFY_TIMEOUT_S = 1


def wrap_latex(s: str) -> str:
    """The form both sides are handed to `math_verify.parse` in."""
    s = s.strip()
    return s if s.startswith("$") else f"${s}$"


def plain_math_verify(gold: str, answer: str) -> bool:
    """One plain math-verify call: the reference our verifier must agree with."""
    from math_verify import parse, verify

    return bool(verify(parse(wrap_latex(gold), parsing_timeout=_PARSE_TIMEOUT_S),
                       parse(wrap_latex(answer), parsing_timeout=_PARSE_TIMEOUT_S),
                       timeout_seconds=_VERIFY_TIMEOUT_S))


_GOLD_CACHE: dict[str, Any] = {}
_INTEGER = re.compile(r"-?\d{1,18}")


def fast_verdict(gold: str, answer: str) -> bool | None:
    """Integer vs integer: decided without math-verify. None means "ask math-verify"."""
    g, a = gold.strip(), answer.strip()
    if _INTEGER.fullmatch(g) and _INTEGER.fullmatch(a):
        return int(g) == int(a)
    return None


def _worker_init() -> None:
    import logging

    import math_verify  # noqa: F401  (sympy and antlr load here, before any deadline)

    # Timeouts are reported through our verdicts; math-verify's own warnings would flood the log.
    logging.getLogger("math_verify").setLevel(logging.ERROR)

    plain_math_verify("1", "1")  # warm the parser


def _worker_check(arg: tuple[str, str]) -> bool:
    """Runs in a worker process. Gold answers are parsed once per worker and reused."""
    from math_verify import parse, verify

    gold, answer = arg
    g = _GOLD_CACHE.get(gold)
    if g is None:
        g = parse(wrap_latex(gold), parsing_timeout=_PARSE_TIMEOUT_S)
        if len(_GOLD_CACHE) > 10000:
            _GOLD_CACHE.clear()
        _GOLD_CACHE[gold] = g
    a = parse(wrap_latex(answer), parsing_timeout=_PARSE_TIMEOUT_S)
    return bool(verify(g, a, timeout_seconds=_VERIFY_TIMEOUT_S))


class MathVerifier(Verifier):
    name = "math"

    def __init__(self, workers: int = 2, deadline_s: float = 2.0,
                 max_answer_chars: int = MAX_ANSWER_CHARS, cache_size: int = 200_000, **_: Any):
        self.max_answer_chars = int(max_answer_chars)
        self.pool = DeadlinePool(_worker_check, workers=workers, deadline_s=deadline_s,
                                 init=_worker_init)
        self._cache: OrderedDict[tuple[str, str], tuple[bool, str]] = OrderedDict()
        self._cache_size = cache_size
        self.calls = 0  # math-verify calls actually made (for benchmarks and tests)

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        return self.score_many([(problem, completions)])[0]

    def score_many(self, items: Sequence[tuple[Problem, Sequence[str]]]) -> list[list[Verdict]]:
        extracted = [[extract_math_answer(c) for c in comps] for _, comps in items]
        # Distinct (gold, answer) pairs that still need a math-verify call.
        todo: list[tuple[str, str]] = []
        decided: dict[tuple[str, str], tuple[bool, str]] = {}
        for (problem, _), answers in zip(items, extracted):
            gold = problem.answer
            for a in answers:
                if a is None or len(a) > self.max_answer_chars:
                    continue
                key = (gold, a)
                if key in decided:
                    continue
                hit = self._cache.get(key)
                fast = fast_verdict(gold, a) if hit is None else None
                if hit is not None:
                    decided[key] = hit
                elif fast is not None:
                    decided[key] = (fast, "correct" if fast else "wrong")
                else:
                    decided[key] = (False, "pending")
                    todo.append(key)
        results = self.pool.map(todo)
        self.calls += len(todo)
        for key, res in zip(todo, results):
            if res is TIMEOUT or res == TIMEOUT:
                verdict = (False, "timeout")
            elif res is CRASH or res == CRASH:
                verdict = (False, "error")
            elif isinstance(res, tuple) and res and res[0] == "__error__":
                verdict = (False, "error")
            else:
                verdict = (bool(res), "correct" if res else "wrong")
            decided[key] = verdict
            self._put(key, verdict)
        out: list[list[Verdict]] = []
        for (problem, _), answers in zip(items, extracted):
            row = []
            for a in answers:
                if a is None:
                    row.append(Verdict(False, None, "no_answer"))
                elif len(a) > self.max_answer_chars:
                    row.append(Verdict(False, a[:200] + "...", "too_long"))
                else:
                    ok, outcome = decided[(problem.answer, a)]
                    row.append(Verdict(ok, a, outcome))
            out.append(row)
        return out

    def _put(self, key: tuple[str, str], verdict: tuple[bool, str]) -> None:
        self._cache[key] = verdict
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def close(self) -> None:
        self.pool.close()


from boundlab.verify import VERIFIERS  # noqa: E402

VERIFIERS.register("math")(MathVerifier)
