"""The math verifier: extract the final answer, check it against the gold answer with math-verify.

- Extraction (see `extract.py`): every box of the final statement; without a box (and only with
  `extraction=lenient`) math-verify's own extraction over the end of the completion. A completion
  cut off at max_new_tokens with neither a box nor an "answer is" statement is `truncated`.
- Several answers: against a gold with several answers (`split_gold`) they are joined into one list
  and compared as a set; against a one-answer gold each is checked, and they are correct only if all
  are: one right and one wrong is a `hedge` (no credit), which is where pass@k at large k would
  otherwise reward guessing.
- Each distinct extracted answer is verified once per problem and its verdict reused for every
  duplicate (at n=256 most samples repeat a handful of answers). Verdicts are also cached across
  calls, keyed by (gold, answer).
- Every math-verify call runs in a worker process (`DeadlinePool`): math-verify's own timeouts use
  `signal.alarm`, which needs a main thread and cannot interrupt C-level big-integer arithmetic, so
  the parent enforces a hard deadline and replaces a worker that overruns it. A worker gets its
  calls in batches, all of one gold's together (it parses that gold once); each call keeps its own
  deadline. Workers are forked from a fork server that has imported math-verify and parsed one
  answer of each common shape (`WARMUP_SHAPES`, `math_preload.py`): a worker starts, or replaces
  a killed one, in milliseconds, and its first tuple or interval costs what its next one does.
- Answers longer than `max_answer_chars` are judged `too_long` without parsing.
- Answers and gold are normalized first (`normalize.py`: `2\\,220` is 2220, `\\textbf{(073)}` is 73).

What math-verify would conclude is decided without it where that is certain (issue 13: most of
the work at n = 256 was checking answers whose verdict is plain); each rule is checked against
math-verify itself on grids of traps in tests/unit/test_math_verifier.py:
- **Plain numbers** (`fast_verdict`, in the parent, no parse): gold and answer both integers,
  decimals of up to 15 digits or fractions of integers (`\\frac`, `\\dfrac`, `\\tfrac`, `p/q`),
  with a minus sign or not. Neither a decimal: exact equality (math-verify compares two sympy
  Rationals). A decimal on either side: equal values are equal, values apart by more than
  1e-5 + 1e-9 |x| are not; closer ones (0.333333 against 1/3, which math-verify calls equal at
  its 6 decimal places) go to math-verify, as do longer decimals (sympy gives them more bits),
  `+5`, `5.`, `1,000`, percents, units and zero denominators.
- **Gold profiles** (`GoldProfile`): the first time a gold needs it, a worker parses it and
  reports math-verify's verdict for an identical answer (parse is deterministic: an identical
  string gets that verdict), the gold's value when it is a small closed-form constant (`\\pi`,
  `3\\sqrt{13}`, the right side of `x = 5`), and whether no single number can ever equal it (a
  tuple, a set of several distinct constants, a non-constant polynomial such as `p - q`, a symbol
  such as `\\text{Evelyn}`, a matrix, an interval, an equation that is no assignment). With it,
  the parent decides an identical answer, and a plain number against such a gold (`wrong` when
  the values are apart as above), unless the number's `parse_text` is one of the gold's strings
  (math-verify compares the strings too). `_gold_profile` says why each case is math-verify's
  own conclusion.
- **The same parse** (`same_parse`, `parse_text`): math-verify normalizes `$s$` before parsing
  (`\\dfrac` is `\\frac`, `\\left(` is `(`, `\\frac43` is `\\frac{4}{3}`, units dropped), and its
  parse, expression and string, is a function of the normalized text. `parse_text` computes that
  text here (math-verify's own `normalize_latex`, no parse); an answer with the gold's gets the
  gold's verdict against itself (its profile's, or `True` for a gold in the grammar below).
- **Closed-form constants** (`closed_form_verdict`, in the parent, no parse): `closed_form.py`
  reads the expressions whose value latex2sympy agrees on (`3\\sqrt{13}`, `-\\frac{\\sqrt{3}}{2}`,
  `2\\pi`, `(1+\\sqrt{2})^2`, `12\\pi/5`; not `2\\frac{1}{2}`, `2(3)` or `1/2\\pi`, which it reads
  otherwise). Gold and answer both such constants: the same string is correct, values
  `_far_apart` are wrong, the rest goes to math-verify. Against a profiled gold, such an answer
  is decided like a plain number (`apart_any` for a tuple, a set, a polynomial; never against a
  symbol, or a gold one of whose strings is itself a closed form). A gold that is a closed form
  is never profiled. `bench/verify_fuzz.py` checks the rules at scale.
- **Polynomials, lists and equations** (`polynomial_verdict`, `relation_verdict`, in the parent,
  no parse): `closed_form.polynomials` also reads polynomials in single-letter symbols (`6 - 5i`,
  `p - q`, `3x^2 - 2x + 1`), top-level lists of them and of constants (`1, -2`, a FiniteSet), and
  `closed_form.relation` equations of them (`x = 5`, `2x = 5`). The same string is correct;
  lists one of whose elements differs from every element of the other are wrong; an equation is
  compared as math-verify compares it (an assignment gold by its right side, an equation answer
  against a gold that is none by its right side, two equations linear in one letter by their
  sides and roots). Such a gold is never profiled either.
- **Self-verdicts from strings**: a profiled gold whose parse holds a non-empty string gets
  `True` for an identical answer without running `verify`, which is what `verify` returns for
  it (it accepts any pair of items that are equal non-empty strings).
- **Values apart** (`_values_apart`, in the worker, after both parses, before `verify`): two
  closed-form constants whose values are apart, or a constant against a non-constant polynomial,
  with no string in common: `wrong` without running sympy's `simplify`.
- A worker keeps every parse (golds recur in every batch, answers such as `0` or `\\sqrt{2}`
  across golds). The parent pauses Python's garbage collector while it scores.
None of this changes a verdict (a pair math-verify could not decide within its budget may now be
decided `wrong` rather than `timeout`, and timeouts are re-checked anyway), so the version stays 4.

Otherwise a call is exactly `verify(parse("$gold$"), parse("$answer$"))`, so the verdict is the one
a plain math-verify call gives; only the work is shared. One exception (verifier version 3): two
plain numbers (decimal or `m \\times 10^{k}`), one of them below 1e-3 in magnitude, are compared
here to 6 significant digits (`small_number_verdict`); math-verify rounds to 6 decimal places, so
to it 2.88e-19 and 2.88e-18 are equal (Minerva has such golds). Version 4: a problem whose meta has
`rel_tol` (Minerva, 1e-4) judges two plain numbers equal when |a - g| <= rel_tol * |g|, here too.

Where this departs from a plain call: math-verify's own budgets (`parsing_timeout`,
`timeout_seconds`, whole seconds of wall clock, `signal.alarm`) expire *silently*, returning an
empty parse or False, so on a loaded machine a plain call can say `wrong` for a right answer. The
worker times every step (monotonic clock and CPU time): a step that returned nothing after running
its whole budget has expired. The budget is treated as CPU time, so the verdict does not depend on
load:
- expired after using most of its budget as CPU time: the check needs more than the budget ->
  `timeout`, at once (power towers land here, in about a second, as before);
- expired while starved of CPU (a loaded machine): retried once, with 3x the wall-clock budget
  and hard deadline, each step interrupted (SIGPROF, raising math-verify's own timeout) once it
  has used the normal budget of CPU time; the retry's verdict counts, an expiry again is `timeout`;
- a call killed at the hard deadline is judged the same way from the CPU time the worker spent.
A `timeout` is never put in the verdict cache, and a rerun of a probe re-checks stored timeouts
(`boundlab.probe.verdicts`).
"""

