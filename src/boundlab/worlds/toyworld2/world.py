"""The second-edition toy world: problems by tier, the fixed splits, and the two pretraining corpora.

Tiers (`meta["tier"]`), each a family of problems defined by the decisions on its correct path
(`expr.canonical_path`):

| tier | family | what the correct trace must do | base rate by design |
|---|---|---|---|
| E | easy | no decision: left to right is right | ~1 |
| H1, H2, H3 | prec | 1, 2, 3 precedence decisions (`a+b*c`) | s, s^2, s^3 |
| B3, B4 | bracket | honour one bracket (3 or 4 numbers); dropping it is wrong | r (rare) |
| X | hash | use `a#b = 10a+b`, which the base's corpus reads as `+` | 0 |

No luck: there are no guesses in either corpus, and a problem is kept only when *every* other path
the base's corpus can take gives a different answer (`degenerate`), and when every value on every
such path is at most `MAX_VALUE` (two digits, so the arithmetic stays learnable).

The base corpus draws every decision independently (`BaseMix`), so a problem needing m decisions
is solved at about s^m. The shares are set per decision cell (kind/position/shape/left operand,
`expr.Decision.cell`) because a small model learns each cell at a different fraction of its corpus
share; `audit` measures the learned rates. The teacher's corpus writes the canonical trace only,
`#` included: it is the one model that knows the out-of-support family.

Splits are fixed by `SPLIT_SEED`: `test` (stratified, `TEST_SIZES`, ordered round-robin across tiers
so a prefix stays stratified), `train` (the RL pool, `TRAIN_SIZES` per tier; a run picks its tier mix)
and the pretraining stream (fresh random problems, never a test or train question).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from boundlab.worlds.toyworld2 import expr as X

SPLIT_SEED = 20261203
MAX_VALUE = 99
DIGITS = range(1, 10)
TIERS = ("E", "H1", "H2", "H3", "B3", "B4", "X")
FAMILY = {"E": "easy", "H1": "prec", "H2": "prec", "H3": "prec", "B3": "bracket", "B4": "bracket",
          "X": "hash"}
TEST_SIZES = {"E": 100, "H1": 100, "H2": 200, "H3": 100, "B3": 100, "B4": 100, "X": 100}
TRAIN_SIZES = {"E": 400, "H1": 400, "H2": 400, "H3": 400, "B3": 150, "B4": 400, "X": 400}
PROMPT_TEMPLATE = "Q:{question};"


@dataclass(frozen=True)
class ProblemSpec:
    question: str
    tier: str
    answer: int
    operands: int
    cells: tuple[str, ...]  # the decision cells on the correct path

    @property
    def family(self) -> str:
        return FAMILY[self.tier]


def tier_of(question: str) -> str | None:
    """The tier of a question, or None when it is outside the world (mixed decisions, degenerate,
    values too large)."""
    steps, decs = X.canonical_path(question)
    n = sum(1 for ch in question if ch.isdigit())  # operands are single digits
    kinds = [d.kind for d in decs]
    if "#" in question:
        tier = "X" if "(" not in question else None
    elif "bracket" in kinds:
        tier = f"B{n}" if kinds == ["bracket"] and n in (3, 4) else None
    elif "(" in question:
        tier = None  # a bracket that is not a decision
    else:
        m = len(kinds)
        tier = "E" if m == 0 else (f"H{m}" if m <= 3 else None)
    if tier is None:
        return None
    if max(s.result for s in steps) > MAX_VALUE or degenerate(question):
        return None
    return tier


def degenerate(question: str) -> bool:
    """True when some wrong path of the base's corpus lands on the right answer, or writes a value
    above MAX_VALUE."""
    gold = X.value(question)
    # On X every base path is wrong (it reads `#` as `+`); elsewhere the all-right path is the gold.
    hash_problem = "#" in question
    for labels, values in X.all_base_paths(question):
        if max(values) > MAX_VALUE:
            return True
        is_canonical = not hash_problem and all(lab == "canon" for lab in labels)
        if not is_canonical and values[-1] == gold:
            return True
    return False


def spec(question: str) -> ProblemSpec:
    tier = tier_of(question)
    if tier is None:
        raise ValueError(f"{question!r} is not a problem of the toy world")
    steps, decs = X.canonical_path(question)
    return ProblemSpec(question, tier, steps[-1].result,
                       sum(1 for ch in question if ch.isdigit()), tuple(d.cell for d in decs))


# -- random problems ---------------------------------------------------------------------------

@lru_cache(maxsize=1)
def op_patterns() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Operator patterns of 3-6 numbers (`+`/`*`) by tier: the decisions on the correct path
    depend on the operators only, so a tier is drawn as a pattern (uniformly: every shape is
    equally common) and then digits."""
    import itertools

    out: dict[str, list[tuple[str, ...]]] = {}
    for n in range(3, 7):
        for ops in itertools.product("+*", repeat=n - 1):
            m = len(X.canonical_path("".join("2" + o for o in ops) + "2")[1])
            if m <= 3:
                out.setdefault("E" if m == 0 else f"H{m}", []).append(ops)
    return {t: tuple(v) for t, v in out.items()}


