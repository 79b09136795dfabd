"""Exact binomial arithmetic without scipy: the regularized incomplete beta function and the
Clopper-Pearson bounds built on it. Shared by adaptive probing (its certification rule) and the toy
world's audit (`boundlab.worlds.toyworld2.audit`, which imports it from here).

P(X >= c | n, p) = I_p(c, n - c + 1) for X ~ Binomial(n, p), so the one-sided Clopper-Pearson lower
bound at level alpha is the p with I_p(c, n - c + 1) = alpha, found by bisection (I_p is increasing
in p).
"""

from __future__ import annotations

import math


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
           + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def _solve(f, target: float) -> float:
    """The p in [0, 1] with f(p) = target, for f increasing in p (bisection, 100 halvings)."""
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _check(c: int, n: int, alpha: float) -> None:
    if not (0 <= c <= n) or n < 0:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not 0 < alpha < 1:
        raise ValueError(f"need 0 < alpha < 1, got {alpha}")


def cp_lower(c: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson lower bound: P(rate >= bound) >= 1 - alpha."""
    _check(c, n, alpha)
    return 0.0 if c == 0 else _solve(lambda p: betainc(c, n - c + 1, p), alpha)


def cp_upper(c: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound: P(rate <= bound) >= 1 - alpha."""
    _check(c, n, alpha)
    return 1.0 if c == n else _solve(lambda p: betainc(c + 1, n - c, p), 1 - alpha)


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Two-sided exact binomial interval (alpha/2 on each side)."""
    if n == 0:
        return 0.0, 1.0
    return cp_lower(k, n, alpha / 2), cp_upper(k, n, alpha / 2)