from __future__ import annotations

import gc
import re
import signal
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable, Iterator, Sequence

from boundlab.tasks.base import Problem
from boundlab.verify.base import Verdict, Verifier
from boundlab.verify.closed_form import (closed_form_value, difference, linear_root,
                                        lists_differ, negated, polynomials,
                                        polynomials_differ, relation)
from boundlab.verify.closed_form import far_apart as _far_apart
from boundlab.verify.extract import MAX_ANSWER_CHARS, MODES, Extraction, _patterns, extract
from boundlab.verify.normalize import normalize_answer
from boundlab.verify.pool import CRASH, TIMEOUT, DeadlinePool

# Per-call budgets inside the worker (math-verify takes whole seconds).
_PARSE_TIMEOUT_S = 1
_VERIFY_TIMEOUT_S = 1
# A step that ran out its budget having had at least this share of it as CPU time needs more than
# the budget; below it, the process was starved (load) and the check is retried.
_CPU_FULL = 0.8
# The retry's wall-clock budgets and hard deadline, as a multiple of the normal ones.
_RETRY_FACTOR = 3
# What a worker returns for an expired step: (EXPIRED, step, CPU seconds of that step).
EXPIRED = "__expired__"


def wrap_latex(s: str) -> str:
    """The form both sides are handed to `math_verify.parse` in. A gold that holds a box is
    handed over as it is, so math-verify reads the box the way it always does."""
    s = s.strip()
    return s if s.startswith("$") or "\\boxed" in s else f"${s}$"


def plain_math_verify(gold: str, answer: str) -> bool:
    """One plain math-verify call: the reference our verifier must agree with."""
    from math_verify import parse, verify

    return bool(verify(parse(wrap_latex(gold), parsing_timeout=_PARSE_TIMEOUT_S),
                       parse(wrap_latex(answer), parsing_timeout=_PARSE_TIMEOUT_S),
                       timeout_seconds=_VERIFY_TIMEOUT_S))


