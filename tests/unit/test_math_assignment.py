"""`x = 12` against `12` (issue 36: such answers always went to math-verify): decided in the parent
(`assignment_verdict`) only where that is math-verify's own verdict, checked against math-verify
itself (`reference_math_verify`, its verdict given time) on the forms models write and their traps."""

import pytest

from boundlab.verify.math_rules import assignment_verdict, fast_verdict
from boundlab.verify.math_worker import reference_math_verify

from test_math_verifier import NUMBERS

# (gold, answer, what the parent decides: True/False, or None for "left to math-verify")
CASES = [
    ("12", "x = 12", True), ("12", "x=12", True), ("12", "x = 12.0", True), ("12", "x=12.0", True),
    ("12.0", "x = 12", True), ("-3", "y = -3", True), ("-3", "y=-3", True), ("0.5", "x = 1/2", True),
    ("1/2", "x = 0.5", True), ("0.5", r"x = \frac{1}{2}", True), (r"\frac{1}{2}", r"x = \dfrac{1}{2}", True),
    ("6", "x = 12/2", True), ("12", r"x = \frac{24}{2}", True), ("12", "x = 012", True),
    ("12", "k = 12", True), ("12", "n = 12", True), ("12", " x =12 ", True),
    ("12", "x = -12", False), ("-12", "x = 12", False), ("5", "x = 6", False), ("3", "x = 4.5", False),
    # the symmetric form: an assignment gold against a number
    ("x = 12", "12", True), ("x=12", "12.0", True), ("y = -3", "-3", True), ("x = 0.5", "1/2", True),
    ("x = 1/2", "0.5", True), ("a = 3", "3", True), ("x = 3", "4", False), ("x = 3", "-3", False),
    # left to math-verify (or to the rules before this one): what it reads another way, or closer
    # values than the rule decides
    ("2", "2x = 4", False),            # not an assignment: the older relation rule says wrong
    ("12", "12 = x", False),           # nor this (right side x)
    ("3", "x = 3, y = 4", None), ("3", "a = b = 3", None), ("12", "x = 12 = y", None),
    ("12", "x = 12, y = 12", None), ("12", "e = 12", None), ("e = 3", "3", None),  # e: Euler's number
    ("12", "i = 12", None), ("i = 3", "3", None), ("12", "X = 12", None), ("12", "E = 12", None),
    ("12", "xy = 12", None), ("12", "x_1 = 12", None), (r"12", r"\theta = 12", None),
    ("12", "x = +12", None), ("12", "x = 12.", None), ("12", "x = 1,2", None), ("12", r"x = 12\%", None),
    ("12", "x = 12 cm", None), ("12", r"x\,=\,12", None), ("12", r"x \approx 12", None),
    ("12", r"x \le 12", None), ("12", "x == 12", None), ("3", "x = 3.0000001", None),
    ("0.333333", "x = 1/3", None), ("1/3", "x = 0.333333", None), ("x = 12", "x=12", None),
    ("0.0000005", "x = 0.0000001", None),  # close small numbers: math-verify's 6 decimal places
]


@pytest.mark.parametrize("gold,answer,decided", CASES)
def test_each_case_is_decided_as_math_verify_decides_it(gold, answer, decided):
    assert fast_verdict(gold, answer) is decided
    if decided is not None:
        assert decided == reference_math_verify(gold, answer)


def test_the_rule_decides_the_common_forms():
    assert assignment_verdict("12", "x = 12") is True and assignment_verdict("x = 12", "12") is True
    assert assignment_verdict("12", "x = 13") is False
    assert assignment_verdict("12", "12") is None  # no equation: the plain-number rule's
    assert assignment_verdict("x = 12", "y = 12") is None  # two equations: the relation rule's


# Spacing a model writes, and every letter the rule takes (every lowercase letter but e and i).
FORMS = ["{l} = {n}", "{l}={n}"]
LETTERS = "abcdfghjklmnopqrstuvwxyz"


def test_every_decided_pair_of_the_number_grid_agrees_with_math_verify():
    """The plain-number traps (6 decimal places, 15 digits, 1/3 against 0.333333, +5, 5., 1,000,
    percents, units, zero denominators) on the right of an assignment, against each number, in
    both directions: every pair the parent decides gets math-verify's verdict."""
    decided = 0
    for g in NUMBERS[::4]:
        for n in NUMBERS:
            for form in FORMS:
                eq = form.format(l="x", n=n)
                for gold, answer in ((g, eq), (eq, g)):
                    fast = fast_verdict(gold, answer)
                    if fast is not None and assignment_verdict(gold.strip(), answer.strip()) is not None:
                        decided += 1
                        assert fast == reference_math_verify(gold, answer), (gold, answer)
    assert decided > 500


def test_every_letter_agrees_with_math_verify():
    # Letters that are units to math-verify's normalization (m, s, ...) or functions elsewhere: a
    # bare letter before `=` is a symbol to it in every case.
    for letter in LETTERS:
        for n, other, same in (("12", "12", True), ("12", "13", False), ("-3", "-3.0", True),
                               (r"\frac{1}{2}", "0.5", True), ("7", "-7", False)):
            eq = f"{letter} = {n}"
            for gold, answer in ((other, eq), (eq, other)):
                assert fast_verdict(gold, answer) is same
                assert reference_math_verify(gold, answer) is same, (gold, answer)