def _random_question(tier: str, rng: random.Random) -> str:
    d = lambda: str(rng.choice(DIGITS))  # noqa: E731
    if tier == "E" or tier.startswith("H"):
        ops = rng.choice(op_patterns()[tier])
        return "".join(d() + op for op in ops) + d()
    if tier in ("B3", "B4"):
        n = int(tier[1])
        ops = [rng.choice("+*") for _ in range(n - 1)]
        j = rng.randrange(n - 1)  # bracket around numbers j, j+1
        ops[j] = "+"
        parts = []
        for i in range(n):
            tok = ("(" if i == j else "") + d() + (")" if i == j + 1 else "")
            parts.append(tok)
        return "".join(p + (ops[i] if i < n - 1 else "") for i, p in enumerate(parts))
    if tier == "X":
        n = rng.choice((2, 3, 3))
        ops = [rng.choice("+*") for _ in range(n - 1)]
        ops[rng.randrange(n - 1)] = "#"
        return "".join(d() + op for op in ops) + d()
    raise ValueError(f"unknown tier {tier!r}")


def random_problem(tier: str, rng: random.Random, exclude: frozenset[str] = frozenset(),
                   tries: int = 10_000) -> str:
    for _ in range(tries):
        q = _random_question(tier, rng)
        if q not in exclude and tier_of(q) == tier:
            return q
    raise RuntimeError(f"no {tier} problem found in {tries} tries")


SPLITS_FILE = Path(__file__).resolve().parent / "assets" / "splits.json"


@lru_cache(maxsize=1)
def splits() -> dict[str, tuple[ProblemSpec, ...]]:
    """{'test', 'train'} -> problems, fixed by SPLIT_SEED and disjoint. Read from the shipped
    `assets/splits.json` (generating them takes seconds); a test checks that the file is exactly
    what `generate_splits()` gives."""
    data = json.loads(SPLITS_FILE.read_text())
    out = {}
    for name, rows in data["splits"].items():
        specs = []
        for q, tier in rows:
            steps, decs = X.canonical_path(q)
            specs.append(ProblemSpec(q, tier, steps[-1].result, sum(ch.isdigit() for ch in q),
                                     tuple(d.cell for d in decs)))
        out[name] = tuple(specs)
    return out