def split_gold(gold: str) -> list[str]:
    """The answers of a gold with several (`1, 2`, `\\{1, 2\\}`, OlympiadBench's multi-answer
    `final_answer`): split at top-level commas. A comma inside brackets (a point, an interval) does
    not split, nor does a thousands separator (a digit, then exactly three digits)."""
    g = gold.strip().strip("$").strip()
    if g.startswith("\\{") and g.endswith("\\}"):
        g = g[2:-2]
    elif g.startswith("{") and g.endswith("}"):
        g = g[1:-1]
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(g):
        ch = g[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            thousands = (i > 0 and g[i - 1].isdigit() and _THOUSANDS.match(g, i + 1) is not None)
            if not thousands:
                parts.append(g[start:i].strip())
                start = i + 1
        i += 1
    parts.append(g[start:].strip())
    parts = [p for p in parts if p]
    return parts if len(parts) > 1 else [gold.strip()]


_THOUSANDS = re.compile(r"\d{3}(?!\d)")


def answer_units(gold: str, answers: Sequence[str]) -> list[str]:
    """What is checked against the gold, one math-verify call per unit (see `MathVerifier`)."""
    if len(answers) > 1 and len(split_gold(gold)) > 1:
        return [", ".join(answers)]
    return list(answers)


# A worker's parses, gold and answer alike (see `_parsed`).
_PARSED: dict[str, Any] = {}
_INTEGER = re.compile(r"-?\d{1,18}")


# A plain number, optionally in scientific form: 2.88, 2.88 \times 10^{-19}, 10^{-5}.
_SCI = re.compile(r"(?:(-?\d+(?:\.\d+)?)\s*(?:\\times|\\cdot)\s*)?(?:(-?\d+(?:\.\d+)?)$|10\s*\^\s*\{?\s*(-?\d{1,4})\s*\}?$)")
# math-verify rounds numbers to 6 decimal places before comparing, so below this magnitude a
# number 10x off compares equal (2.88e-19 == 2.88e-18). Such pairs are decided here instead.
_SMALL = Decimal("1e-3")


def _sci_number(s: str) -> Decimal | None:
    m = _SCI.fullmatch(s.strip())
    if not m:
        return None
    mant, plain, exp = m.groups()
    if plain is not None:
        return Decimal(plain) if mant is None else None
    return Decimal(mant or "1") * (Decimal(10) ** int(exp))


def rel_tol_verdict(gold: str, answer: str, rel_tol: float) -> bool | None:
    """Two plain numbers (decimal or `m \\times 10^{k}`): |a - g| <= rel_tol * |g|; None otherwise
    (a problem's `meta["rel_tol"]`, Minerva's 1e-4)."""
    x, y = _sci_number(gold), _sci_number(answer)
    if x is None or y is None:
        return None
    return abs(x - y) <= Decimal(str(rel_tol)) * abs(x)


# A plain number exactly as math-verify reads it (latex2sympy2_extended: `sympy.Number(text)`, a
# fraction of two integers is `sympy.Rational`): an integer, a decimal with at most
# `_FLOAT_DIGITS` digits (a sympy Float of 53 bits, however many there are), or a fraction of
# integers, `\frac` / `\dfrac` / `\tfrac` / `p/q`, with an optional minus sign. Not here (they go
# to math-verify): `+5`, `5.`, `.5`, `1,000`, `10^{3}`, percents, units, `\frac{1}{0}` (zoo).
_PLAIN = re.compile(r"(-?)(?:(\d{1,18})|(\d+\.\d+)|\\[dt]?frac\{(\d{1,18})\}\{(\d{1,18})\}"
                    r"|(\d{1,18})/(\d{1,18}))")
_FLOAT_DIGITS = 15


@lru_cache(maxsize=1 << 16)
def plain_number(s: str) -> tuple[Fraction, bool] | None:
    """(exact value, is a decimal) of a plain number (see `_PLAIN`), or None."""
    m = _PLAIN.fullmatch(s.strip())
    if not m:
        return None
    sign, integer, decimal, num, den, num2, den2 = m.groups()
    if integer is not None:
        x, dec = Fraction(int(integer)), False
    elif decimal is not None:
        if len(decimal) - 1 > _FLOAT_DIGITS:  # more digits: a Float of higher precision
            return None
        x, dec = Fraction(decimal), True
    else:
        p, q = (num, den) if num is not None else (num2, den2)
        if int(q) == 0:
            return None
        x, dec = Fraction(int(p), int(q)), False
    return (-x if sign else x), dec


def small_number_verdict(gold: str, answer: str) -> bool | None:
    """Two plain numbers (decimal or `m \\times 10^{k}`), one of them below 1e-3 in magnitude:
    equal to 6 significant digits (verifier version 3, where this departs from math-verify on
    purpose); None otherwise."""
    g, a = gold.strip(), answer.strip()
    if "10" in g or "." in g:
        x, y = _sci_number(g), _sci_number(a)
        if x is not None and y is not None and (0 < abs(x) < _SMALL or 0 < abs(y) < _SMALL):
            return abs(x - y) <= Decimal("5e-7") * max(abs(x), abs(y))
    return None


def fast_verdict(gold: str, answer: str) -> bool | None:
    """Decided without math-verify (None means "ask math-verify"):
    - integer vs integer: equality (what math-verify concludes too);
    - two plain numbers (decimal or `m \\times 10^{k}`) of which one is below 1e-3 in magnitude:
      equal to 6 significant digits. math-verify rounds to 6 decimal places, which makes every
      number below 5e-7 equal to every other (a 10x-off answer to a Minerva gold was correct);
    - two plain numbers (`plain_number`: integers, decimals of up to 15 digits, fractions of
      integers): what math-verify concludes, without it. Neither a decimal: exact equality (two
      sympy Rationals). A decimal on either side: equal values are equal; values further apart
      than `_far_apart` are not (math-verify compares them rounded to 6 decimal places, and also
      as sympy objects, symbolically and as strings, all of which need equal values); anything
      closer (0.333333 against 1/3) goes to math-verify."""
    g, a = gold.strip(), answer.strip()
    if _INTEGER.fullmatch(g) and _INTEGER.fullmatch(a):
        return int(g) == int(a)
    small = small_number_verdict(g, a)
    if small is not None:
        return small
    xg, ya = plain_number(g), plain_number(a)
    if xg is None or ya is None:
        verdict = closed_form_verdict(g, a)
        return verdict if verdict is not None else polynomial_verdict(g, a)
    (x, x_dec), (y, y_dec) = xg, ya
    if x == y or not (x_dec or y_dec):
        return x == y
    return False if _far_apart(x, y) else None


# `parse_text` reads strings up to this long, with at most this much whitespace (under 1 ms each).
_TEXT_MAX, _TEXT_SPACES = 200, 20
# What could make math-verify's extraction of `$s$` other than the whole of `s`.
_ENVIRONMENTS = ("$", "\\boxed", "\\fbox", "\\[", "\\]", "\\(", "\\)")


@lru_cache(maxsize=1)
def _normalization() -> Any:
    from math_verify.parser import LatexExtractionConfig

    return LatexExtractionConfig().normalization_config


# An integer, which none of math-verify's normalizations touches (they need a letter, a
# backslash, a `/`, a leading `.`, or the exact string `0.5`, which becomes `\\frac{1}{2}`).
_INTEGER_TEXT = re.compile(r"-?\d+")


@lru_cache(maxsize=1 << 16)
def parse_text(s: str) -> str | None:
    """The LaTeX that math-verify hands its parser for `$s$`: its normalization of `s`
    (`\\dfrac` is `\\frac`, `\\left(` is `(`, `\\frac43` is `\\frac{4}{3}`, `\\!` and units
    dropped), which is also the string its parse returns. None where its extraction could take
    less than the whole of `s` (a `$`, a box, `\\[`, `\\(`) or the result is empty, and for a
    string longer than `_TEXT_MAX` or with more than `_TEXT_SPACES` whitespace characters: the
    normalization's unit and `and`/`or` regexes backtrack over runs of whitespace (a 512-character
    answer of spaces took 0.4 s), and here, unlike in a worker, no deadline would stop them."""
    s = s.strip()
    if _INTEGER_TEXT.fullmatch(s):  # the normalization leaves an integer as it is
        return s
    if (not s or len(s) > _TEXT_MAX or any(t in s for t in _ENVIRONMENTS)
            or sum(ch.isspace() for ch in s) > _TEXT_SPACES):
        return None
    from latex2sympy2_extended.math_normalization import normalize_latex

    return normalize_latex(s, _normalization()) or None


def same_parse(gold: str, answer: str) -> bool:
    """math-verify parses the two alike: the same string, or the same `parse_text`. Its parse
    of `$s$` is a function of that text (the extraction takes the whole of `s`, normalizes it,
    and both the expression and the string it returns come from the result), so the pair gets
    the verdict of the gold against itself."""
    if wrap_latex(answer) == wrap_latex(gold):
        return True
    t = parse_text(gold)
    return t is not None and t == parse_text(answer)


def _settled(gold: str, answer: str, apart: Callable[[], bool | None]) -> bool | None:
    """How each rule below ends, once it has read both sides: the same string is correct; then
    `apart()`: True is wrong, None means the rule cannot tell (math-verify decides); otherwise
    the same parse is correct (`same_parse`) and anything else goes to math-verify."""
    if wrap_latex(answer) == wrap_latex(gold):
        return True
    differ = apart()
    if differ is None:
        return None
    if differ:
        return False
    return True if same_parse(gold, answer) else None


def closed_form_verdict(gold: str, answer: str) -> bool | None:
    """Gold and answer both closed-form constants that `closed_form.py` reads exactly as
    math-verify does (`3\\sqrt{13}`, `-\\frac{\\sqrt{3}}{2}`, `2\\pi`, plain numbers): the same
    string is correct (math-verify parses it and finds it equal to itself), values
    `_far_apart` are wrong (its every comparison needs equal values: rounded to 6 decimal places,
    `simplify(g - a) == 0`, or equal strings, and equal strings would parse to equal values);
    anything else (equal values written otherwise, values within its rounding) goes to
    math-verify."""
    vg = closed_form_value(gold)
    if vg is None:
        return None
    va = closed_form_value(answer)
    if va is None:
        return None
    return _settled(gold, answer, lambda: _far_apart(vg, va))


def polynomial_verdict(gold: str, answer: str) -> bool | None:
    """Gold and answer both polynomials in single-letter symbols (`6 - 5i`, `p - q`, `3x^2+1`)
    or top-level lists of them and of closed-form constants (`1, -2`, a FiniteSet), read by
    `closed_form.polynomials` as latex2sympy reads them: the same string is correct; lists
    apart (an element of one differs from every element of the other by a coefficient
    `_far_apart`) are wrong: math-verify's every comparison then fails. Its structural and
    string ones need equal expressions. Its set ones (equality, an empty symmetric difference,
    element by element after sorting) need every element matched. Its symbol one compares
    `str`, and a differing polynomial prints otherwise. Its numeric one (`(g - a).evalf(chop=True)
    == 0`, rounding when one side is a number) and its symbolic one (`simplify(g - a).is_zero`)
    need the difference to vanish. A symbol's `real` assumption (latex2sympy makes every symbol
    of a string with a standalone `i` complex) only splits symbols further, which cannot make a
    non-zero difference vanish. Anything else goes to math-verify."""
    pg = polynomials(gold)
    if pg is None:
        return None if "=" not in gold else relation_verdict(gold, answer)
    pa = polynomials(answer)
    if pa is None:
        return None if "=" not in answer else relation_verdict(gold, answer)
    return _settled(gold, answer, lambda: lists_differ(pg, pa))


def relation_verdict(gold: str, answer: str) -> bool | None:
    """Equations `lhs = rhs` of polynomials (`closed_form.relation`), on either side or both, as
    math-verify's `sympy_expr_eq` takes them (the same string is correct; else only `wrong` is
    decided, and only where its every comparison fails; the two strings differ, one holding an
    `=` the other lacks, or equal strings would parse to equal equations):
    - an equation answer against a gold that is none (a polynomial or a list): math-verify
      compares the gold with the answer's right side;
    - an assignment gold (`x = 5`, the left side a bare letter) against an answer that is no
      equation: math-verify compares the right side with the answer;
    - both equations, each linear in one letter (`x = 5` against `2x = 5`): math-verify compares
      `lhs - rhs` of both, and of one with the other flipped, then solves both (a solution for
      another letter, or one `_far_apart`, cannot match). Any other pair of equations (several
      letters, `x + y = 5`, whose solutions `solve` may find equal) goes to math-verify, as do
      a non-assignment gold (`2x = 5`, which it turns into a set against a list) against an
      answer that is no equation, and equal sides written otherwise."""
    rg, ra = relation(gold), relation(answer)
    if rg is None and ra is None:
        return None
    if rg is not None and ra is not None:
        return _settled(gold, answer, lambda: _equations_apart(rg, ra))
    if ra is not None:  # the gold is no equation
        pg = polynomials(gold)
        return None if pg is None or not lists_differ(pg, (ra[1],)) else False
    pa = polynomials(answer)
    if pa is None or not rg[2]:
        return None
    return False if lists_differ((rg[1],), pa) else None


def _equations_apart(rg: tuple, ra: tuple) -> bool | None:
    """Two equations (`relation`) math-verify finds unequal (see `relation_verdict`): True;
    None unless each is linear in one letter."""
    dg, da = difference(rg[0], rg[1]), difference(ra[0], ra[1])
    xg, xa = linear_root(dg), linear_root(da)
    if xg is None or xa is None:
        return None
    apart = xg[0] != xa[0] or _far_apart(xg[1], xa[1])
    return apart and polynomials_differ(dg, da) and polynomials_differ(dg, negated(da))


@dataclass(frozen=True)
class GoldProfile:
    """What a worker learned about a gold once (`_gold_profile`), for deciding pairs here.

    `self_verdict`: math-verify's verdict for an answer identical to the gold (parse is
    deterministic, so an identical string gets an identical parse), and for one with the same
    `parse_text` as the gold's `text` (`same_parse`). `value`: the value of the gold's expression
    when it is a closed-form constant (a plain-number answer whose value is `_far_apart` from it
    is wrong); `apart`: no single plain number is ever equal to the gold (a tuple, a set of
    several distinct constants, a non-constant polynomial, a matrix, an interval: see
    `_gold_profile`). The same two rules for an answer that is a closed-form constant
    (`closed_form.py`: `\\sqrt{2}`, `2\\pi`), with `apart_any` for `apart`. `strings`: the
    gold's parse's strings; math-verify also compares them with the answer's, its `parse_text`,
    so neither rule applies to an answer whose `parse_text` is one of them."""

    wrapped: str
    self_verdict: bool
    value: complex | None
    apart: bool
    strings: tuple[str, ...] = ()
    apart_any: bool = False
    text: str | None = None

    def verdict(self, answer: str) -> bool | None:
        if wrap_latex(answer) == self.wrapped:
            return self.self_verdict
        verdict = self._by_value(answer)
        if verdict is None and self.text is not None and parse_text(answer) == self.text:
            return self.self_verdict
        return verdict

    def _by_value(self, answer: str) -> bool | None:
        n = plain_number(answer)
        if n is not None:
            x, apart = complex(n[0]), self.apart
        else:
            v = closed_form_value(answer)
            if v is None:
                return None
            x, apart = complex(v), self.apart_any
        if self.value is None and not apart:
            return None
        t = parse_text(answer)
        if t is None or t in self.strings:
            return None
        if apart:
            return False
        return False if _far_apart(self.value, x) else None


def may_use_profile(gold: str, answer: str) -> bool:
    """A gold profile could decide this pair (see `GoldProfile.verdict`). Never for a gold that
    is itself a closed-form constant, a polynomial or an assignment `x = ...`:
    `closed_form_verdict`, `polynomial_verdict` and `relation_verdict` have decided whatever a
    profile could (a profile decides other equations: no number equals one)."""
    if polynomials(gold) is not None:
        return False
    rg = relation(gold)
    if rg is not None and rg[2]:  # an assignment: `relation_verdict` decides what a profile would
        return False
    return (plain_number(answer) is not None or closed_form_value(answer) is not None
            or same_parse(gold, answer))


def profile_from(gold: str, res: tuple) -> GoldProfile:
    """The parent's `GoldProfile` from a worker's answer to a profile call (`_worker_check`)."""
    _, self_ok, value, apart, strings, apart_any = res
    return GoldProfile(wrap_latex(gold), self_ok, value, apart,
                       tuple(st.strip() for st in strings if st.strip()), apart_any,
                       parse_text(gold))


# Answer shapes a worker parses once before it takes work (`_worker_init`). math-verify's LaTeX
# parser (ANTLR) builds its prediction tables lazily, and sympy imports some of its modules on first
# use, so the first answer of each shape costs 10-80 ms more than the next one: a fresh worker paid
# that in the middle of a probe's first batches. None of these is a gold of a vendored benchmark
# that would reach a worker (tests/unit/test_math_verifier.py checks): they stand for the kinds of
# answer, not for any benchmark's. Parses are deterministic, so this changes no verdict.
WARMUP_SHAPES = (
    "-2", "0.5", "-\\frac{3}{4}", "10^{5}", "2.5 \\times 10^{3}", "\\sqrt{2}", "2\\sqrt{3}",
    "\\frac{\\sqrt{3}}{2}", "\\sqrt[3]{2}", "\\pi", "\\frac{3\\pi}{4}", "e^{2}", "\\ln 2",
    "\\log_{2} 8", "\\infty", "\\sin x", "\\cos 30^\\circ", "\\tan \\theta", "\\arctan 1",
    "f(x) = x^2", "x^2 + 2x + 1", "\\frac{x+1}{x-1}", "a + b", "2r^2", "2^{n} - 1", "n!",
    "\\binom{5}{2}", "x = 5", "y = 2x + 1", "x^2 + y^2 = 1", "x \\le 3", "-1 < x < 2",
    "x \\in [0, 1]", "(1, 2)", "\\left( \\frac{1}{2}, \\frac{\\pi}{3} \\right)", "(1, 2, 3)",
    "[0, 1)", "(-\\infty, 2] \\cup (3, \\infty)", "\\{1, 2\\}", "1, 2, 3", "1 \\pm \\sqrt{2}",
    "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}",
    "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}", "\\text{yes}", "\\text{(A)}", "(B)",
    "45^\\circ", "50\\%", "3 \\text{ cm}", "12 \\mbox{ cm}^2", "\\$5.00", "101_2", "1011_{2}",
)
# The warm-up stops after this much CPU time (a slow machine starts its workers no later).
_WARMUP_CPU_S = 3.0
_warm = False


def _worker_init() -> None:
    """Import math-verify and parse `WARMUP_SHAPES`, once per process. A worker forked from the
    math verifier's fork server (`boundlab.verify.math_preload`) has done both already."""
    import logging

    import math_verify  # noqa: F401  (sympy and antlr load here, before any deadline)
    from math_verify import parse
    from math_verify.parser import parse_latex_cached

    global _warm
    # Timeouts are reported through our verdicts; math-verify's own warnings would flood the log.
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    if _warm:
        return
    plain_math_verify("1", "1")
    c0 = time.process_time()
    for s in WARMUP_SHAPES:
        if time.process_time() - c0 > _WARMUP_CPU_S:
            break
        parse(wrap_latex(s), parsing_timeout=_PARSE_TIMEOUT_S)
    parse_latex_cached.cache_clear()  # the tables stay warm; no parse is handed on
    _warm = True


_cpu_budget_spent = False


def _on_sigprof(signum: int, frame: Any) -> None:
    # math-verify's own timeout exception, so math-verify handles it exactly as its alarm: the
    # parse returns [], the one comparison in flight returns False and the next one still runs.
    from math_verify.errors import TimeoutException

    global _cpu_budget_spent
    _cpu_budget_spent = True
    raise TimeoutException("CPU budget spent")


def _timed(step: Callable[[], Any], wall_s: int, cpu_cap_s: float | None) -> tuple[Any, bool, float]:
    """(result, expired, CPU seconds) of one math-verify step that sets math-verify's wall-clock
    alarm to `wall_s`.

    math-verify says nothing when its alarm fires: it returns [] or False. So a falsy result after
    the whole wall-clock budget is an expiry. With `cpu_cap_s`, a SIGPROF timer also interrupts
    the step once it has used that much CPU time, and a falsy result after that is an expiry too."""
    from math_verify.errors import TimeoutException

    global _cpu_budget_spent
    _cpu_budget_spent = False
    t0, c0 = time.monotonic(), time.process_time()
    if cpu_cap_s is None:
        out = step()
    else:
        old = signal.signal(signal.SIGPROF, _on_sigprof)
        signal.setitimer(signal.ITIMER_PROF, cpu_cap_s)
        try:
            out = step()
        except TimeoutException:  # fired outside math-verify's handlers (in its clean-up)
            out = None
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, old)
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    return out, (not out and (_cpu_budget_spent or wall >= wall_s - 0.01)), cpu


