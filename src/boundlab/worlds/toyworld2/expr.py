"""Expressions of the second-edition toy world, their moves, and the traces that write them out.

An expression is a tuple of tokens: positive ints, the operators `+`, `*` and `#`, and at most one
bracket pair. `#` is the out-of-support operator, `a#b = 10*a + b`, binding tighter than `*`, which
binds tighter than `+`. A *move* applies one operator whose two operands are numbers, and rewrites the
state; a bracket around a single number is then removed.

A trace writes every move with the whole state after it (the *visible state*), then the answer:

    Q:2+3*4+5*2;   ->   3*4=12>2+12+5*2,2+12=14>14+5*2,5*2=10>14+10,14+10=24;A:24

The *canonical* move (the one a correct solver makes) is the leftmost operator, except that it
steps right while the operator after it binds tighter (`2+3*4`: `3*4`), and inside the bracket
first when there is one. A *decision* is a state where the canonical move is not the leftmost one:
there a left-to-right habit goes wrong. Three kinds (`decisions(e)`):

- `prec`: `a+b*c` (and `a+b#c`, `a*b#c`): the tighter operator must go first;
- `bracket`: a bracket with an operator inside, next to a tighter operator outside (`a*(b+c)`);
  dropping the bracket makes both "multiply first" and "left to right" wrong, so the strategy that
  is right at `prec` decisions is wrong here (the counter-rule family);
- the `#` operator itself, which only the teacher's corpus writes correctly (`a#b=10a+b`); the
  base's corpus reads `#` as `+`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

Token = int | str
State = tuple[Token, ...]

PREC = {"+": 1, "*": 2, "#": 3}


def apply_op(x: int, op: str, y: int, hash_as_plus: bool = False) -> int:
    if op == "+" or (op == "#" and hash_as_plus):
        return x + y
    if op == "*":
        return x * y
    if op == "#":
        return 10 * x + y
    raise ValueError(f"unknown operator {op!r}")


def parse(text: str) -> State:
    """`2+3*(4+5)` -> (2, '+', 3, '*', '(', 4, '+', 5, ')'). Multi-digit numbers allowed."""
    out: list[Token] = []
    num = ""
    for ch in text:
        if ch.isdigit():
            num += ch
            continue
        if num:
            out.append(int(num))
            num = ""
        if ch in "+*#()":
            out.append(ch)
        else:
            raise ValueError(f"not a toy expression: {text!r}")
    if num:
        out.append(int(num))
    return tuple(out)


def render(state: State) -> str:
    return "".join(str(t) for t in state)


def ops_at(state: State) -> list[int]:
    """Indices of operators whose both neighbours are numbers (they can be applied now)."""
    return [i for i, t in enumerate(state)
            if isinstance(t, str) and t in PREC
            and isinstance(state[i - 1], int) and isinstance(state[i + 1], int)]


def has_bracket(state: State) -> bool:
    return "(" in state


def drop_brackets(state: State) -> State:
    return tuple(t for t in state if t not in ("(", ")"))


def _simplify(state: list[Token]) -> list[Token]:
    """Remove brackets around a single number."""
    i = 0
    while i + 2 < len(state):
        if state[i] == "(" and isinstance(state[i + 1], int) and state[i + 2] == ")":
            state = state[:i] + [state[i + 1]] + state[i + 3:]
        else:
            i += 1
    return state


def apply_move(state: State, i: int, hash_as_plus: bool = False) -> tuple[State, tuple[int, str, int, int]]:
    """Apply the operator at index i; returns (new state, (x, op, y, result))."""
    x, op, y = state[i - 1], state[i], state[i + 1]
    r = apply_op(x, op, y, hash_as_plus)
    new = list(state[: i - 1]) + [r] + list(state[i + 2:])
    return tuple(_simplify(new)), (x, op, y, r)


def _scan_from(state: State, start: int, stop: int, hash_as_plus: bool = False) -> int:
    """The canonical operator in state[start:stop] (bracket-free span): leftmost, stepping right
    while the next operator binds tighter."""
    def prec(op: str) -> int:
        return PREC["+"] if (op == "#" and hash_as_plus) else PREC[op]

    ops = [j for j in range(start, stop) if isinstance(state[j], str) and state[j] in PREC]
    k = 0
    while k + 1 < len(ops) and prec(state[ops[k + 1]]) > prec(state[ops[k]]):
        k += 1
    return ops[k]


def canonical_move(state: State, hash_as_plus: bool = False) -> int:
    if has_bracket(state):
        lo = state.index("(")
        hi = state.index(")")
        return _scan_from(state, lo + 1, hi, hash_as_plus)
    return _scan_from(state, 0, len(state), hash_as_plus)


def leftmost_move(state: State) -> int:
    """The left-to-right habit: the first operator, brackets ignored."""
    return ops_at(drop_brackets(state))[0] if has_bracket(state) else ops_at(state)[0]


@dataclass(frozen=True)
class Step:
    x: int
    op: str
    y: int
    result: int
    state: State  # after the move

    def text(self) -> str:
        after = "" if len(self.state) == 1 else ">" + render(self.state)
        return f"{self.x}{self.op}{self.y}={self.result}{after}"


def trace_text(steps: list[Step]) -> str:
    ans = steps[-1].state[0] if len(steps[-1].state) == 1 else None
    if ans is None:
        raise ValueError("a trace must end in a single number")
    return ",".join(s.text() for s in steps) + f";A:{ans}"


@dataclass(frozen=True)
class Decision:
    """One decision point met along a path: its kind, its index among the path's decisions of any
    kind (1-based), the shape at the tighter operator (`chain`: another tighter operator follows it)
    and whether the left operand of the canonical move is a question number (`q`) or an
    intermediate result (`r`)."""
    kind: str
    position: int
    shape: str
    left: str

    @property
    def cell(self) -> str:
        return f"{self.kind}/{self.position}/{self.shape}/{self.left}"


def decision_at(state: State, fresh: frozenset[int], position: int,
                hash_as_plus: bool = False) -> Decision | None:
    """The decision this state poses (None when the canonical move is the leftmost one).
    `fresh`: indices of tokens that are question numbers, not results."""
    c = canonical_move(state, hash_as_plus)
    if has_bracket(state):
        # Bracket honoured is the only right move; a left-to-right or multiply-first solver that
        # drops the bracket goes wrong (the world keeps only such problems).
        kind = "bracket"
    elif c == ops_at(state)[0]:
        return None
    else:
        kind = "prec"
    nxt = c + 2
    chain = (nxt < len(state) and isinstance(state[nxt], str) and state[nxt] in PREC
             and PREC[state[nxt]] >= PREC[state[c]])
    left = "q" if (c - 1) in fresh else "r"
    return Decision(kind, position, "chain" if chain else "sep", left)


@lru_cache(maxsize=None)
def canonical_path(question: str) -> tuple[tuple[Step, ...], tuple[Decision, ...]]:
    """The correct trace's steps and the decisions met on the way."""
    state = parse(question)
    fresh = frozenset(i for i, t in enumerate(state) if isinstance(t, int))
    steps: list[Step] = []
    decs: list[Decision] = []
    while len(state) > 1:
        d = decision_at(state, fresh, len(decs) + 1)
        if d is not None:
            decs.append(d)
        i = canonical_move(state)
        new, (x, op, y, r) = apply_move(state, i)
        fresh = shift_fresh(fresh, i, state, new)
        state = new
        steps.append(Step(x, op, y, r, state))
    return tuple(steps), tuple(decs)


