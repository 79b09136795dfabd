"""The parent's closed-form reader (`verify/closed_form.py`) against hand-computed values and
against math-verify itself: its value is math-verify's parse's value, and every pair it decides
gets math-verify's verdict."""

from __future__ import annotations
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))  # the fuzz tool: bench/verify_fuzz_lib.py

import math

import pytest

from boundlab.verify.closed_form import UNIT_LETTERS, closed_form_value, polynomials, relation
from boundlab.verify.math_rules import fast_verdict
from boundlab.verify.math_worker import reference_math_verify

S2, S3, PI = math.sqrt(2), math.sqrt(3), math.pi

HAND = [
    ("7", 7), ("-7", -7), ("0.25", 0.25), (r"3\sqrt{13}", 3 * math.sqrt(13)),
    (r"11\sqrt2", 11 * S2), (r"-\sqrt{51}", -math.sqrt(51)), (r"\frac{\sqrt{3}}{2}", S3 / 2),
    (r"\dfrac{1+\sqrt{5}}{2}", (1 + math.sqrt(5)) / 2), (r"\tfrac{3}{4}", 0.75),
    (r"2\pi", 2 * PI), (r"\frac{\pi}{3}", PI / 3), (r"12\pi/5", 12 * PI / 5),
    (r"\left(1+\sqrt{2}\right)^2", (1 + S2) ** 2), (r"(1+\sqrt{2})\sqrt{2}", 2 + S2),
    (r"\sqrt[3]{8}", 2), (r"2^{10}", 1024), (r"2^{-1}", 0.5), (r"4^{\frac{3}{2}}", 8),
    (r"\sqrt{2} \cdot \sqrt{3}", math.sqrt(6)), (r"2 \times 3", 6), (r"1.5\pi", 1.5 * PI),
    (r"\frac{1}{2}\sqrt{3}", S3 / 2), (r"(-2)^3", -8), (r"3 \sqrt {13}", 3 * math.sqrt(13)),
    (r"\pi^2", PI ** 2), (r"10 - 2\sqrt{7}", 10 - 2 * math.sqrt(7)),
    # mixed numbers, as latex2sympy reads them; a root stays a product even when it is whole
    (r"2\frac{14}{3}", 20 / 3), (r"-2\frac{1}{2}", -2.5), (r"3 \cdot 2\frac{1}{2}", 7.5),
    (r"3\sqrt{4}", 6), (r"3\sqrt{4}^{2}", 12),
    # degrees: math-verify parses without converting them
    (r"90^\circ", 90), (r"-90^{\circ}", -90), (r"90^\circ+1", 91), (r"2 \cdot 45^\circ", 90),
    # leading minus signs: each a negation
    ("--2", 2), ("---2", -2), (r"--\frac{35}{9}", 35 / 9), (r"\frac{--3}{2}", 1.5),
]

# Outside the grammar, each for a reason (the value math-verify reads, where it differs from
# what arithmetic would say, is in the second column).
REFUSED = [
    (r"2\frac{1}{2}^2", 0.5),  # a mixed number with a power: 2 * (1/2)^2
    ("2(3)", 5), ("(2)(3)", 5), ("2 3", 5),  # juxtaposed numbers are added
    (r"1/2\pi", 1 / (2 * PI)),  # `/` before an implicit product
    (r"3/4\sqrt{2}", 3 / (4 * S2)),
    ("2^3^2", 64),  # (2^3)^2
    (r"\sqrt23", 3 * S2),  # sqrt(2)*3
    (r"(1+\sqrt{2})(1-\sqrt{2})", None), (r"\pi(2)", None), (r"2\frac{\pi}{3}", None),
    (r"2\frac{1}{2}\pi", None), (r"2\frac{0}{3}", None), (r"\frac12", 0.5), ("2^10", None),
    (r"\sqrt{-4}", None),
    (r"(-8)^{1/3}", None), (r"\sqrt[3]{-8}", None), (r"2\cdot -3", -6), ("2--3", 5), ("-+2", None),
    ("+5", None), ("5.", None), (".5", None), ("1,000", None), ("e", math.e), ("3+4i", None),
    ("x", None), (r"50\%", None), (r"90^\circ 2", 92), (r"\pi^\circ", None), (r"\frac{1}{0}", None), ("0^{-1}", None),
    (r"2^{\pi}", None), (r"\sqrt{2}^{0.5}", None), ("10^{100}", None), (r"\text{5}", None),
    ("$5$", None), ("", None), ("1" * 19, None), ("0." + "1" * 15, None),
]