def _parsed(s: str, parse_s: int, retry: bool) -> tuple[Any, bool, float]:
    """(parse, expired, CPU seconds) of one side, gold or answer: both are parsed the same way,
    and a parse is kept for the worker's life (golds recur in every batch, answers such as `0`
    or `\\sqrt{2}` across golds); an expired parse is not kept."""
    from math_verify import parse

    p = _PARSED.get(s)
    if p is not None:
        return p, False, 0.0
    p, expired, cpu = _timed(lambda: parse(wrap_latex(s), parsing_timeout=parse_s),
                             parse_s, _PARSE_TIMEOUT_S if retry else None)
    if not expired:
        if len(_PARSED) > 10000:
            _PARSED.clear()
        _PARSED[s] = p
    return p, expired, cpu


def _worker_check(arg: tuple) -> tuple:
    """Runs in a worker process: ("ok", verdict) or (EXPIRED, step, CPU seconds of that step);
    for a gold profile, ("ok", self_verdict, value, apart, strings, apart_any) (see
    `_gold_profile`).

    `arg` is (gold, answer), or (gold, answer, True) for a retry: math-verify's wall-clock budgets
    stretched `_RETRY_FACTOR` times, each step held to the normal budget of CPU time instead.
    An answer of None asks for the gold's profile."""
    from math_verify import verify

    gold, answer = arg[0], arg[1]
    retry = len(arg) > 2 and bool(arg[2])
    parse_s = _PARSE_TIMEOUT_S * (_RETRY_FACTOR if retry else 1)
    verify_s = _VERIFY_TIMEOUT_S * (_RETRY_FACTOR if retry else 1)
    g, expired, cpu = _parsed(gold, parse_s, retry)
    if expired:
        return (EXPIRED, "parse gold", cpu)
    if answer is None:
        a = g
    else:
        a, expired, cpu = _parsed(answer, parse_s, retry)
        if expired:
            return (EXPIRED, "parse answer", cpu)
    if answer is None and any(isinstance(x, str) and x.strip() for x in g):
        # math-verify's verdict for an identical answer, without running it: `verify` tries every
        # (gold item, answer item) pair and is True if any is, and two equal non-empty strings
        # are a pair it accepts (grader.verify, `compare_single_extraction`); the sympy pairs
        # before it can only add a True, and an error or timeout in them is caught there.
        return ("ok", True, *_gold_profile(g))
    if answer is not None and _shortcut_apart(gold, g, answer, a):
        return ("ok", False)
    ok, expired, cpu = _timed(lambda: verify(g, a, timeout_seconds=verify_s),
                              verify_s, _VERIFY_TIMEOUT_S if retry else None)
    if expired:
        return (EXPIRED, "verify", cpu)
    if answer is None:
        return ("ok", bool(ok), *_gold_profile(g))
    return ("ok", bool(ok))


