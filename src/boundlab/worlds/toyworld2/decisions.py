"""Decision tokens of a toy world 2 trace: the characters where the trace makes a strategy choice.

A *decision state* is one the world's verifier calls a decision (`verifier._is_decision`: a bracket,
or a state whose canonical move is not the leftmost one). There the next step's move `x op y` is
a choice among the legal moves (those the verifier accepts: the operators of the state and, with a
bracket, of its bracket-dropped view). The choice is made at the first character where those moves'
texts differ: before it every legal move writes the same characters (`2*(2+7)`: `2+7` or `2*2`, so
the `+`/`*` after the common `2` decides), after it the move is copied from the state. That
character is the step's *decision token*; every other character of the trace (other moves, results,
rewritten states, the answer) is execution.

The walk follows the states the trace itself writes (the text after each `>`), since those are what
the model conditions on, and stops where the trace stops parsing. `#` computed as `+` is a
misreading of one operator's result, not a choice between moves, so it has no decision token.
"""

from __future__ import annotations

import os

from boundlab.worlds.toyworld2 import expr as X
from boundlab.worlds.toyworld2.verifier import _is_decision


def _legal_moves(state: X.State) -> set[str]:
    views = [state] + ([X.drop_brackets(state)] if X.has_bracket(state) else [])
    return {f"{v[i - 1]}{v[i]}{v[i + 1]}" for v in views for i in X.ops_at(v)}


def decision_offsets(question: str, text: str) -> list[int]:
    """Character offsets in `text` (a completion without its prompt) of its decision tokens."""
    body = text.split(";", 1)[0]
    try:
        state = X.parse(question)
    except ValueError:
        return []
    out: list[int] = []
    start = 0
    for part in body.split(","):
        if len(state) <= 1:
            break
        try:
            moves = _legal_moves(state) if _is_decision(state) else set()
        except (IndexError, ValueError):  # a written state the grammar cannot read
            break
        if len(moves) > 1:
            at = len(os.path.commonprefix(sorted(moves)))
            move = part.split("=", 1)[0]
            if at < len(move):
                out.append(start + at)
        if ">" not in part:
            break
        try:
            state = X.parse(part.split(">", 1)[1])
        except ValueError:
            break
        start += len(part) + 1
    return out