def test_hand_computed_values():
    for s, v in HAND:
        got = closed_form_value(s)
        assert got is not None, s
        assert got == pytest.approx(v, rel=1e-12, abs=1e-12), s


def test_refuses_what_latex2sympy_reads_otherwise():
    for s, _ in REFUSED:
        assert closed_form_value(s) is None, s
    # The reasons are real: math-verify reads these as the second column says.
    from math_verify import parse

    for s, v in REFUSED[:8]:
        assert complex(parse(f"${s}$")[0].evalf()).real == pytest.approx(v), s


def test_values_are_math_verify_values():
    from math_verify import parse

    for s, _ in HAND:
        e = parse(f"${s}$")[0]
        assert complex(e.evalf(30)).real == pytest.approx(closed_form_value(s), rel=1e-12), s


def _decided_as_math_verify(golds=(), answers=(), pairs=()) -> int:
    """Every pair (each gold against each answer, and `pairs`) that the parent decides gets
    math-verify's verdict; returns how many it decided."""
    decided = 0
    for g, a in [(g, a) for g in golds for a in answers] + list(pairs):
        fast = fast_verdict(g, a)
        if fast is not None:
            decided += 1
            assert fast == reference_math_verify(g, a), (g, a)
    return decided


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_pairs_decided_here_get_math_verify_verdicts():
    golds = [s for s, _ in HAND]
    answers = golds + ["10.816654", "10.8", "0", "1", r"\sqrt{117}", r"\frac{\sqrt{12}}{4}",
                       r"6.283185", r"\frac{2\pi}{1}", "-1.0"]
    assert _decided_as_math_verify(golds, answers) > 0.8 * len(golds) * len(answers)
    # Equal values written otherwise, or within math-verify's rounding: math-verify decides.
    for g, a in [(r"3\sqrt{13}", r"\sqrt{117}"), (r"3\sqrt{13}", "10.816654"),
                 (r"\frac{\sqrt{3}}{2}", r"\frac{1}{2}\sqrt{3}")]:
        assert fast_verdict(g, a) is None, (g, a)


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_fuzz_against_math_verify():
    """Random expressions from the grammar and its near misses, with the answers a model might
    give against each: values, self-verdicts and every decided pair agree with math-verify
    (`bench/verify_fuzz.py` runs the same check at scale)."""
    from verify_fuzz_lib import differential

    out = differential(60, seed=0)
    assert out["value_mismatch"] == [] and out["self_wrong"] == []
    assert out["verdict_mismatch"] == []
    assert out["value_checked"] > 400 and out["decided_wrong"] > 300 and out["decided_correct"] > 60
    assert out["drawn"] > out["golds"]  # some drawn expressions were refused


def _poly(s: str) -> list[dict]:
    return [dict(p) for p in polynomials(s)]


X, Y, P, Q, I1 = (("x", 1),), (("y", 1),), (("p", 1),), (("q", 1),), (("i", 1),)


def test_polynomials_hand_computed():
    assert _poly("6 - 5i") == [{(): 6.0, I1: -5.0}]
    assert _poly("p - q") == [{P: 1.0, Q: -1.0}]
    assert _poly("3x^2 - 2x + 1") == [{(("x", 2),): 3.0, X: -2.0, (): 1.0}]
    assert _poly(r"\frac{x}{2} + y") == [{X: 0.5, Y: 1.0}]
    assert _poly(r"2\sqrt{3}x")[0][X] == pytest.approx(2 * S3)
    assert _poly(r"x \cdot y") == [{(("x", 1), ("y", 1)): 1.0}]
    assert _poly("x - x + 5") == [{X: 0.0, (): 5.0}]
    assert _poly("1,-2") == [{(): 1.0}, {(): -2.0}]
    assert _poly("3, 5, x") == [{(): 3.0}, {(): 5.0}, {X: 1.0}]
    assert _poly("1, 234") == [{(): 1.0}, {(): 234.0}]
    assert _poly(r"\sqrt{2}") == [{(): pytest.approx(S2)}]
    assert _poly("--2 + 7i") == [{(): 2.0, I1: 7.0}]  # math-verify: 2 + 7i