def _shortcut_apart(gold: str, g: list, answer: str, a: list) -> bool:
    """`_values_apart`, where sympy failing on an odd expression (`Poly` of `(x**2)**3`, from
    `x^2^3`, raises) means no shortcut: math-verify decides, and the pair is no `error`."""
    try:
        return _values_apart(gold, g, answer, a)
    except Exception:  # noqa: BLE001
        return False


def _values_apart(gold: str, g: list, answer: str, a: list) -> bool:
    """math-verify's `verify(g, a)` is False, known without running it: no string of one parse
    equals one of the other's, and the two expressions are closed-form constants whose values are
    `_far_apart`, or one is such a constant and the other a non-constant polynomial, or both are
    polynomials whose difference is not zero (`_polynomials_differ`; see
    `_gold_profile` for why math-verify's every comparison then fails: its numeric and symbolic
    ones need equal values, its string and structural ones equal objects). Values are kept per
    string for the worker's life."""
    from sympy import Basic, Symbol

    sg = {x.strip() for x in g if isinstance(x, str)}
    if sg & {x.strip() for x in a if isinstance(x, str)} - {""}:
        return False
    eg = [x for x in g if isinstance(x, Basic)]
    ea = [x for x in a if isinstance(x, Basic)]
    if len(eg) != 1 or len(ea) != 1:
        return False
    vg, va = _value_of(gold, eg[0], True), _value_of(answer, ea[0], False)
    if vg is not None and va is not None:
        return _far_apart(vg, va)
    if vg is not None:
        return not isinstance(ea[0], Symbol) and _polynomial(ea[0])
    e = _gold_side(eg[0])
    if isinstance(e, Symbol) or isinstance(ea[0], Symbol) or not _polynomial(e):
        return False
    if va is not None:
        return True
    return _polynomial(ea[0]) and _polynomials_differ(e, ea[0])


