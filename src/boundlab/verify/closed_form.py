"""Closed-form constants, polynomials, lists and equations written in LaTeX, read in the parent
without math-verify.

At n = 256 a probe's wrong answers are mostly small expressions (`-3\\sqrt{13}`, `\\sqrt{51}+1`,
`2\\pi`, `\\frac{\\sqrt{3}}{2}`, `6 - 5i`, `2p - q`, `1, -2`, `x = 6`), and asking math-verify
about one costs a LaTeX parse (ANTLR, a few ms warm, tens of ms for a relation or a tuple, and
several times that the first time a worker meets a construct) and often sympy's `simplify`. Most
of those answers are plainly wrong. This module reads exactly the expressions that math-verify's
parser (latex2sympy2_extended, after math-verify's normalization) reads the same way, so
`math.py` can decide such pairs the way math-verify would, without it (issue 13).

The grammar is deliberately narrow. Everything outside it returns None and goes to math-verify:

    list    := expr (',' expr)*          (`polynomials` only; no digit right after a comma)
    relation:= expr '=' expr              (`relation` only)
    expr    := ['-'] term (('+' | '-') term)*
    term    := iprod ((\\cdot | \\times) iprod)*  |  iprod '/' factor
    iprod   := factor (factor')* [symbol]  |  symbol  |  mixed
                                            factor' starts with \\sqrt or \\pi;
                                            mixed: integer \\frac{integer}{integer}
    factor  := atom ['^' exponent]  |  number '^' \\circ  |  symbol ['^' power]
    atom    := integer | decimal | \\frac{expr}{expr} (\\dfrac, \\tfrac) | \\sqrt{expr}
             | \\sqrt[n]{expr} | \\sqrt D | \\pi | ( expr ) | \\left( expr \\right)
    exponent:= one digit | {expr}, an exact rational
    symbol  := one lowercase letter other than `e` (`polynomials` and `relation` only)
    power   := one digit | {integer}, 1 to 12

A mixed number, an integer before a fraction of two integers and nothing else (`2\\frac{14}{3}`),
is 20/3, as latex2sympy reads it. Degrees are not converted (`90^\\circ` is 90 to math-verify).
Symbols make polynomials: roots, powers other than a symbol's, and division are for constants only.

What it leaves out, each because latex2sympy or math-verify's normalization reads it another way
than algebra would (seen in math-verify 0.9): any other number or group before `\\frac`
(`2\\frac{\\pi}{3}` is a product), a juxtaposed number or parenthesis (`2(3)`, `(2)(3)` and `2 3`
are all 5; `\\pi(2)` and `x(2)` are function calls), anything juxtaposed after a symbol (`xy`, and
`dx` is one symbol), `/` before an implicit product (`1/2\\pi` is 1/(2 pi)), chained powers
(`2^3^2` is (2^3)^2), `\\sqrt23` (sqrt(2)*3), signs after an operator (leading minus signs are
negations: `--2` is 2), a leading `+`, `e` (Euler's
number), capitals (folded to lower case, except `I` and `E`), decimals without a digit on both
sides, thousands separators (`1,234` is 1234, so a list refuses a digit right after a comma), a
string ending in a letter that is a unit to the normalization (`\\frac{1}{2}m` is 1/2, `x + t`
is `x +`: `UNIT_LETTERS`), equations holding the letter `i` (a standalone `i` makes every symbol
complex, and sympy then evaluates `i = 5` to False), percents and text. Roots and fractional
powers of negative numbers (complex principal values) and anything whose value or any
intermediate exceeds 1e30 in magnitude are left out too.

Values are computed with 50 significant digits (mpmath), so cancellation can never move a result
by anything near math-verify's tolerance of 6 decimal places. `tests/unit/test_closed_form.py`
checks every construct against math-verify's own parse, and seeded fuzzes (`bench/verify_fuzz_lib.py`) of random
expressions from this grammar against plain math-verify verdicts.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache


from boundlab.verify.closed_form_algebra import (_MP, _ONE, _Poly, _Reject, _Value, _add, _const, _constant, _div,
                                                  _exact, _has_letters, _mul, _neg, _pow, _root)

_MAX_LEN = 200
_MAX_DEPTH = 30
_NUMBER = re.compile(r"(\d+)(?:\.(\d+))?")
_FLOAT_DIGITS = 15  # a longer decimal is a sympy Float of more bits: left to math-verify
_INT_DIGITS = 18
_CMD = re.compile(r"\\([a-zA-Z]+)")
_MIXED = re.compile(r"(\d{1,9}) *\\[dt]?frac *\{ *(\d{1,9}) *\} *\{ *(\d{1,9}) *\}")
_ROOT_INDEX = re.compile(r"\s*(\d{1,2})\s*\]")
_DEGREES = re.compile(r" *(?:\\circ(?![a-zA-Z])|\{ *\\circ *\})")
# Symbols: single lowercase letters. Not `e`, Euler's number to latex2sympy; capitals fold to
# lower case there, except `I` (the imaginary unit) and `E`.
_LETTERS = frozenset("abcdfghijklmnopqrstuvwxyz")
# Letters that are units to math-verify's normalization (latex2sympy2_extended's `units`, the
# single letters): at the end of a string, after a digit, `}` or a space, it deletes them, so
# `\\frac{1}{2}m` is 1/2 and `x + t` is `x +`. A string ending in one is refused.
UNIT_LETTERS = frozenset("cdghlmost")
_MAX_ITEMS = 20  # elements of a list


class _Parser:
    """Reads one expression into a `_Poly`. With `letters` False (closed forms), a letter is
    outside the grammar; with it True, single lowercase letters other than `e` are symbols."""

    def __init__(self, s: str, letters: bool = False):
        self.s = s
        self.i = 0
        self.depth = 0
        self.letters = letters

    # -- scanning ---------------------------------------------------------------------------
    def _skip(self) -> None:
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1

    def _peek_cmd(self) -> str | None:
        self._skip()
        m = _CMD.match(self.s, self.i)
        return m.group(1) if m else None

    def _peek(self) -> str:
        self._skip()
        return self.s[self.i] if self.i < len(self.s) else ""

    def _take(self, ch: str) -> None:
        if self._peek() != ch:
            raise _Reject
        self.i += 1

    def _take_cmd(self, name: str) -> None:
        if self._peek_cmd() != name:
            raise _Reject
        self.i += len(name) + 1

    def _starts_factor(self) -> str | None:
        """What the next factor starts with: 'num', 'paren', 'letter', or a command name."""
        ch = self._peek()
        if ch.isdigit():
            return "num"
        if ch == "(":
            return "paren"
        if ch == "\\":
            return self._peek_cmd()
        if ch in _LETTERS:
            # A letter: a symbol (polynomials), or outside the grammar (closed forms), where it
            # must not end a product quietly either.
            return "letter"
        return None

    # -- grammar ----------------------------------------------------------------------------
    def parse(self) -> _Poly:
        v = self.expr()
        if self._peek() != "":
            raise _Reject
        return v

    def parse_list(self) -> list[_Poly]:
        """A top-level list, `1, -2` (latex2sympy: a FiniteSet), or one expression. A comma
        right before a digit is refused: `1,234` is a thousands separator to it."""
        items = [self.expr()]
        while self._peek() == ",":
            self.i += 1
            if self.i < len(self.s) and self.s[self.i].isdigit():
                raise _Reject
            items.append(self.expr())
        if self._peek() != "" or len(items) > _MAX_ITEMS:
            raise _Reject
        return items

    def expr(self) -> _Poly:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Reject
        # Leading minus signs, each a negation to latex2sympy (`--2` is 2, `---2` is -2).
        neg = False
        while self._peek() == "-":
            self.i += 1
            neg = not neg
        if self._peek() == "+":
            raise _Reject
        acc = self.term()
        if neg:
            acc = _neg(acc)
        while self._peek() in ("+", "-"):
            op = self.s[self.i]
            self.i += 1
            if self._peek() in ("+", "-"):
                raise _Reject  # `--2`, `+-`: a sign after an operator
            t = self.term()
            acc = _add(acc, t if op == "+" else _neg(t))
        self.depth -= 1
        return acc

    def term(self) -> _Poly:
        acc, _ = self.iprod()
        mult = False
        while True:
            cmd = self._peek_cmd()
            if cmd in ("cdot", "times"):
                self.i += len(cmd) + 1
                mult = True
                if self._peek() in ("+", "-"):
                    raise _Reject
                nxt, _ = self.iprod()
                acc = _mul(acc, nxt)
                continue
            if self._peek() == "/":
                if mult:
                    raise _Reject  # `a \\cdot b / c`: left to math-verify
                self.i += 1
                if self._peek() in ("+", "-"):
                    raise _Reject
                den, single = self.iprod()
                if not single:
                    raise _Reject  # `1/2\\pi` is 1/(2 pi) to latex2sympy
                acc = _div(acc, den)
                if self._peek() == "/" or self._peek_cmd() in ("cdot", "times"):
                    raise _Reject
                return acc
            return acc

    def iprod(self) -> tuple[_Poly, bool]:
        """A product by juxtaposition; (value, is a single factor)."""
        first = self._starts_factor()
        if first is None:
            raise _Reject
        if first == "num":
            m = _MIXED.match(self.s, self.i)
            if m:
                # A mixed number, `2\\frac{1}{2}` = 5/2: latex2sympy adds an integer to the
                # positive Rational after it (its `convert_postfix_list`). Only as a whole
                # product: a power or another factor after it would change what it adds.
                self.i = m.end()
                whole, p, q = (int(x) for x in m.groups())
                if p == 0 or q == 0 or self._starts_factor() is not None or self._peek() == "^":
                    raise _Reject
                return _const(_exact(whole + Fraction(p, q))), True
        acc = self.factor()
        single = True
        while True:
            nxt = self._starts_factor()
            if nxt is None:
                return acc, single
            if nxt == "letter":
                # `2x`, `\\sqrt{2}x`, `\\frac{1}{2}i`: a symbol ends a product; nothing is read
                # after it by juxtaposition (`xy`, `dx` is one symbol to latex2sympy, `x(2)` a
                # function call, `x2`).
                if not self.letters or _has_letters(acc):
                    raise _Reject
                acc = _mul(acc, self.factor())
                if self._starts_factor() is not None:
                    raise _Reject
                return acc, False
            if nxt in ("sqrt", "pi") and _has_letters(acc):
                raise _Reject  # `x\\pi`: a symbol ends a product
            if nxt not in ("sqrt", "pi"):
                # A number, a parenthesis or \\frac after a factor: a mixed number, a sum or a
                # function call to latex2sympy (see the module docstring); anything else
                # (`\\cdot`, `\\right`) ends the product.
                if nxt in ("num", "paren", "frac", "dfrac", "tfrac", "left"):
                    raise _Reject
                return acc, single
            acc = _mul(acc, self.factor())
            single = False

    def factor(self) -> _Poly:
        number = self._starts_factor() == "num"
        base = self.atom()
        if self._peek() == "^":
            self.i += 1
            m = _DEGREES.match(self.s, self.i)
            if m:
                # `90^\\circ` is 90 to latex2sympy (math-verify parses without converting
                # degrees); only after a number, and with nothing juxtaposed after it
                # (`90^\\circ 2` is 92).
                self.i = m.end()
                if not number or self._starts_factor() is not None or self._peek() == "^":
                    raise _Reject
                return base
            e = self.exponent()
            base = _pow(base, e)
            if self._peek() == "^":
                raise _Reject  # `2^3^2` is (2^3)^2 to latex2sympy
        return base

    def exponent(self) -> Fraction:
        ch = self._peek()
        if ch.isdigit():
            self.i += 1
            if self.i < len(self.s) and self.s[self.i].isdigit():
                raise _Reject  # `2^10` is 2^1 * 0 in LaTeX
            return Fraction(int(ch))
        if ch != "{":
            raise _Reject
        v = _constant(self.braced())
        if v is None or v.q is None:
            raise _Reject
        return v.q

    def braced(self) -> _Poly:
        self._take("{")
        v = self.expr()
        self._take("}")
        return v

    def atom(self) -> _Poly:
        kind = self._starts_factor()
        if kind == "num":
            return self.number()
        if kind == "paren":
            self.i += 1
            v = self.expr()
            self._take(")")
            return v
        if kind == "left":
            self._take_cmd("left")
            self._take("(")
            v = self.expr()
            self._take_cmd("right")
            self._take(")")
            return v
        if kind in ("frac", "dfrac", "tfrac"):
            self._take_cmd(kind)
            if self._peek() != "{":
                raise _Reject  # `\\frac12`
            num = self.braced()
            if self._peek() != "{":
                raise _Reject
            return _div(num, self.braced())
        if kind == "sqrt":
            self._take_cmd("sqrt")
            n = 2
            if self._peek() == "[":
                self.i += 1
                m = _ROOT_INDEX.match(self.s, self.i)
                if not m:
                    raise _Reject
                n = int(m.group(1))
                if not 2 <= n <= 12:
                    raise _Reject
                self.i = m.end()
            if self._peek() == "{":
                rad = self.braced()
            elif self._peek().isdigit():
                # `\\sqrt2`: one digit, and no digit after it (`\\sqrt23` is sqrt(2)*3)
                d = self.s[self.i]
                self.i += 1
                if self.i < len(self.s) and (self.s[self.i].isdigit() or self.s[self.i] == "."):
                    raise _Reject
                rad = _const(_exact(Fraction(int(d))))
            else:
                raise _Reject
            return _root(rad, n)
        if kind == "pi":
            self._take_cmd("pi")
            return _const(_Value(+_MP.pi, None))
        if kind == "letter" and self.letters:
            name = self.s[self.i]
            self.i += 1
            return _Poly({((name, 1),): _ONE})
        raise _Reject

    def number(self) -> _Poly:
        self._skip()
        m = _NUMBER.match(self.s, self.i)
        if not m:
            raise _Reject
        whole, frac = m.groups()
        self.i = m.end()
        nxt = self.s[self.i: self.i + 2]
        # `5.` and `1,000` are refused; in a list (see `parse_list`) `1, 2` and `1,-2` are not.
        in_list = self.letters and len(nxt) == 2 and not nxt[1].isdigit()
        if nxt[:1] == "." or (nxt[:1] == "," and not in_list):
            raise _Reject
        if frac is None:
            if len(whole) > _INT_DIGITS:
                raise _Reject
            return _const(_exact(Fraction(int(whole))))
        if len(whole) + len(frac) > _FLOAT_DIGITS:
            raise _Reject
        return _const(_Value(_MP.mpf(f"{whole}.{frac}"), None))


def far_apart(x, y) -> bool:
    """|x - y| beyond anything math-verify's comparison of two numbers can call equal: 6 decimal
    places (`float_rounding=6`) and a 53-bit float's relative error, with a wide margin."""
    return abs(x - y) > 1e-5 + 1e-9 * max(abs(x), abs(y))


