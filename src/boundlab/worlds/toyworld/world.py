"""The toy world: three-operand integer arithmetic with a short, checkable chain of thought.

A problem is `a op1 b op2 c` with single-digit operands (0-9) and operators from `+ - *`, shown to
the model as the prompt `Q:7-3*4;`. A completion is two steps, then the answer, then EOS:

    3*4=12,7-12=-5;A:-5

*Hard* problems are exactly those where operator precedence changes the value, `a ± b * c`: there
left-to-right evaluation, `7-3=4,4*4=16;A:16`, is wrong. The degenerate `a ± b * c` cases where
both orders give the same value (a = 0 or c = 1) are left out of the world altogether, so that
"hard" and "left-to-right is wrong" are the same thing. Everything else is *easy*: precedence and
left to right agree there, and so do their traces.

The base model's corpus mixes strategies of different reliability (see `BASE_MIX`): the correct
precedence-aware trace, the left-to-right trace (valid arithmetic, wrong order on hard problems),
traces with an arithmetic slip, and bare guesses near the truth. The correct trace is rare on hard
problems but present, so the base samples it at a low, non-zero rate that RL could amplify or
erase. A tiny model learns a rare strategy less often than its corpus holds it (DESIGN.md), so the
corpus share is set a little above the sampled rate we aim for, and the sampled rate is measured
(`python -m boundlab.worlds.toyworld.measure`), not assumed.

Splits are fixed by `SPLIT_SEED`, independent of any training seed: `test` (200 problems, a third
hard), `train` (1000 problems for RL, a third hard) and the pretraining pool (the rest). The three
are disjoint, so the base never saw a test or RL-train question in pretraining.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache

OPS = "+-*"
DIGITS = range(10)
# Fixed forever: changing it changes every problem id's question.
SPLIT_SEED = 20250406
N_TEST = 200
N_TRAIN = 1000
# Share of hard problems in every split and in the pretraining corpus.
HARD_FRACTION = 1 / 3

PROMPT_TEMPLATE = "Q:{question};"
ANSWER_MARKER = "A:"

STRATEGIES = ("precedence", "left_to_right", "slip", "guess", "malformed")


def _apply(x: int, op: str, y: int) -> int:
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    raise ValueError(f"unknown operator {op!r}")


@dataclass(frozen=True)
class Expr:
    a: int
    op1: str
    b: int
    op2: str
    c: int

    @property
    def question(self) -> str:
        return f"{self.a}{self.op1}{self.b}{self.op2}{self.c}"

    @property
    def ops(self) -> str:
        return self.op1 + self.op2

    @property
    def precedence_first(self) -> bool:
        """True when the second operation binds tighter (a ± b * c)."""
        return self.op1 in "+-" and self.op2 == "*"

    @property
    def value(self) -> int:
        """The gold answer, with the usual precedence."""
        if self.precedence_first:
            return _apply(self.a, self.op1, self.b * self.c)
        return self.left_to_right_value

    @property
    def left_to_right_value(self) -> int:
        return _apply(_apply(self.a, self.op1, self.b), self.op2, self.c)

    @property
    def hard(self) -> bool:
        return self.value != self.left_to_right_value

    @classmethod
    def parse(cls, question: str) -> "Expr":
        q = question.strip()
        if len(q) != 5 or not (q[0].isdigit() and q[2].isdigit() and q[4].isdigit()) \
                or q[1] not in OPS or q[3] not in OPS:
            raise ValueError(f"not a toy question: {question!r}")
        return cls(int(q[0]), q[1], int(q[2]), q[3], int(q[4]))

    # The two plans a trace can follow. Each step is (left, op, right); `None` stands for the
    # result of the first step as the trace itself wrote it.
    def plan(self, order: str) -> list[tuple[int | None, str, int | None]]:
        if order == "precedence" and self.precedence_first:
            return [(self.b, "*", self.c), (self.a, self.op1, None)]
        if order in ("precedence", "left_to_right"):
            return [(self.a, self.op1, self.b), (None, self.op2, self.c)]
        raise ValueError(f"unknown order {order!r}")


def in_world(e: Expr) -> bool:
    """Degenerate a ± b * c (both orders agree) are not part of the world."""
    return not (e.precedence_first and not e.hard)


@lru_cache(maxsize=1)
def all_exprs() -> tuple[Expr, ...]:
    out = []
    for a in DIGITS:
        for op1 in OPS:
            for b in DIGITS:
                for op2 in OPS:
                    for c in DIGITS:
                        e = Expr(a, op1, b, op2, c)
                        if in_world(e):
                            out.append(e)
    return tuple(out)


@lru_cache(maxsize=1)
def splits() -> dict[str, tuple[Expr, ...]]:
    """{'test', 'train', 'pretrain'} -> expressions; fixed by SPLIT_SEED, disjoint."""
    rng = random.Random(SPLIT_SEED)
    hard = [e for e in all_exprs() if e.hard]
    easy = [e for e in all_exprs() if not e.hard]
    rng.shuffle(hard)
    rng.shuffle(easy)
    n_test_hard = round(N_TEST * HARD_FRACTION)
    n_train_hard = round(N_TRAIN * HARD_FRACTION)
    test = hard[:n_test_hard] + easy[: N_TEST - n_test_hard]
    train = (hard[n_test_hard:n_test_hard + n_train_hard]
             + easy[N_TEST - n_test_hard: N_TEST - n_test_hard + N_TRAIN - n_train_hard])
    pretrain = (hard[n_test_hard + n_train_hard:]
                + easy[N_TEST - n_test_hard + N_TRAIN - n_train_hard:])
    # Mix hard and easy so that any prefix (a task `limit`) keeps roughly the same share.
    rng.shuffle(test)
    rng.shuffle(train)
    return {"test": tuple(test), "train": tuple(train), "pretrain": tuple(pretrain)}


def prompt(e: Expr) -> str:
    return PROMPT_TEMPLATE.format(question=e.question)


# ---------------------------------------------------------------------------------------------
# Traces: what each strategy writes. The completion text excludes EOS (the trainer appends it).

def _fmt_step(x: int, op: str, y: int, r: int) -> str:
    return f"{x}{op}{y}={r}"


def trace(e: Expr, order: str = "precedence", slip: tuple[int, int] | None = None) -> str:
    """A two-step trace in `order`; `slip=(step, delta)` adds `delta` to that step's result and
    carries the error forward, as a person who mis-added would."""
    steps = []
    r1 = None
    for i, (x, op, y) in enumerate(e.plan(order)):
        x = r1 if x is None else x
        y = r1 if y is None else y
        r = _apply(x, op, y)
        if slip is not None and slip[0] == i:
            r += slip[1]
        steps.append(_fmt_step(x, op, y, r))
        r1 = r
    return ",".join(steps) + f";{ANSWER_MARKER}{r1}"


def guess(e: Expr, noise: int) -> str:
    return f"{ANSWER_MARKER}{e.value + noise}"


SLIP_DELTAS = (-10, -2, -1, 1, 2, 10)
GUESS_NOISE = (-3, -2, -1, 0, 1, 2, 3)


@dataclass(frozen=True)
class Mix:
    """Corpus shares of each strategy, for easy and for hard problems. On easy problems the
    precedence and left-to-right traces are the same text, so only `precedence` is listed."""

    easy: dict[str, float] = field(default_factory=dict)
    hard: dict[str, float] = field(default_factory=dict)
    # On hard problems, the share of slip traces that follow the precedence order (the rest
    # follow left to right).
    slip_precedence: float = 0.3


# The noisy base corpus. The correct trace is 10% of hard examples: in the prototype that gave a
# sampled rate of about 9%, and 0.5% gave none at all (DESIGN.md, "A fair toy world").
BASE_MIX = Mix(
    easy={"precedence": 0.75, "slip": 0.10, "guess": 0.15},
    hard={"precedence": 0.10, "left_to_right": 0.55, "slip": 0.15, "guess": 0.20},
)
# The teacher sees only correct, precedence-aware traces.
TEACHER_MIX = Mix(easy={"precedence": 1.0}, hard={"precedence": 1.0}, slip_precedence=0.0)


def sample_completion(e: Expr, mix: Mix, rng: random.Random) -> tuple[str, str]:
    """Draw one corpus completion for `e`; returns (strategy, text)."""
    shares = mix.hard if e.hard else mix.easy
    names = list(shares)
    strategy = rng.choices(names, weights=[shares[n] for n in names])[0]
    if strategy == "precedence":
        return strategy, trace(e, "precedence")
    if strategy == "left_to_right":
        return strategy, trace(e, "left_to_right")
    if strategy == "slip":
        order = "precedence" if (e.hard and rng.random() < mix.slip_precedence) else "left_to_right"
        if not e.hard:
            order = "precedence"
        return strategy, trace(e, order, slip=(rng.randrange(2), rng.choice(SLIP_DELTAS)))
    if strategy == "guess":
        return strategy, guess(e, rng.choice(GUESS_NOISE))
    raise ValueError(f"unknown strategy {strategy!r}")


class Corpus:
    """An endless, seeded stream of (prompt, completion) pairs from the pretraining pool; a
    problem is hard with probability HARD_FRACTION."""

    def __init__(self, mix: Mix, seed: int, pool: tuple[Expr, ...] | None = None):
        pool = splits()["pretrain"] if pool is None else pool
        self.mix = mix
        self.rng = random.Random(seed)
        self.hard = [e for e in pool if e.hard]
        self.easy = [e for e in pool if not e.hard]

    def batch(self, size: int) -> list[tuple[str, str]]:
        out = []
        for _ in range(size):
            hard = self.rng.random() < HARD_FRACTION
            e = self.rng.choice(self.hard if hard else self.easy)
            out.append((prompt(e), sample_completion(e, self.mix, self.rng)[1]))
        return out