def _polynomials_differ(p: Any, q: Any) -> bool:
    """`p - q`, two polynomials as `_polynomial` takes them, has a coefficient of at least 1e-6:
    math-verify's numeric comparison (`(p - q).evalf(chop=True) == 0`, which only chops parts
    below about 1e-15) and its symbolic one (`simplify(p - q).is_zero`) both fail, and so does
    its structural one."""
    from sympy import Poly

    d = p - q
    syms = sorted(d.free_symbols, key=str)
    if not syms:
        return d.is_Number and abs(d) >= 1e-6
    return any(abs(c) >= 1e-6 for c in Poly(d, *syms).coeffs())


def _gold_side(e: Any) -> Any:
    """The gold expression math-verify compares with a prediction that is no equation: an
    assignment `x = 5` by its right-hand side."""
    from math_verify.grader import is_assignment_relation, take_last_relation

    return take_last_relation(e).rhs if is_assignment_relation(e) else e


_VALUES: dict[tuple[str, bool], complex | None] = {}


def _value_of(s: str, e: Any, is_gold: bool) -> complex | None:
    key = (s, is_gold)
    if key not in _VALUES:
        if len(_VALUES) > 20000:
            _VALUES.clear()
        try:
            _VALUES[key] = _closed_form_value(_gold_side(e) if is_gold else e)
        except Exception:  # noqa: BLE001
            _VALUES[key] = None
    return _VALUES[key]


def _gold_profile(parsed: list) -> tuple[complex | None, bool, tuple[str, ...], bool]:
    """(value, apart, strings, apart_any) of a parsed gold, as math-verify compares it with a
    plain number (grader.sympy_expr_eq with a sympy Number as the prediction):
    - an assignment `x = 5` is compared by its right-hand side;
    - a closed-form constant expression (`_closed_form_value`) has a value: a number is equal to
      it only if their values are (to math-verify's 6 decimal places; symbolically,
      `simplify(g - n)` is zero only for equal values; as sympy objects, only equal values are
      equal);
    - `apart`, never equal to a single number: a Tuple of two or more (sympy_compare_sets: a Tuple
      is no Set, and the element-wise comparison needs equal lengths); a FiniteSet of two or more
      constants of distinct values (its symmetric difference with {n} is never empty); a
      non-constant polynomial (`_polynomial`: `g - n` is never zero, and rounding it raises); a
      Symbol whose name holds a character no number's `str` has (the symbols' comparison is
      `str(g) == str(n)`); a matrix of two or more entries (no Set, Tuple or relation: its
      structural comparison with a number is False, its numeric one compares it with the
      number as a whole, and `Matrix - n` raises in the symbolic one); an interval of positive
      length, or a union of such (sympy_compare_sets: not equal to {n}, their symmetric
      difference is not empty, and an open interval is compared element-wise only with a
      pair); a relation that is no assignment (`2x + y = 4`, `x > 5`: math-verify unwraps
      only an assignment, and a relation's structural comparison with a number is False, its
      numeric and symbolic ones raise);
    - anything else (percents, other functions...): math-verify decides.
    `strings`: the parse's strings, which math-verify also compares as strings. `apart_any`:
    `apart` holds against any closed-form constant too (`closed_form.py`'s `3\\sqrt{13}`, `2\\pi`):
    the same reasons hold for a tuple, a set, a polynomial, a matrix, an interval and a
    relation, but not for a symbol, whose comparison is by `str`, and `str` of a constant can
    hold letters (`sqrt(2)`, `pi`)."""
    from sympy import Basic, FiniteSet, Interval, MatrixBase, Symbol, Tuple, Union, true
    from sympy.core.relational import Relational

    strings = tuple(x for x in parsed if isinstance(x, str))
    exprs = [x for x in parsed if isinstance(x, (Basic, MatrixBase))]
    if len(exprs) != 1:
        return None, False, strings, False
    try:
        e = _gold_side(exprs[0])
        if isinstance(e, Relational):  # an equation that is no assignment, an inequality
            return None, True, strings, True
        if isinstance(e, MatrixBase):
            return None, len(e) >= 2, strings, len(e) >= 2
        if isinstance(e, Interval) or (isinstance(e, Union)
                                       and all(isinstance(x, Interval) for x in e.args)):
            wide = all((x.end > x.start) is true  # `measure.is_positive` is False for oo
                       for x in (e.args if isinstance(e, Union) else [e]))
            return None, wide, strings, wide
        if isinstance(e, Tuple):
            return None, len(e) >= 2, strings, len(e) >= 2
        if isinstance(e, FiniteSet):
            vals = [_closed_form_value(x) for x in e.args]
            distinct = (len(vals) >= 2 and all(v is not None for v in vals)
                        and all(_far_apart(v, w) for i, v in enumerate(vals) for w in vals[i + 1:]))
            return None, distinct, strings, distinct
        if isinstance(e, Symbol):
            return None, not set(e.name) <= _NUMBER_STR, strings, False
        value = _closed_form_value(e)
        apart = value is None and _polynomial(e)
        return value, apart, strings, apart
    except Exception:  # noqa: BLE001 - no profile is always safe
        return None, False, strings, False