def _read(s: str, letters: bool) -> list[_Poly] | None:
    s = s.strip()
    if not s or len(s) > _MAX_LEN or "$" in s:
        return None
    if letters and s[-1] in UNIT_LETTERS:
        return None
    p = _Parser(s, letters)
    try:
        return p.parse_list() if letters else [p.parse()]
    except (_Reject, RecursionError, ValueError, ZeroDivisionError, OverflowError):
        return None


@lru_cache(maxsize=1 << 16)
def closed_form_value(s: str) -> float | None:
    """The real value of `s` when it is a closed-form constant in this module's grammar (as
    math-verify would read it between `$...$`), else None."""
    r = _read(s, letters=False)
    return None if r is None else float(_constant(r[0]).v)


Polynomial = tuple  # ((monomial, coefficient), ...), sorted; a monomial ((letter, power), ...)


@lru_cache(maxsize=1 << 16)
def polynomials(s: str) -> tuple[Polynomial, ...] | None:
    """`s` read with symbols too: one polynomial (`6 - 5i`, `p - q`, `3x^2+1`, or a closed-form
    constant), or a top-level list of them (`1, -2`, a FiniteSet to latex2sympy); None outside
    the grammar. Coefficients are floats (math-verify's tolerance is far above their error)."""
    r = _read(s, letters=True)
    if r is None:
        return None
    return tuple(tuple(sorted((m, float(c.v)) for m, c in p.t.items())) for p in r)


