"""The math verifier's worker side: every math-verify call runs here, in a process of the deadline
pool, with its own wall-clock and CPU budgets (`_timed`), after a warm-up on common answer shapes
(`WARMUP_SHAPES`); `_worker_check` answers the parent's calls (verdicts and gold profiles). The rules
the parent applies without math-verify are `math_rules`; the verifier is `math`.
"""

from __future__ import annotations

import signal
import time
from typing import Any, Callable

from boundlab.verify.closed_form import far_apart as _far_apart
from boundlab.verify.math_rules import wrap_latex


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


# A worker's parses, gold and answer alike (see `_parsed`).
_PARSED: dict[str, Any] = {}


def plain_math_verify(gold: str, answer: str, budget_s: int = _PARSE_TIMEOUT_S) -> bool:
    """One plain math-verify call: the reference our verifier must agree with. `budget_s` is each
    step's wall-clock budget; a reference check on a loaded machine passes a generous one, since
    math-verify's expiry is silent (an expired parse reads as an empty one, a `False`)."""
    from math_verify import parse, verify

    return bool(verify(parse(wrap_latex(gold), parsing_timeout=budget_s),
                       parse(wrap_latex(answer), parsing_timeout=budget_s),
                       timeout_seconds=max(budget_s, _VERIFY_TIMEOUT_S)))


# A reference check's budget per step (tests, bench/verify_fuzz_lib.py): math-verify's expiry is silent,
# so at the 1 s production budget a loaded machine turns a parse into an empty one, a False (CI,
# 2026-12-05: two good expressions read as "no single parse"). The reference is what math-verify
# decides given time, not how fast.
REFERENCE_BUDGET_S = 20


def reference_math_verify(gold: str, answer: str) -> bool:
    """`plain_math_verify` with `REFERENCE_BUDGET_S` a step: the verdict tests compare ours with."""
    return plain_math_verify(gold, answer, REFERENCE_BUDGET_S)


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