# Characters of `str()` of a sympy Integer, Rational or Float.
_NUMBER_STR = frozenset("0123456789.-+e/")


def _polynomial(e: Any) -> bool:
    """A non-constant polynomial in its symbols (`p - q`, `6 - 5i` with i a real symbol, as
    math-verify parses it), built of +, *, symbols, numbers and positive integer powers only: no
    number equals it, whatever its symbols are."""
    from sympy import Add, Float, Integer, Mul, Poly, Pow, Rational, Symbol, preorder_traversal

    for n, node in enumerate(preorder_traversal(e)):
        if n > 200 or not isinstance(node, (Add, Mul, Pow, Symbol, Rational, Float)):
            return False
        if isinstance(node, Pow) and not (isinstance(node.exp, Integer) and 0 < node.exp <= 100):
            return False
        if isinstance(node, Rational) and max(abs(node.p), node.q) > 10 ** 30:
            return False
    syms = sorted(e.free_symbols, key=str)
    return bool(syms) and not Poly(e, *syms).is_ground


# The sympy node types of a closed-form constant whose value `evalf` computes reliably.
_CLOSED_FORM: tuple[type, ...] | None = None


def _closed_form_value(e: Any) -> complex | None:
    """The value of a small closed-form constant (integers, rationals, floats, pi, e, I, +, *,
    powers with small rational exponents, exp, log, sin, cos, tan), or None."""
    import math

    global _CLOSED_FORM
    from sympy import (Add, E, Expr, Float, I, Mul, Pow, Rational, cos, exp, log, pi,
                       preorder_traversal, sin, tan)

    if _CLOSED_FORM is None:
        _CLOSED_FORM = (Rational, Float, type(pi), type(E), type(I), Add, Mul, Pow, exp, log,
                        sin, cos, tan)
    if not isinstance(e, Expr):
        return None
    for n, node in enumerate(preorder_traversal(e)):
        if n > 200 or not isinstance(node, _CLOSED_FORM):
            return None
        if isinstance(node, Rational) and max(abs(node.p), node.q) > 10 ** 30:
            return None
        if isinstance(node, Pow) and not (isinstance(node.exp, Rational)
                                          and max(abs(node.exp.p), node.exp.q) <= 1000):
            return None
    try:
        z = complex(e.evalf(30, strict=True))
    except Exception:  # noqa: BLE001
        return None
    return z if math.isfinite(z.real) and math.isfinite(z.imag) else None