def polynomials_differ(p: Polynomial, q: Polynomial) -> bool:
    """Some monomial's coefficients are `far_apart` (a missing one is 0)."""
    a, b = dict(p), dict(q)
    return any(far_apart(a.get(m, 0.0), b.get(m, 0.0)) for m in a.keys() | b.keys())


def lists_differ(xs: tuple[Polynomial, ...], ys: tuple[Polynomial, ...]) -> bool:
    """An element of one list differs (`polynomials_differ`) from every element of the other:
    as sets, with whatever multiplicity, the two cannot be equal."""
    return (any(all(polynomials_differ(x, y) for y in ys) for x in xs)
            or any(all(polynomials_differ(x, y) for x in xs) for y in ys))


Relation = tuple  # (lhs, rhs, lhs is a bare letter): two `Polynomial`s and a flag


@lru_cache(maxsize=1 << 16)
def relation(s: str) -> Relation | None:
    """`lhs = rhs`, one `=` and each side one polynomial (`x = 5`, `2x = 5`, `y = 2x + 1`), as
    latex2sympy reads it (an Eq); None otherwise. The flag: the left side is a bare letter, an
    assignment to math-verify (which then compares a non-equation answer with the right side)."""
    if s.count("=") != 1 or len(s) > _MAX_LEN:
        return None
    left, right = s.split("=")
    lhs, rhs = polynomials(left), polynomials(right)
    if lhs is None or rhs is None or len(lhs) != 1 or len(rhs) != 1:
        return None
    if any(name == "i" for p in (lhs[0], rhs[0]) for m, _ in p for name, _ in m):
        # With a standalone `i` every symbol of the string is complex (real=False), and sympy
        # then evaluates `i = 5` to False: two such equations are equal to math-verify.
        return None
    return lhs[0], rhs[0], left.strip() in _LETTERS


def difference(p: Polynomial, q: Polynomial) -> Polynomial:
    """p - q."""
    a = dict(p)
    for m, c in q:
        a[m] = a.get(m, 0.0) - c
    return tuple(sorted(a.items()))


def negated(p: Polynomial) -> Polynomial:
    return tuple((m, -c) for m, c in p)


def linear_root(p: Polynomial) -> tuple[str, float] | None:
    """(x, the root) of a polynomial `a x + b` in one letter with a clearly non-zero `a` (every
    other coefficient 0 but the constant), else None."""
    terms = [(m, c) for m, c in p if m and not _negligible(c)]
    if len(terms) != 1 or len(terms[0][0]) != 1 or terms[0][0][0][1] != 1:
        return None
    (m, a), = terms
    return m[0][0], -dict(p).get((), 0.0) / a


def _negligible(c: float) -> bool:
    return not far_apart(c, 0.0)
