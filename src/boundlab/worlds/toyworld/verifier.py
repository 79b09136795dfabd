"""The toy verifier: judges the chain of thought as well as the answer.

- `correct`: the final answer (after the last `A:`) equals the gold answer. This is what pass@k uses.
- `strict`: correct *and* the trace is the precedence-aware one with every step valid: right
  operands in the right order, exact arithmetic, and the answer equal to the last step's result.
  A lucky guess, or a wrong-order trace that lands on the right number, is correct but not strict.
- `info["strategy"]`, one of `world.STRATEGIES`:
  - `precedence`: two valid steps in precedence order (on easy problems that is also left to right);
  - `left_to_right`: two valid steps in left-to-right order where that differs (hard problems);
  - `slip`: the steps follow one of the two orders, but some arithmetic (or the copied answer) is off;
  - `guess`: a bare `A:<n>` with no steps;
  - `malformed`: anything else (unknown operands, wrong step count, garbage, no answer).
- `info["order"]`: the plan the steps follow, valid or not (`precedence`, `left_to_right`, or None
  for guesses and malformed text), so a slip shows which strategy it was attempting.
- `outcome`: `correct`, `wrong`, or `no_answer` when the completion does not end in `A:<int>`.

Steps may write a commutative operation either way round (`4*3` for `3*4`). The completion is what
follows the prompt; a completion that still starts with the prompt is tolerated.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

from boundlab.tasks.base import Problem
from boundlab.worlds.toyworld.world import ANSWER_MARKER, STRATEGIES, Expr, _apply, prompt
from boundlab.verify.base import Verdict, Verifier

_INT = r"-?\d+"
_STEP = re.compile(rf"^({_INT})([+\-*])({_INT})=({_INT})$")
_TRACE = re.compile(rf"^(?:(?P<steps>[^;]*);)?{ANSWER_MARKER}(?P<ans>{_INT})$")
# In a malformed completion the answer still counts if `A:<int>` ends it; text running on past
# the answer (no EOS) leaves no answer.
_LAST_ANSWER = re.compile(rf"{ANSWER_MARKER}({_INT})$")
_SPECIAL = re.compile(r"<(?:eos|pad|unk)>")


def _canonical(s: str) -> bool:
    return s == str(int(s))


def _clean(problem: Problem, completion: str) -> str:
    text = completion
    head = prompt(Expr.parse(problem.question))
    if text.startswith(head):
        text = text[len(head):]
    # Text after EOS (if a sampler kept special tokens) is not part of the answer.
    m = _SPECIAL.search(text)
    if m:
        text = text[: m.start()]
    return text.strip()


def _matches(step: tuple[int, str, int], want: tuple[int, str, int]) -> bool:
    x, op, y = step
    wx, wop, wy = want
    if op != wop:
        return False
    return (x, y) == (wx, wy) or (op in "+*" and (y, x) == (wx, wy))


def _follows(e: Expr, steps: list[tuple[int, str, int, int]], order: str) -> bool:
    """Do the steps combine the right operands in `order`? (Arithmetic is checked elsewhere;
    a step that uses the first result uses the value the trace itself wrote.)"""
    plan = e.plan(order)
    if len(steps) != len(plan):
        return False
    r1 = steps[0][3]
    for (x, op, y, _), (px, pop, py) in zip(steps, plan):
        want = (r1 if px is None else px, pop, r1 if py is None else py)
        if not _matches((x, op, y), want):
            return False
    return True


def classify(problem: Problem, completion: str) -> tuple[str, int | None, str | None]:
    """(strategy, extracted answer or None, order). `order` is the plan the steps follow,
    "precedence" or "left_to_right" (valid or not; on easy problems always "precedence"), or None
    for guesses and malformed traces: it shows which strategy a slip was attempting."""
    e = Expr.parse(problem.question)
    text = _clean(problem, completion)
    m = _TRACE.match(text)
    if m is None or not _canonical(m.group("ans")):
        last = _LAST_ANSWER.findall(text)
        return "malformed", (int(last[-1]) if last else None), None
    ans = int(m.group("ans"))
    raw = m.group("steps")
    if raw is None:
        return "guess", ans, None
    steps = []
    for part in raw.split(","):
        sm = _STEP.match(part)
        if sm is None or not all(_canonical(g) for g in (sm.group(1), sm.group(3), sm.group(4))):
            return "malformed", ans, None
        steps.append((int(sm.group(1)), sm.group(2), int(sm.group(3)), int(sm.group(4))))
    valid = all(_apply(x, op, y) == r for x, op, y, r in steps) and steps[-1][3] == ans
    if _follows(e, steps, "precedence"):
        return ("precedence" if valid else "slip"), ans, "precedence"
    if _follows(e, steps, "left_to_right"):
        return ("left_to_right" if valid else "slip"), ans, "left_to_right"
    return "malformed", ans, None


def judge(problem: Problem, completion: str) -> Verdict:
    strategy, ans, order = classify(problem, completion)
    info = {"strategy": strategy, "order": order}
    if ans is None:
        return Verdict(False, None, "no_answer", strict=False, info=info)
    correct = str(ans) == problem.answer.strip()
    return Verdict(correct, str(ans), "correct" if correct else "wrong",
                   strict=correct and strategy == "precedence", info=info)


class ToyVerifier(Verifier):
    name = "toy"
    # Takes no settings (no `verify.toy` block): nothing in the `verify` config can change a toy
    # verdict.
    verdict_settings = frozenset()

    def __init__(self) -> None:
        pass

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        return [judge(problem, c) for c in completions]


def strategy_counts(verdicts: Iterable[Verdict]) -> dict[str, int]:
    counts = Counter(v.info.get("strategy", "malformed") for v in verdicts)
    return {s: counts.get(s, 0) for s in STRATEGIES}


def strategy_rates(verdicts: Iterable[Verdict]) -> dict[str, float]:
    """Fraction of verdicts per strategy (every strategy listed, 0.0 when absent), plus
    `correct` and `strict` rates and the count `n`."""
    verdicts = list(verdicts)
    n = len(verdicts)
    out: dict[str, float] = {s: (c / n if n else 0.0) for s, c in strategy_counts(verdicts).items()}
    out["correct"] = sum(v.correct for v in verdicts) / n if n else 0.0
    out["strict"] = sum(bool(v.strict) for v in verdicts) / n if n else 0.0
    out["n"] = n
    return out


from boundlab.verify import VERIFIERS  # noqa: E402

VERIFIERS.register("toy")(ToyVerifier)