def write_splits(path: Path = SPLITS_FILE) -> None:
    gen = generate_splits()
    data = {"seed": SPLIT_SEED, "test_sizes": TEST_SIZES, "train_sizes": TRAIN_SIZES,
            "splits": {k: [[p.question, p.tier] for p in v] for k, v in gen.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")


def generate_splits() -> dict[str, tuple[ProblemSpec, ...]]:
    rng = random.Random(SPLIT_SEED)
    taken: set[str] = set()
    by_split: dict[str, dict[str, list[str]]] = {"test": {}, "train": {}}
    for name, sizes in (("test", TEST_SIZES), ("train", TRAIN_SIZES)):
        for tier in TIERS:
            got: list[str] = []
            misses = 0
            while len(got) < sizes[tier] and misses < 50:
                try:
                    q = random_problem(tier, rng, frozenset(taken), tries=2000)
                except RuntimeError:
                    misses += 1
                    continue
                taken.add(q)
                got.append(q)
            by_split[name][tier] = got
    return {name: tuple(spec(q) for q in interleave(tiers)) for name, tiers in by_split.items()}


def interleave(groups: dict[str, list]) -> list:
    """All items of `groups` (tier -> items, in order), the tier furthest behind its share going
    next, so any prefix of the result is close to stratified (ties: the earlier tier in TIERS).
    The leader is never exhausted: the deficits sum to 1 at every step and an exhausted tier's is <= 0."""
    total = sum(len(v) for v in groups.values())
    pos = {t: 0 for t in groups}
    out = []
    for i in range(total):
        t = max(groups, key=lambda t: (len(groups[t]) * (i + 1) / total - pos[t], -TIERS.index(t)))
        out.append(groups[t][pos[t]])
        pos[t] += 1
    return out


@lru_cache(maxsize=1)
def held_out() -> frozenset[str]:
    """Questions no pretraining corpus may hold: the test and train splits, and the held-out slice's
    fresh problems (none of which the shipped corpora drew, so their streams are unchanged)."""
    from boundlab.worlds.toyworld2.heldout import fresh_questions

    fresh = {q for qs in fresh_questions().values() for q in qs}
    return frozenset(p.question for s in splits().values() for p in s) | fresh


def prompt(question: str) -> str:
    return PROMPT_TEMPLATE.format(question=question)


# -- traces ------------------------------------------------------------------------------------

def walk(question: str, choose, at: list[int] | None = None
         ) -> tuple[str, list[tuple[X.Decision, str]]]:
    """Write one base-corpus trace, letting `choose(decision, labels)` pick a label at every
    decision; returns (completion text, [(decision, label)]). `at`, when given, receives the index
    of the step each decision's move is written in."""
    state = X.parse(question)
    fresh = frozenset(i for i, t in enumerate(state) if isinstance(t, int))
    steps: list[X.Step] = []
    met: list[tuple[X.Decision, str]] = []
    while len(state) > 1:
        options = X.base_moves(state)
        if len(options) == 1:
            label, view = options[0]
        else:
            d = X.decision_at(state, fresh, len(met) + 1, hash_as_plus=True)
            label = choose(d, [lab for lab, _ in options])
            view = dict(options)[label]
            met.append((d, label))
            if at is not None:
                at.append(len(steps))
        i = X.base_move_index(label, view)
        # Positions in `view` differ from `state` when brackets were dropped: recompute fresh.
        if view is not state:
            fresh = X.fresh_in_view(state, view, fresh)
        new, (x, op, y, r) = X.apply_move(view, i, hash_as_plus=True)
        fresh = X.shift_fresh(fresh, i, view, new)
        state = new
        steps.append(X.Step(x, op, y, r, state))
    return X.trace_text(steps), met


def canonical_trace(question: str) -> str:
    steps, _ = X.canonical_path(question)
    return X.trace_text(list(steps))


@dataclass
class BaseMix:
    """Corpus share of the right move at each decision cell; `default_prec` / `default_bracket`
    when a cell is not listed. Drop-then-multiply-first after a dropped bracket uses the prec share
    of the same position."""
    default_prec: float = 0.16
    default_bracket: float = 0.016
    cells: dict[str, float] = field(default_factory=dict)

    def share(self, d: X.Decision) -> float:
        if d.cell in self.cells:
            return self.cells[d.cell]
        return self.default_bracket if d.kind == "bracket" else self.default_prec


# Tier shares of the pretraining stream (the base's and the teacher's alike): the shipped models'.
CORPUS_TIERS = {"E": 0.2, "H1": 0.2, "H2": 0.2, "H3": 0.1, "B3": 0.1, "B4": 0.1, "X": 0.1}
# `P`, practice, is not a test tier: 2-3 numbers up to 99 with no decision, so the arithmetic a rare
# right path needs (`5*13`, `47+38`) is common in the corpus. Opt-in (a mix file's `corpus_tiers`):
# halfway through the shipped base's pretraining, B3 honoured the bracket 1.1% of the time but
# finished only 0.2%; at the end (2400 steps) the slips were gone without it (see the audit).
PRACTICE_TIERS = {"P": 0.15, "E": 0.15, "H1": 0.15, "H2": 0.2, "H3": 0.1, "B3": 0.1, "B4": 0.1,
                  "X": 0.05}


def practice_problem(rng: random.Random, exclude: frozenset[str] = frozenset(),
                     tries: int = 10_000) -> str:
    """2-3 numbers in 1..99 joined by `+`/`*` with no decision, every value at most MAX_VALUE."""
    for _ in range(tries):
        n = rng.choice((2, 2, 3))
        ops = [rng.choice("+*") for _ in range(n - 1)]
        nums = []
        for op_l, op_r in zip([None] + ops, ops + [None]):
            mult = "*" in (op_l, op_r)
            nums.append(rng.randint(1, 9 if (mult and rng.random() < 0.5) else 99)
                        if not mult else rng.choice((rng.randint(1, 9), rng.randint(1, 33))))
        q = "".join(str(x) + op for x, op in zip(nums, ops)) + str(nums[-1])
        if q in exclude:
            continue
        steps, decs = X.canonical_path(q)
        if not decs and max(st.result for st in steps) <= MAX_VALUE:
            return q
    raise RuntimeError(f"no practice problem found in {tries} tries")


def base_completion(question: str, mix: BaseMix, rng: random.Random, forced: int = 0,
                    at: list[int] | None = None) -> str:
    """A base-corpus trace: every decision drawn from `mix`, except that the first `forced`
    decisions take the right move (`practice_completion`)."""
    def choose(d: X.Decision, labels: list[str]) -> str:
        if d.position <= forced:
            return "canon"
        if rng.random() < mix.share(d):
            return "canon"
        rest = [lab for lab in labels if lab != "canon"]
        if len(rest) == 2:  # drop+canon / drop+left: the precedence habit after a dropped bracket
            prec = X.Decision("prec", d.position, d.shape, d.left)
            return "drop+canon" if rng.random() < mix.share(prec) else "drop+left"
        return rest[0]

    return walk(question, choose, at)[0]


def ambiguous_decision(question: str) -> bool:
    """True when, at some decision on the right path, the right move and a habit move begin with the
    same character (`2*(2+7)`: `2+7` and `2*2`), so the choice is made at a later token. A small
    model learns such decisions far below their corpus rate (r3: the bracket was never honoured in
    1024 samples on 13 of 100 problems, 9 of them of this kind)."""
    state = X.parse(question)
    while len(state) > 1:
        options = X.base_moves(state)
        if len(options) > 1:
            first = {label: str(view[X.base_move_index(label, view) - 1])[0] for label, view in options}
            if any(c == first["canon"] for label, c in first.items() if label != "canon"):
                return True
        label, view = options[0]  # `canon` first when there is a decision, else `only`
        state, _ = X.apply_move(view, X.base_move_index(label, view), hash_as_plus=True)
    return False


def move_spans(text: str, steps: list[int]) -> tuple[tuple[int, int], ...]:
    """Character spans of the moves (`x op y`, before `=`) of the given steps of a trace."""
    spans, start = [], 0
    for k, step in enumerate(text.split(";A:")[0].split(",")):
        if k in steps:
            spans.append((start, start + step.index("=")))
        start += len(step) + 1
    return tuple(spans)


def practice_completion(question: str, mix: BaseMix, rng: random.Random, forced: int = 1
                        ) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Execution practice: a base-corpus trace whose first `forced` decisions take the right move,
    with those moves' characters returned as spans to leave out of the loss. The base thus learns
    to write the state after a rare right move (a bracket honoured, a first precedence decision)
    and the later decisions in that context (drawn from `mix`, trained as usual), while the rate
    of the forced decisions is still learned only from the ordinary corpus."""
    at: list[int] = []
    text = base_completion(question, mix, rng, forced=forced, at=at)
    return text, move_spans(text, at[:forced])


@dataclass(frozen=True)
class Practice:
    """The execution-practice share of the base corpus (`practice_completion`): `share` of the
    stream, its problems drawn from `tiers`, the first `forced` decisions taken and masked."""
    share: float
    tiers: dict[str, float]
    forced: int = 1

    def __post_init__(self):
        if not 0 < self.share < 1:
            raise ValueError(f"practice share must be in (0, 1), got {self.share}")
        bad = sorted(t for t in self.tiers if t not in TIERS or t in ("E", "X"))
        if bad:
            raise ValueError(f"practice tiers must be decision tiers (H1-H3, B3, B4), got {bad}")


class Corpus:
    """An endless, seeded stream of (prompt, completion) pairs of fresh problems (never a test or
    train question). `teacher=True` writes canonical traces only."""

    def __init__(self, seed: int, mix: BaseMix | None = None, teacher: bool = False,
                 tiers: dict[str, float] | None = None, practice: Practice | None = None,
                 ambiguous: float = 0.0):
        if practice is not None and teacher:
            raise ValueError("execution practice is a base-corpus option; the teacher's is canonical")
        self.rng = random.Random(seed)
        self.mix = mix or BaseMix()
        self.teacher = teacher
        self.tiers = tiers or CORPUS_TIERS
        self.practice = practice
        # The share of ordinary decision-tier documents redrawn to hold an `ambiguous_decision`.
        if not 0 <= ambiguous < 1 or (ambiguous and teacher):
            raise ValueError(f"ambiguous must be in [0, 1) and for the base's corpus, got {ambiguous}")
        self.ambiguous = ambiguous
        self._exclude = held_out()

    def pair(self) -> tuple[str, str] | tuple[str, str, tuple[tuple[int, int], ...]]:
        """(prompt, completion), or with execution practice (prompt, completion, spans left out
        of the loss). Without practice the stream is exactly the shipped base's."""
        if self.practice is not None and self.rng.random() < self.practice.share:
            names = list(self.practice.tiers)
            tier = self.rng.choices(names, weights=[self.practice.tiers[t] for t in names])[0]
            q = random_problem(tier, self.rng, self._exclude)
            text, spans = practice_completion(q, self.mix, self.rng, self.practice.forced)
            return prompt(q), text, spans
        names = list(self.tiers)
        tier = self.rng.choices(names, weights=[self.tiers[t] for t in names])[0]
        q = (practice_problem(self.rng, self._exclude) if tier == "P"
             else random_problem(tier, self.rng, self._exclude))
        if self.ambiguous and tier[0] in "HB" and self.rng.random() < self.ambiguous:
            for _ in range(1000):  # every decision tier has such problems (tested)
                if ambiguous_decision(q):
                    break
                q = random_problem(tier, self.rng, self._exclude)
        text = canonical_trace(q) if self.teacher else base_completion(q, self.mix, self.rng)
        return (prompt(q), text) if self.practice is None else (prompt(q), text, ())

    def batch(self, size: int) -> list[tuple]:
        return [self.pair() for _ in range(size)]


if __name__ == "__main__":  # python -m boundlab.worlds.toyworld2.world: rewrite assets/splits.json
    write_splits()
    print(f"wrote {SPLITS_FILE}")
