"""Failure types of toy world 2 completions: what went wrong first, per sample.

One label per sample (`LABELS`), read from the world's own verdict (`boundlab.worlds.toyworld2.verifier`,
which replays the trace move by move), never from a second parser:

- `strict_correct`: the canonical trace and the right answer (the verifier's `strict`);
- `lucky`: the right answer without the canonical trace (a bare `A:24`, a slip that lands on the
  gold, a garbage trace): what an answer-only reward pays for and strict pass@k does not count;
- `wrong_decision`: a legal move that is not the canonical one at a decision (a precedence or
  bracket choice the canonical trace makes the other way), or `#` read as `+` (the base corpus's
  reading of the out-of-support operator): a *strategy* failure;
- `slip`: a move whose written result is wrong arithmetic (`8*8=68`);
- `bad_state`: the state written after a move is not what the move gives (a mis-copied operand, a
  dropped term), or the answer is not the last result;
- `invalid_move`: operands that are not adjacent in the state (no such move exists);
- `malformed`: not a trace at all (no `;A:`, a step that does not parse, steps past the end).

Where the verifier's strategy names the failure that *stopped* the replay, the label here is the
*first* thing that went wrong: a trace that took a wrong decision and slipped later (off the
canonical path) is `wrong_decision`, since the slip happened on a path that was already lost. The
verifier records every decision met before the trace broke (`info["decisions"]`, `[cell, took,
on_path]`); a decision not taken at or before the failing step makes the label `wrong_decision`.
A wrong move and a wrong result in the same step count as the wrong decision (the move comes first).

`STRATEGY` and `EXECUTION` group the failure labels for the mechanism report
(`boundlab.report.mechanism`): strategy narrowing is right decisions no longer taken; execution
regression is slips, bad states, invalid moves and malformed traces.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping

STRICT_CORRECT = "strict_correct"
LUCKY = "lucky"
WRONG_DECISION = "wrong_decision"
SLIP = "slip"
BAD_STATE = "bad_state"
INVALID_MOVE = "invalid_move"
MALFORMED = "malformed"
LABELS = (STRICT_CORRECT, LUCKY, WRONG_DECISION, SLIP, BAD_STATE, INVALID_MOVE, MALFORMED)
STRATEGY = (WRONG_DECISION,)
EXECUTION = (SLIP, BAD_STATE, INVALID_MOVE, MALFORMED)

# The toy2 verifier's `info["strategy"]` (boundlab.worlds.toyworld2.verifier.STRATEGIES) -> label, for a
# sample that is not answer-right and took no wrong decision before it broke.
_FROM_STRATEGY = {
    "wrong_decision": WRONG_DECISION,
    "hash_as_plus": WRONG_DECISION,
    "slip": SLIP,
    "bad_state": BAD_STATE,
    "bad_answer": BAD_STATE,
    # A replay that found the canonical trace cannot be wrong (the verifier maps a valid non-canonical
    # replay to bad_state itself); kept so that every strategy has a label.
    "canonical": BAD_STATE,
    "invalid_move": INVALID_MOVE,
    "malformed": MALFORMED,
    "no_answer": MALFORMED,
}


class NotToy2(ValueError):
    """A sample whose verdict carries no toy2 replay (`info["strategy"]`): another task's store."""


def classify_verdict(correct: bool, strict: bool | None, info: Mapping[str, Any] | None) -> str:
    """The failure label of one sample from its stored verdict (correct, strict, info)."""
    if not info or "strategy" not in info:
        raise NotToy2("a failure type needs the toy2 verifier's replay (info['strategy']); this "
                      "sample has none: was it probed on task=toy2?")
    if strict:
        if not correct:
            raise ValueError("a strict sample must be answer-right: the verdict is inconsistent")
        return STRICT_CORRECT
    if correct:
        return LUCKY
    if any(not took for _cell, took, *_ in info.get("decisions") or ()):
        return WRONG_DECISION
    strategy = info["strategy"]
    if strategy not in _FROM_STRATEGY:
        raise NotToy2(f"unknown toy2 strategy {strategy!r} in a stored verdict")
    return _FROM_STRATEGY[strategy]


def classify(problem: Any, completion: str) -> str:
    """The failure label of `completion` (with or without its prompt) for a toy2 problem, judged
    by the registered `toy2` verifier (the probe layer never imports a world)."""
    from boundlab.probe.context import open_verifier

    v = open_verifier("toy2").score(problem, [completion])[0]
    return classify_verdict(v.correct, v.strict, v.info)


def classify_row(row: Any) -> str:
    """The label of a stored sample (`boundlab.probe.store.SampleRow`): no text needed, so it works
    on compact probes too (the verdict and its info are kept for every sample)."""
    return classify_verdict(row.correct, row.strict, row.info)


def mix(labels: Iterable[str]) -> dict[str, int]:
    """Counts per label, every label present (0 where none)."""
    got = Counter(labels)
    bad = set(got) - set(LABELS)
    if bad:
        raise ValueError(f"not failure labels: {sorted(bad)}")
    return {lab: got.get(lab, 0) for lab in LABELS}


def decisions_taken(info: Mapping[str, Any] | None) -> tuple[int, int]:
    """(right decisions taken, decisions met) in one sample's replay."""
    decs = (info or {}).get("decisions") or ()
    return sum(1 for d in decs if d[1]), len(decs)