def fresh_in_view(state: State, view: State, fresh: frozenset[int]) -> frozenset[int]:
    """Question-number positions of `state` carried to `view` (the same numbers, brackets dropped)."""
    num_old = [i for i, t in enumerate(state) if isinstance(t, int)]
    num_new = [i for i, t in enumerate(view) if isinstance(t, int)]
    return frozenset(n for o, n in zip(num_old, num_new) if o in fresh)


def shift_fresh(fresh: frozenset[int], i: int, old: State, new: State) -> frozenset[int]:
    """Question-number positions after a move at i (the result is not fresh). Brackets removed by
    the move shift positions too; recomputed by walking both states."""
    # Map surviving old number tokens to new positions in order, skipping the consumed x, y.
    old_nums = [j for j, t in enumerate(old) if isinstance(t, int) and j not in (i - 1, i + 1)]
    new_nums = [j for j, t in enumerate(new) if isinstance(t, int)]
    # The result takes the place of x: it is new_nums[index of x among numbers].
    x_rank = sum(1 for j in range(i - 1) if isinstance(old[j], int))
    survivors = [j for j in new_nums if j != new_nums[x_rank]]
    return frozenset(nj for oj, nj in zip(old_nums, survivors) if oj in fresh)


def value(question: str) -> int:
    steps, _ = canonical_path(question)
    return steps[-1].result


def base_moves(state: State) -> list[tuple[str, State]]:
    """The moves the base's corpus makes at a state, as (label, view), where view is the state the
    move applies to (brackets dropped for `drop`). Labels: `canon` (the right move at a decision),
    `left` (left to right), `drop+canon` / `drop+left` (bracket dropped, then a precedence habit),
    or `only` (no decision). `#` is read as `+` by the base (see the module docstring)."""
    if has_bracket(state):
        dropped = drop_brackets(state)
        out = [("canon", state)]
        if canonical_move(dropped, True) != ops_at(dropped)[0]:
            out += [("drop+canon", dropped), ("drop+left", dropped)]
        else:
            out += [("drop+left", dropped)]
        return out
    if canonical_move(state, True) != ops_at(state)[0]:
        return [("canon", state), ("left", state)]
    return [("only", state)]


def base_move_index(label: str, view: State) -> int:
    if label in ("canon", "drop+canon"):
        return canonical_move(view, True)
    return ops_at(view)[0]


def all_base_paths(question: str, limit: int = 4096) -> list[tuple[tuple[str, ...], list[int]]]:
    """Every path the base's corpus can take: (labels at decisions, all values written).
    The base reads `#` as `+`."""
    out: list[tuple[tuple[str, ...], list[int]]] = []

    def walk(state: State, labels: tuple[str, ...], values: list[int]) -> None:
        if len(out) > limit:
            raise ValueError(f"too many paths for {question!r}")
        if len(state) == 1:
            out.append((labels, values))
            return
        for label, view in base_moves(state):
            i = base_move_index(label, view)
            new, (_, _, _, r) = apply_move(view, i, hash_as_plus=True)
            walk(new, labels + ((label,) if label != "only" else ()), values + [r])

    walk(parse(question), (), [])
    return out