class MathVerifier(Verifier):
    name = "math"
    # Bumped whenever a verdict can change for the same (gold, completion). 2: math-verify's silent
    # expiries are detected and retried or judged `timeout` (were `wrong`); every box of the final
    # statement, hedges, math-verify's own extraction when unboxed, `truncated`. 3: thousands in
    # LaTeX spacing (`2\\,220`), numbers in `\\text{}`, an empty box is `no_answer`, number words
    # up to twenty in "the answer is", e-notation (verify/normalize.py; the gold is normalized the
    # same way); plain numbers below 1e-3 compared to 6 significant digits (`fast_verdict`).
    # 4: a problem's `meta["rel_tol"]` (Minerva: 1e-4) decides two plain numbers (`rel_tol_verdict`).
    version = 4
    # score_many takes `cut_off` flags (completions stopped at max_new_tokens).
    reads_cut_off = True
    # Cannot change a verdict: the worker count and the cache size. Everything else it is built
    # with (its `verify.math` block) is in the probe key.
    verdict_neutral = frozenset({"workers", "cache_size"})
    libraries = ("math-verify", "latex2sympy2_extended", "sympy")
    # A timeout says math-verify could not decide in its budget, not that the answer is wrong.
    timeouts_are_final = False

    def __init__(self, workers: int = 2, deadline_s: float = 2.0,
                 max_answer_chars: int = MAX_ANSWER_CHARS, cache_size: int = 200_000,
                 extraction: str = "lenient"):
        if extraction not in MODES:
            raise ValueError(f"verify.math.extraction must be one of {', '.join(MODES)}, "
                             f"got {extraction!r}")
        self.extraction = extraction
        if extraction == "lenient":
            _patterns()  # compile math-verify's regexes once, up front, not inside a timed batch
        self.max_answer_chars = int(max_answer_chars)
        self.pool = DeadlinePool(_worker_check, workers=workers, deadline_s=deadline_s,
                                 init=_worker_init, preload=("boundlab.verify.math_preload",))
        self._cache: OrderedDict[tuple[str, str], tuple[bool, str]] = OrderedDict()
        self._cache_size = cache_size
        # Each gold's profile (`GoldProfile`), learned once from a worker.
        self._golds: OrderedDict[str, GoldProfile] = OrderedDict()
        self.calls = 0  # math-verify calls actually made (for benchmarks and tests)
        self.retries = 0  # of which retries after an expiry on a starved worker

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        return self.score_many([(problem, completions)])[0]

    def score_many(self, items: Sequence[tuple[Problem, Sequence[str]]],
                   cut_off: Sequence[Sequence[bool]] | None = None) -> list[list[Verdict]]:
        """`cut_off[i][j]`: completion j of item i stopped at max_new_tokens (None: none did)."""
        with _gc_paused():
            return self._score_many(items, cut_off)

    def _score_many(self, items: Sequence[tuple[Problem, Sequence[str]]],
                    cut_off: Sequence[Sequence[bool]] | None) -> list[list[Verdict]]:
        extracted = [[extract(c, self.extraction, bool(cut_off and cut_off[i][j]))
                      for j, c in enumerate(comps)] for i, (_, comps) in enumerate(items)]
        golds = [normalize_answer(problem.answer) for problem, _ in items]
        # Each problem's distinct extractions (at n = 256 most samples repeat a handful of
        # answers), each with the units that are checked against the gold: one unit per distinct
        # answer against a one-answer gold (several are a hedge unless all are right), or all
        # answers joined into one list against a gold with several answers.
        kinds = [{ex: answer_units(gold, ex.answers) for ex in dict.fromkeys(row)}
                 for gold, row in zip(golds, extracted)]
        # Distinct (gold, answer) pairs that still need a math-verify call; pairs that the gold's
        # profile may decide (`GoldProfile`), waiting for golds not profiled yet.
        todo: list[tuple[str, str]] = []
        waiting: list[tuple[str, str]] = []
        to_profile: dict[str, None] = {}
        decided: dict[tuple[str, str], tuple[bool, str]] = {}
        # Verdicts under a problem's own relative tolerance: never cached (another problem with the
        # same gold may have none), keyed by (gold, answer, tolerance).
        tols = [(problem.meta or {}).get("rel_tol") for problem, _ in items]
        tolerant: dict[tuple[str, str, float], tuple[bool, str]] = {}
        for gold, kind, tol in zip(golds, kinds, tols):
            for units in kind.values():
                for a in units:
                    if len(a) > self.max_answer_chars:
                        continue
                    if tol and (gold, a, tol) not in tolerant:
                        tv = rel_tol_verdict(gold, a, tol)
                        if tv is not None:
                            tolerant[(gold, a, tol)] = (tv, "correct" if tv else "wrong")
                            continue
                    elif tol:
                        continue
                    key = (gold, a)
                    if key in decided:
                        continue
                    hit = self._cache.get(key)
                    if hit is not None:
                        decided[key] = hit
                        continue
                    fast = fast_verdict(gold, a)
                    if fast is None:
                        profile = self._golds.get(gold)
                        if profile is not None:
                            fast = profile.verdict(a)
                        elif may_use_profile(gold, a):
                            to_profile[gold] = None
                            waiting.append(key)
                            decided[key] = (False, "pending")
                            continue
                    if fast is None:
                        decided[key] = (False, "pending")
                        todo.append(key)
                    else:
                        decided[key] = (fast, "correct" if fast else "wrong")
        if to_profile or todo:
            # One round: the golds' profiles first (a worker parses each gold once), the pairs
            # that need math-verify anyway with them.
            results = self._run([(g, None) for g in to_profile] + todo)
            for g, res in zip(to_profile, results):
                if isinstance(res, tuple) and len(res) == 6 and res[0] == "ok":
                    self._put_gold(g, profile_from(g, res))
            self._settle(todo, results[len(to_profile):], decided)
            rest = []
            for key in waiting:
                profile = self._golds.get(key[0])
                fast = None if profile is None else profile.verdict(key[1])
                if fast is None:
                    rest.append(key)
                else:
                    decided[key] = (fast, "correct" if fast else "wrong")
            if rest:  # undecided by the profile, or its gold could not be profiled
                self._settle(rest, self._run(rest), decided)
        out: list[list[Verdict]] = []
        for gold, row, kind, tol in zip(golds, extracted, kinds, tols):
            verdicts = decided
            if tol:  # this problem's own verdicts under its tolerance win
                verdicts = {**decided, **{k[:2]: v for k, v in tolerant.items()
                                          if k[0] == gold and k[2] == tol}}
            judged = {ex: self._judge(gold, ex, units, verdicts) for ex, units in kind.items()}
            out.append([Verdict(*judged[ex], info={"answer_from": ex.source, "boxed": True}
                                if ex.has_box else {"answer_from": ex.source}) for ex in row])
        return out

    def _settle(self, keys: list[tuple[str, str]], results: list[Any],
                decided: dict[tuple[str, str], tuple[bool, str]]) -> None:
        """Record math-verify's verdicts; final ones (not a `timeout`, nor an `error` from a worker
        that died: the next try may well succeed) also in the cache."""
        for key, res in zip(keys, results):
            verdict, final = _interpret(res)
            decided[key] = verdict
            if final:
                self._put(key, verdict)

    def _run(self, args: list[tuple]) -> list[Any]:
        """The workers' results for (gold, answer) calls (answer None: the gold's profile). A call
        that expired on a starved worker is retried once (see the module docstring); the retry's
        result replaces the first."""
        # One group per gold: a worker parses each gold once.
        results = self.pool.map(args, groups=[a[0] for a in args])
        killed = self.pool.killed_cpu_s
        self.calls += len(args)
        retry: list[int] = []
        for i, res in enumerate(results):
            if res == TIMEOUT:
                cpu = killed.get(i)
                starved = cpu is None or cpu < _CPU_FULL * self.pool.deadline_s
            elif isinstance(res, tuple) and res and res[0] == EXPIRED:
                starved = res[2] < _CPU_FULL * _PARSE_TIMEOUT_S
            else:
                continue
            if starved:  # else it needs more than the budget, loaded machine or not: `timeout`
                retry.append(i)
        if retry:
            again = self.pool.map([(*args[i], True) for i in retry],
                                  deadline_s=self.pool.deadline_s * _RETRY_FACTOR,
                                  groups=[args[i][0] for i in retry])
            self.calls += len(retry)
            self.retries += len(retry)
            for i, res in zip(retry, again):
                results[i] = res
        return results

    def _judge(self, gold: str, ex: Extraction, units: list[str],
               decided: dict[tuple[str, str], tuple[bool, str]]) -> tuple[bool, str | None, str]:
        """(correct, extracted, outcome) of a completion with this extraction."""
        if not units:
            return False, None, "truncated" if ex.source == "truncated" else "no_answer"
        shown = ", ".join(units)
        if any(len(a) > self.max_answer_chars for a in units):
            return False, shown[:200] + "...", "too_long"
        res = [decided[(gold, a)] for a in units]
        if all(ok for ok, _ in res):
            return True, shown, "correct"
        if any(ok for ok, _ in res):
            # Several different answers, one of them right: a hedge earns no credit.
            return False, shown, "hedge"
        return False, shown, next((o for _, o in res if o != "wrong"), "wrong")

    def _put(self, key: tuple[str, str], verdict: tuple[bool, str]) -> None:
        self._cache[key] = verdict
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _put_gold(self, gold: str, profile: GoldProfile) -> None:
        self._golds[gold] = profile
        if len(self._golds) > self._cache_size:
            self._golds.popitem(last=False)

    def close(self) -> None:
        self.pool.close()


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while. Scoring allocates tens of thousands of
    small objects, none of them cyclic, and every so often that triggers a full collection, which
    walks every object the process holds (sympy's alone are >100k; a trainer's far more): that was
    up to half the parent's time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _interpret(res: Any) -> tuple[tuple[bool, str], bool]:
    """A worker's answer -> ((correct, outcome), final)."""
    if res == TIMEOUT or (isinstance(res, tuple) and res and res[0] == EXPIRED):
        return (False, "timeout"), False
    if res == CRASH:
        return (False, "error"), False
    if isinstance(res, tuple) and res and res[0] == "__error__":
        return (False, "error"), True
    ok = bool(res[1])
    return (ok, "correct" if ok else "wrong"), True


from boundlab.verify import VERIFIERS  # noqa: E402

VERIFIERS.register("math")(MathVerifier)
