"""The parent's closed-form reader (`verify/closed_form.py`) against hand-computed values and
against math-verify itself: its value is math-verify's parse's value, and every pair it decides
gets math-verify's verdict."""

from __future__ import annotations

import math

import pytest

from boundlab.verify.closed_form import closed_form_value
from boundlab.verify.math import fast_verdict, plain_math_verify

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
    (r"(-8)^{1/3}", None), (r"\sqrt[3]{-8}", None), (r"2\cdot -3", -6), ("--2", None),
    ("+5", None), ("5.", None), (".5", None), ("1,000", None), ("e", math.e), ("3+4i", None),
    ("x", None), (r"50\%", None), (r"90^\circ", None), (r"\frac{1}{0}", None), ("0^{-1}", None),
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


def test_pairs_decided_here_get_math_verify_verdicts():
    golds = [s for s, _ in HAND]
    answers = golds + ["10.816654", "10.8", "0", "1", r"\sqrt{117}", r"\frac{\sqrt{12}}{4}",
                       r"6.283185", r"\frac{2\pi}{1}", "-1.0"]
    decided = 0
    for g in golds:
        for a in answers:
            fast = fast_verdict(g, a)
            if fast is not None:
                decided += 1
                assert fast == plain_math_verify(g, a), (g, a)
    assert decided > 0.8 * len(golds) * len(answers)
    # Equal values written otherwise, or within math-verify's rounding: math-verify decides.
    for g, a in [(r"3\sqrt{13}", r"\sqrt{117}"), (r"3\sqrt{13}", "10.816654"),
                 (r"\frac{\sqrt{3}}{2}", r"\frac{1}{2}\sqrt{3}")]:
        assert fast_verdict(g, a) is None, (g, a)


def test_fuzz_against_math_verify():
    """Random expressions from the grammar and its near misses, with the answers a model might
    give against each: values, self-verdicts and every decided pair agree with math-verify
    (`bench/verify_fuzz.py` runs the same check at scale)."""
    from boundlab.verify.fuzz import differential

    out = differential(60, seed=0)
    assert out["value_mismatch"] == [] and out["self_wrong"] == []
    assert out["verdict_mismatch"] == []
    assert out["value_checked"] > 400 and out["decided_wrong"] > 300 and out["decided_correct"] > 60
    assert out["drawn"] > out["golds"]  # some drawn expressions were refused
