"""The value of a closed-form constant written in LaTeX, read in the parent without math-verify.

At n = 256 a probe's wrong answers are mostly small expressions (`-3\\sqrt{13}`, `\\sqrt{51}+1`,
`2\\pi`, `\\frac{\\sqrt{3}}{2}`), and asking math-verify about one costs a LaTeX parse (ANTLR,
about 3 ms warm, several times that the first time a worker meets a construct) and often sympy's
`simplify`. Most of those answers are plainly wrong: their value is far from the gold's. This
module reads exactly the expressions whose value math-verify's parser (latex2sympy2_extended)
agrees on, so `math.py` can decide such pairs the way math-verify would, without it (issue 13).

The grammar is deliberately narrow. Everything outside it returns None and goes to math-verify:

    expr    := ['-'] term (('+' | '-') term)*
    term    := iprod ((\\cdot | \\times) iprod)*  |  iprod '/' factor
    iprod   := factor (factor')*  |  mixed     factor' starts with \\sqrt or \\pi;
                                            mixed: integer \\frac{integer}{integer}
    factor  := atom ['^' exponent]
    atom    := integer | decimal | \\frac{expr}{expr} (\\dfrac, \\tfrac) | \\sqrt{expr}
             | \\sqrt[n]{expr} | \\sqrt D | \\pi | ( expr ) | \\left( expr \\right)
    exponent:= one digit | {expr}, an exact rational

A mixed number, an integer before a fraction of two integers and nothing else (`2\\frac{14}{3}`),
is 20/3, as latex2sympy reads it.

What it leaves out, each because latex2sympy reads it another way than arithmetic would (seen in
math-verify 0.9): any other number or group before `\\frac` (`2\\frac{\\pi}{3}` is a product), a
juxtaposed number or parenthesis (`2(3)`, `(2)(3)` and `2 3` are all 5; `\\pi(2)` is a function
call), `/` before an implicit product (`1/2\\pi` is 1/(2 pi)), chained powers (`2^3^2` is
(2^3)^2), `\\sqrt23` (sqrt(2)*3), signs after an operator, a leading `+`, `e` and `i` (Euler's
number, or a symbol), decimals without a digit on both sides, thousands separators, units,
percents and degrees. Roots and fractional powers of negative numbers (complex principal values)
and anything whose value or any intermediate exceeds 1e30 in magnitude are left out too.

Values are computed with 50 significant digits (mpmath), so cancellation can never move a result
by anything near math-verify's tolerance of 6 decimal places. `tests/unit/test_closed_form.py`
checks every construct against math-verify's own parse, and a seeded fuzz of random expressions
from this grammar against plain math-verify verdicts.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from mpmath import mpf
from mpmath.ctx_mp import MPContext

_MP = MPContext()
_MP.dps = 50
_MAX = mpf(10) ** 30
_MAX_LEN = 200
_MAX_DEPTH = 30
_NUMBER = re.compile(r"(\d+)(?:\.(\d+))?")
_FLOAT_DIGITS = 15  # a longer decimal is a sympy Float of more bits: left to math-verify
_INT_DIGITS = 18
_CMD = re.compile(r"\\([a-zA-Z]+)")
_MIXED = re.compile(r"(\d{1,9}) *\\[dt]?frac *\{ *(\d{1,9}) *\} *\{ *(\d{1,9}) *\}")


class _Reject(Exception):
    """Outside the grammar: math-verify decides."""


class _Value:
    __slots__ = ("v", "q")

    def __init__(self, v: mpf, q: Fraction | None):
        if abs(v) > _MAX:
            raise _Reject
        self.v = v  # the value, 50 digits
        self.q = q  # the exact value when it is rational and known exactly, else None


def _exact(q: Fraction) -> _Value:
    return _Value(_MP.mpf(q.numerator) / q.denominator, q)


class _Parser:
    def __init__(self, s: str):
        self.s = s
        self.i = 0
        self.depth = 0

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
        """What the next factor starts with: 'num', 'paren', or a command name."""
        ch = self._peek()
        if ch.isdigit():
            return "num"
        if ch == "(":
            return "paren"
        if ch == "\\":
            return self._peek_cmd()
        return None

    # -- grammar ----------------------------------------------------------------------------
    def parse(self) -> _Value:
        v = self.expr()
        if self._peek() != "":
            raise _Reject
        return v

    def expr(self) -> _Value:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Reject
        neg = False
        if self._peek() == "-":
            self.i += 1
            neg = True
            if self._peek() in ("+", "-"):
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

    def term(self) -> _Value:
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

    def iprod(self) -> tuple[_Value, bool]:
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
                return _exact(whole + Fraction(p, q)), True
        acc = self.factor()
        single = True
        while True:
            nxt = self._starts_factor()
            if nxt is None:
                return acc, single
            if nxt not in ("sqrt", "pi"):
                # A number, a parenthesis or \\frac after a factor: a mixed number, a sum or a
                # function call to latex2sympy (see the module docstring); anything else
                # (`\\cdot`, `\\right`) ends the product.
                if nxt in ("num", "paren", "frac", "dfrac", "tfrac", "left"):
                    raise _Reject
                return acc, single
            acc = _mul(acc, self.factor())
            single = False

    def factor(self) -> _Value:
        base = self.atom()
        if self._peek() == "^":
            self.i += 1
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
        v = self.braced()
        if v.q is None:
            raise _Reject
        return v.q

    def braced(self) -> _Value:
        self._take("{")
        v = self.expr()
        self._take("}")
        return v

    def atom(self) -> _Value:
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
                m = re.compile(r"\s*(\d{1,2})\s*\]").match(self.s, self.i)
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
                rad = _exact(Fraction(int(d)))
            else:
                raise _Reject
            return _root(rad, n)
        if kind == "pi":
            self._take_cmd("pi")
            return _Value(+_MP.pi, None)
        raise _Reject

    def number(self) -> _Value:
        self._skip()
        m = _NUMBER.match(self.s, self.i)
        if not m:
            raise _Reject
        whole, frac = m.groups()
        self.i = m.end()
        nxt = self.s[self.i] if self.i < len(self.s) else ""
        if nxt == "." or nxt == ",":
            raise _Reject  # `5.`, `1,000`
        if frac is None:
            if len(whole) > _INT_DIGITS:
                raise _Reject
            return _exact(Fraction(int(whole)))
        if len(whole) + len(frac) > _FLOAT_DIGITS:
            raise _Reject
        return _Value(_MP.mpf(f"{whole}.{frac}"), None)


def _neg(a: _Value) -> _Value:
    return _Value(-a.v, None if a.q is None else -a.q)


def _add(a: _Value, b: _Value) -> _Value:
    return _Value(a.v + b.v, None if a.q is None or b.q is None else a.q + b.q)


def _mul(a: _Value, b: _Value) -> _Value:
    return _Value(a.v * b.v, None if a.q is None or b.q is None else a.q * b.q)


def _div(a: _Value, b: _Value) -> _Value:
    if b.q == 0 or (b.q is None and abs(b.v) < mpf("1e-20")):
        raise _Reject  # zoo, or a denominator too close to 0 to be sure of it
    return _Value(a.v / b.v, None if a.q is None or b.q is None else a.q / b.q)


def _root(a: _Value, n: int) -> _Value:
    if a.q is not None:
        if a.q < 0:
            raise _Reject  # a complex principal root
    elif a.v < mpf("1e-20"):
        raise _Reject
    v = _MP.root(a.v, n)
    q = None
    if a.q is not None:
        p = _int_root(a.q.numerator, n)
        r = _int_root(a.q.denominator, n)
        if p is not None and r is not None:
            q = Fraction(p, r)
    return _Value(v, q)


def _int_root(x: int, n: int) -> int | None:
    r = round(x ** (1.0 / n))
    for c in (r - 1, r, r + 1):
        if c >= 0 and c ** n == x:
            return c
    return None


def _pow(a: _Value, e: Fraction) -> _Value:
    if abs(e.numerator) > 60 or e.denominator > 12:
        raise _Reject
    if e.denominator != 1:
        if a.q is not None:
            if a.q <= 0:
                raise _Reject
        elif a.v < mpf("1e-20"):
            raise _Reject
    elif e <= 0 and (a.q == 0 or (a.q is None and abs(a.v) < mpf("1e-20"))):
        raise _Reject
    if a.v != 0 and abs(_MP.log10(abs(a.v)) * float(e)) > 30:
        raise _Reject
    if e.denominator == 1:
        return _Value(a.v ** int(e), None if a.q is None else a.q ** int(e))
    return _Value(_MP.power(a.v, _MP.mpf(e.numerator) / e.denominator), None)


@lru_cache(maxsize=1 << 16)
def closed_form_value(s: str) -> float | None:
    """The real value of `s` when it is a closed-form constant in this module's grammar (as
    math-verify would read it between `$...$`), else None."""
    s = s.strip()
    if not s or len(s) > _MAX_LEN or "$" in s:
        return None
    try:
        return float(_Parser(s).parse().v)
    except (_Reject, RecursionError, ValueError, ZeroDivisionError, OverflowError):
        return None
