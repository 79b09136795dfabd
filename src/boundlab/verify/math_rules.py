"""The math verifier's rules in the parent: what math-verify would conclude, decided without it where
that is certain (plain numbers, scientific notation, closed forms, polynomials, relations, gold
profiles), and the text helpers they share (`wrap_latex`, `split_gold`, `parse_text`). The worker side
(every math-verify call, under a deadline) is `math_worker`; the verifier that ties them together,
with the full account of each rule and why it agrees with math-verify, is `math`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable, Sequence

from boundlab.verify.closed_form import (closed_form_value, difference, linear_root,
                                        lists_differ, negated, polynomials,
                                        polynomials_differ, relation)
from boundlab.verify.closed_form import far_apart as _far_apart


def wrap_latex(s: str) -> str:
    """The form both sides are handed to `math_verify.parse` in. A gold that holds a box is
    handed over as it is, so math-verify reads the box the way it always does."""
    s = s.strip()
    return s if s.startswith("$") or "\\boxed" in s else f"${s}$"


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
        verdict = assignment_verdict(g, a)
        if verdict is None:
            verdict = closed_form_verdict(g, a)
        return verdict if verdict is not None else polynomial_verdict(g, a)
    return _plain_pair(xg, ya)


def _plain_pair(xg: tuple[Fraction, bool], ya: tuple[Fraction, bool]) -> bool | None:
    """Two `plain_number`s as math-verify compares them (see `fast_verdict`)."""
    (x, x_dec), (y, y_dec) = xg, ya
    if x == y or not (x_dec or y_dec):
        return x == y
    return False if _far_apart(x, y) else None


# `v = N`: one bare lowercase letter (not `e`, Euler's number to latex2sympy, so `e = 3` is no
# assignment; not `i`, which makes every symbol complex), `=` between plain spaces, and a right
# side that `plain_number` reads.
_ASSIGNED = re.compile(r" *([a-df-hj-z]) *= *([^=]*)")


def assignment_verdict(gold: str, answer: str) -> bool | None:
    """One side an assignment of a plain number (`x = 12`, `y=-3`, `x = \\frac{1}{2}`), the other a
    plain number: math-verify's `sympy_expr_eq` compares an equation answer against a gold that
    is none by the answer's right side, and an assignment gold (its left side a symbol) against an
    answer that is no equation by the gold's right side, so the verdict is that of the two numbers
    (`_plain_pair`: equal values are equal, values far apart are not, closer ones and everything
    else go to math-verify). Its string comparison cannot add a match: one string holds an `=`
    the other lacks. The small-number rule (`small_number_verdict`, a departure on purpose) is not
    applied: these pairs keep math-verify's verdict. Chains (`a = b = 3`), several assignments
    (`x = 3, y = 4`), `2x = 4` and capitals are left to the other rules and math-verify."""
    for eq, other in ((answer, gold), (gold, answer)):
        m = _ASSIGNED.fullmatch(eq)
        if m is None or "=" in other:
            continue
        right, number = plain_number(m.group(2)), plain_number(other)
        if right is None or number is None:
            return None
        return _plain_pair(number, right) if eq is answer else _plain_pair(right, number)
    return None


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
