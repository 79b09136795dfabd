"""The second-edition toy verifier (`toy2`): replays the trace move by move.

- `correct` (answer-only): the number after the last `A:` equals the gold answer;
- `strict`: the completion *is* the canonical trace (every move, every result, every state), so a
  right answer reached any other way is correct but not strict. Strict is the world's headline.
- `info["strategy"]`: `canonical`, or why not: `wrong_decision` (a valid trace that went the wrong
  way at a decision), `hash_as_plus` (read `#` as `+`: the base's misconception), `slip` (wrong
  arithmetic), `bad_state` (the state written after a move is not what the move gives),
  `invalid_move` (operands that are not adjacent in the state), `bad_answer` (the answer is not the
  last result), `malformed` (not a trace), `no_answer`.
- `info["decisions"]`: the decisions met before the trace broke, as `[cell, took_canonical,
  on_path]`, where `on_path` says every earlier decision was right (so the audit can measure the
  second decision given the first was right, not only overall). `info["tier"]` echoes the problem's.
"""

from __future__ import annotations

import re
from typing import Sequence

from boundlab.tasks.base import Problem
from boundlab.worlds.toyworld2 import expr as X
from boundlab.worlds.toyworld2.world import canonical_trace, prompt
from boundlab.verify.base import Verdict, Verifier

_STEP = re.compile(r"^(\d+)([+*#])(\d+)=(\d+)(?:>([0-9+*#()]+))?$")
_TRACE = re.compile(r"^(?P<steps>[^;]*);A:(?P<ans>\d+)$")
_LAST_ANSWER = re.compile(r"A:(\d+)$")
_SPECIAL = re.compile(r"<(?:eos|pad|unk)>")
STRATEGIES = ("canonical", "wrong_decision", "hash_as_plus", "slip", "bad_state", "invalid_move",
              "bad_answer", "malformed", "no_answer")


def _clean(question: str, completion: str) -> str:
    text = completion
    head = prompt(question)
    if text.startswith(head):
        text = text[len(head):]
    m = _SPECIAL.search(text)
    if m:
        text = text[: m.start()]
    return text.strip()


def _is_decision(state: X.State) -> bool:
    return X.has_bracket(state) or X.canonical_move(state) != X.ops_at(state)[0]


def _rewrite_ok(new: X.State, after: str | None) -> bool:
    return (after is None) == (len(new) == 1) and (after is None or after == X.render(new))


def replay(question: str, text: str) -> tuple[str, list[list], int | None]:
    """(strategy, decisions, extracted answer or None)."""
    m = _TRACE.match(text)
    if m is None:
        last = _LAST_ANSWER.findall(text)
        return ("malformed" if last else "no_answer"), [], (int(last[-1]) if last else None)
    ans = int(m.group("ans"))
    state = X.parse(question)
    fresh = frozenset(i for i, t in enumerate(state) if isinstance(t, int))
    decisions: list[list] = []
    wrong = False
    for part in m.group("steps").split(","):
        sm = _STEP.match(part)
        if sm is None or len(state) == 1:
            return "malformed", decisions, ans
        x, op, y, r = int(sm.group(1)), sm.group(2), int(sm.group(3)), int(sm.group(4))
        views = [state] + ([X.drop_brackets(state)] if X.has_bracket(state) else [])
        found = [(v, i) for v in views for i in X.ops_at(v)
                 if (v[i - 1], v[i], v[i + 1]) == (x, op, y)]
        if not found:
            return "invalid_move", decisions, ans
        after = sm.group(5)
        # The same operands can sit in the state and in its bracket-dropped view (`1*5*(4+3)`):
        # take the reading whose rewritten state is the one the trace wrote.
        view, i = next(((v, j) for v, j in found if _rewrite_ok(X.apply_move(v, j)[0], after)),
                       found[0])
        if _is_decision(state):
            d = X.decision_at(state, fresh, len(decisions) + 1)
            took = view is state and i == X.canonical_move(state)
            decisions.append([d.cell, took, not wrong])
            wrong = wrong or not took
        if r != X.apply_op(x, op, y):
            kind = "hash_as_plus" if op == "#" and r == x + y else "slip"
            return kind, decisions, ans
        new, _ = X.apply_move(view, i)
        if not _rewrite_ok(new, after):
            return "bad_state", decisions, ans
        if view is not state:
            fresh = X.fresh_in_view(state, view, fresh)
        fresh = X.shift_fresh(fresh, i, view, new)
        state = new
    if len(state) != 1:
        return "malformed", decisions, ans
    if ans != state[0]:
        return "bad_answer", decisions, ans
    return ("wrong_decision" if wrong else "canonical"), decisions, ans


def judge(problem: Problem, completion: str) -> Verdict:
    text = _clean(problem.question, completion)
    strategy, decisions, ans = replay(problem.question, text)
    strict = text == canonical_trace(problem.question)
    if strict:
        strategy = "canonical"
    elif strategy == "canonical":  # a valid replay that is not the canonical text (cannot happen
        strategy = "bad_state"     # with this grammar; kept so strict and strategy never disagree)
    info = {"strategy": strategy, "decisions": decisions, "tier": problem.meta.get("tier")}
    if ans is None:
        return Verdict(False, None, "no_answer", strict=False, info=info)
    correct = str(ans) == problem.answer.strip()
    return Verdict(correct, str(ans), "correct" if correct else "wrong", strict=strict, info=info)


class Toy2Verifier(Verifier):
    name = "toy2"
    verdict_settings = frozenset()

    def __init__(self) -> None:
        pass

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        return [judge(problem, c) for c in completions]

    def decision_offsets(self, problem: Problem, completion: str) -> list[int]:
        """Character offsets of the completion's decision tokens (`toyworld2.decisions`), for the
        entropy view's decision-token split (`boundlab.probe.decision_entropy`)."""
        from boundlab.worlds.toyworld2.decisions import decision_offsets

        return decision_offsets(problem.question, completion)


from boundlab.verify import VERIFIERS  # noqa: E402

VERIFIERS.register("toy2")(Toy2Verifier)