# Outside the polynomial grammar: what latex2sympy or math-verify's normalization reads
# otherwise than algebra would (math-verify's own parse, where it shows the reason, second).
POLY_REFUSED = [
    ("1,234", "1234"), (r"\frac{1}{2}m", "1/2"), ("x + t", None), ("2d", "2"),
    ("xy", None), ("dx", None), ("x(2)", None), ("x2", None), ("e", None), ("2e", None),
    ("X", None), ("3+2I", None), ("(x+1)^2", None), ("x^{-1}", None), ("x^0", None),
    ("2 + -7i", None), ("x_1", None), ("x'", None), (r"\frac{2}{x}", None),
    (r"\sqrt{x}", None), ("2^x", None), (r"x\pi", None), (r"\text{x}", None), ("1,", None),
    (r"\{1, 2\}", None), ("x = 5", None), ("x^2^3", None), (r"2\frac{1}{2}x", None),
]


def test_polynomials_refused():
    from math_verify import parse

    for s, mv in POLY_REFUSED:
        assert polynomials(s) is None, s
        if mv is not None:
            assert str(parse(f"${s}$")[0]) == mv, s
    # The single-letter units of math-verify's normalization, which `polynomials` refuses at the
    # end of a string: the same set as the library's.
    from latex2sympy2_extended.math_normalization import units

    assert UNIT_LETTERS == {u for u in units if len(u) == 1}


def test_polynomial_pairs_get_math_verify_verdicts():
    golds = ["6 - 5i", "-2 + 7i", "p - q", "3x^2 - 2x + 1", "1,-2", "3, 5, 7", r"90^\circ"]
    answers = golds + ["26 - 5i", "6 + 5i", "5i - 6", "2p - q", "-p - q", "q - p", "p - q+1",
                       "1,-2+1", "21,-2", "-2, 1", "1, -2, 1", "3, 5", "7, 5, 3", "x", "5",
                       r"\frac{\pi}{2}", "91", "6", "2x + 1 - 3x^2", "x^2", "i"]
    assert _decided_as_math_verify(golds, answers) > 0.8 * len(golds) * len(answers)
    # Equal written otherwise (a reordered list, terms in another order): math-verify decides.
    for g, a in [("1,-2", "-2, 1"), ("6 - 5i", "-5i + 6"), ("p - q", "-q + p")]:
        assert fast_verdict(g, a) is None, (g, a)


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_polynomial_fuzz_against_math_verify():
    """`fuzz.differential_polynomials`: random polynomials and lists (and near misses), with the
    answers a model might give: our polynomials are math-verify's parse, self-verdicts and every
    decided pair agree with it (`bench/verify_fuzz.py` runs the same at scale)."""
    from verify_fuzz_lib import differential_polynomials

    out = differential_polynomials(40, seed=0)
    assert out["value_mismatch"] == [] and out["self_wrong"] == []
    assert out["verdict_mismatch"] == []
    assert out["value_checked"] > 300 and out["decided_wrong"] > 250 and out["decided_correct"] > 60
    assert out["drawn"] > out["golds"]


def test_relations():
    lhs, rhs, assignment = relation("x = 5")
    assert dict(lhs) == {X: 1.0} and dict(rhs) == {(): 5.0} and assignment
    lhs, rhs, assignment = relation("2x = 5")
    assert dict(lhs) == {X: 2.0} and not assignment
    assert relation("y = 2x + 1")[2] and relation("5 = x")[2] is False
    # Not equations we read: chains, other relations, `i` (complex symbols: sympy evaluates
    # `i = 5` to False), lists, text.
    for s in ["x = y = 5", "x == 5", "x <= 5", r"x \le 5", "i = 5", "x = 5 + i", "x = 1, y = 2",
              r"\text{x} = 5", "x = 5m", "f(x) = 2", "x"]:
        assert relation(s) is None, s


