"""Judging a stdin/stdout program's output against the expected output, in the parent.

Rule (LiveCodeBench's grader, plus an optional tolerance): surrounding blank space and trailing
spaces do not count; lines are compared token by token; two tokens that differ as text are still
equal when both parse as the same decimal number ("1.0" == "1"). `float_tol`, when given, accepts
|a - b| <= tol * max(1, |b|), for problems that say "absolute or relative error 1e-6".
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.strip().splitlines()]


def _num(tok: str) -> Decimal | None:
    if len(tok) > 100:
        return None
    try:
        d = Decimal(tok)
    except (InvalidOperation, ValueError):
        return None
    return d if d.is_finite() else None


def outputs_match(actual: str, expected: str, float_tol: float | None = None) -> bool:
    a, e = _lines(actual), _lines(expected)
    if a == e:
        return True
    if len(a) != len(e):
        return False
    for la, le in zip(a, e):
        if la == le:
            continue
        ta, te = la.split(), le.split()
        if len(ta) != len(te):
            return False
        for x, y in zip(ta, te):
            if x == y:
                continue
            dx, dy = _num(x), _num(y)
            if dx is None or dy is None:
                return False
            if dx == dy:
                continue
            if float_tol is None:
                return False
            if abs(float(dx) - float(dy)) > float_tol * max(1.0, abs(float(dy))):
                return False
    return True
