"""The arithmetic under `closed_form`'s grammar: exact values (a Fraction where the value is rational,
always an mpmath number of 50 significant digits beside it) and polynomials over them in single
lowercase letters, with the operations the grammar needs (sum, product, quotient, roots, powers),
each refusing (`_Reject`) what math-verify would read otherwise or what grows past the limits.
"""

from __future__ import annotations

from fractions import Fraction

from mpmath import mpf
from mpmath.ctx_mp import MPContext

_MP = MPContext()
_MP.dps = 50
_MAX = mpf(10) ** 30
_MAX_TERMS = 64  # monomials in one polynomial
_MAX_DEGREE = 12


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


_ONE = _exact(Fraction(1))


class _Poly:
    """A polynomial in single-letter symbols with `_Value` coefficients: {monomial: coefficient},
    a monomial a sorted tuple of (letter, power); a constant is the monomial ()."""

    __slots__ = ("t",)

    def __init__(self, t: dict):
        if len(t) > _MAX_TERMS:
            raise _Reject
        self.t = t


def _const(v: _Value) -> _Poly:
    return _Poly({(): v})


def _constant(p: _Poly) -> _Value | None:
    """The value of a polynomial without symbols, else None (`x - x` has a symbol)."""
    return p.t.get(()) if len(p.t) == 1 else None


def _has_letters(p: _Poly) -> bool:
    return len(p.t) > 1 or () not in p.t


def _monomial_mul(a: tuple, b: tuple) -> tuple:
    powers = dict(a)
    for name, k in b:
        powers[name] = powers.get(name, 0) + k
    if sum(powers.values()) > _MAX_DEGREE:
        raise _Reject
    return tuple(sorted(powers.items()))


def _neg(a: _Poly) -> _Poly:
    return _Poly({m: _sneg(c) for m, c in a.t.items()})


def _add(a: _Poly, b: _Poly) -> _Poly:
    t = dict(a.t)
    for m, c in b.t.items():
        t[m] = _sadd(t[m], c) if m in t else c
    return _Poly(t)


def _mul(a: _Poly, b: _Poly) -> _Poly:
    t: dict = {}
    for ma, ca in a.t.items():
        for mb, cb in b.t.items():
            m = _monomial_mul(ma, mb)
            c = _smul(ca, cb)
            t[m] = _sadd(t[m], c) if m in t else c
    return _Poly(t)


def _div(a: _Poly, b: _Poly) -> _Poly:
    d = _constant(b)
    if d is None:
        raise _Reject  # a symbol in a denominator: no polynomial
    return _Poly({m: _sdiv(c, d) for m, c in a.t.items()})


def _root(a: _Poly, n: int) -> _Poly:
    v = _constant(a)
    if v is None:
        raise _Reject
    return _const(_sroot(v, n))


def _pow(a: _Poly, e: Fraction) -> _Poly:
    v = _constant(a)
    if v is not None:
        return _const(_spow(v, e))
    # A symbol to a positive integer power, `x^2` (latex2sympy: Pow(x, 2)); nothing else.
    if len(a.t) != 1 or e.denominator != 1 or not 1 <= e <= _MAX_DEGREE:
        raise _Reject
    m, c = next(iter(a.t.items()))
    if c.q != 1 or len(m) != 1 or m[0][1] != 1:
        raise _Reject
    return _Poly({((m[0][0], int(e)),): _ONE})


def _sneg(a: _Value) -> _Value:
    return _Value(-a.v, None if a.q is None else -a.q)


def _sadd(a: _Value, b: _Value) -> _Value:
    return _Value(a.v + b.v, None if a.q is None or b.q is None else a.q + b.q)


def _smul(a: _Value, b: _Value) -> _Value:
    return _Value(a.v * b.v, None if a.q is None or b.q is None else a.q * b.q)


def _sdiv(a: _Value, b: _Value) -> _Value:
    if b.q == 0 or (b.q is None and abs(b.v) < mpf("1e-20")):
        raise _Reject  # zoo, or a denominator too close to 0 to be sure of it
    return _Value(a.v / b.v, None if a.q is None or b.q is None else a.q / b.q)


def _sroot(a: _Value, n: int) -> _Value:
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


def _spow(a: _Value, e: Fraction) -> _Value:
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