def test_relation_pairs_get_math_verify_verdicts():
    pairs = [("x=5", a) for a in ["x=5+1", "-x=5", "2x=5", "x=5", "2x=10", "5", "6", "y=5",
                                  "5=x", "x = 6", r"x=\frac{10}{2}", "1, 5", "x"]]
    pairs += [(g, "x=5") for g in ["5", "6", "1,-2", "p - q", r"\sqrt{2}", "x"]]
    pairs += [("2x=5", a) for a in ["3", r"\frac{5}{2}", "x=3", "2x=6", "4x=10"]]
    pairs += [("y=2x+1", a) for a in ["y=2x+2", "2x+1", "2x+2", "y = 1 + 2x"]]
    assert _decided_as_math_verify(pairs=pairs) >= 15
    # A single-letter assignment against a plain number, either way round, is decided here
    # (verify.math_rules.assignment_verdict) with math-verify's verdict (checked just above).
    assert fast_verdict("x=5", "5") is True and fast_verdict("5", "x=5") is True
    assert fast_verdict("x=5", "6") is False
    # What math-verify compares otherwise than as values: left to it.
    for g, a in [("x=5", "2x=10"), ("2x=5", "3"), ("x=5", "5=x")]:
        assert fast_verdict(g, a) is None, (g, a)


def test_same_parse_against_math_verify():
    """`math.same_parse`: math-verify's parse of `$s$` returns `parse_text(s)` as its string, and
    strings with the same `parse_text` (`\\dfrac`, `\\left(`, `\\!`, units) parse alike
    (`bench/verify_fuzz.py` checks every MATH500 gold)."""
    import boundlab.builtins  # noqa: F401
    from boundlab.tasks import TASKS
    from verify_fuzz_lib import TRAP_GOLDS, same_parse_check

    golds = [p.answer for p in TASKS.get("math500")(None).problems[:60]] + TRAP_GOLDS
    out = same_parse_check(golds)
    assert out["text_mismatch"] == [] and out["parse_mismatch"] == []
    assert out["read"] > 0.9 * out["strings"] and out["same_text_pairs"] > 250


def test_parse_text_refuses_what_would_backtrack():
    """math-verify's normalization backtracks over runs of whitespace (its unit regex): the
    parent, which has no deadline, never runs it on such a string."""
    import time

    from boundlab.verify.math_rules import parse_text

    slow = "1" + " " * 510 + "x"
    t = time.process_time()  # CPU time: the work done, whatever the machine's load
    assert parse_text(slow) is None and parse_text("x" * 300) is None
    assert time.process_time() - t < 0.05
    assert parse_text(r"\dfrac{1}{2}") == r"\frac{1}{2}" and parse_text(r"\left( 1, 2 \right)") == "( 1, 2 )"


def test_parse_text_takes_an_integer_as_it_is():
    """`parse_text` returns an integer without running math-verify's normalization: that
    normalization leaves every integer as it is (checked here on math-verify's own function), but
    not every decimal (`0.5` becomes `\\frac{1}{2}`), which therefore still goes through it."""
    import random

    from latex2sympy2_extended.math_normalization import normalize_latex

    from boundlab.verify.math_rules import _normalization, parse_text

    rng = random.Random(0)
    ints = ([str(i) for i in range(-300, 1200)] + ["007", "-00", "10000000000000000000000"]
            + [str(rng.randint(-10**15, 10**15)) for _ in range(500)])
    assert [s for s in ints if normalize_latex(s, _normalization()) != s] == []
    assert [s for s in ints if parse_text(f" {s} ") != s] == []
    assert parse_text("0.5") == normalize_latex("0.5", _normalization()) == r"\frac{1}{2}"
