"""The visual benchmarks' answer types (boundlab.verify.answer_types and the `typed` verifier), on
hand-written cases: each type, and the traps (a letter in a sentence, "(B)", "B.", option text in
another case and spacing, 3.14 vs 3.142 at precision 2, a float answer to an integer question)."""

from __future__ import annotations

import pytest

from boundlab.tasks.base import Problem
from boundlab.verify.answer_types import (anchored_statement, choice_index, judge, number_matches,
                                          text_key, to_number)
from boundlab.verify.typed import TypedVerifier

ANGLES = ["135°", "140°", "145°", "150°"]  # gold C (MathVista stores the option's text)
LENGTHS = ["$6 \\mathrm{~m}$", "$8 \\mathrm{~m}$", "$10 \\mathrm{~m}$", "$11 \\mathrm{~m}$",
           "$12 \\mathrm{~m}$"]
WORDS = ["quarter", "half", "quarter to", "quarter past", "o'clock"]


@pytest.mark.parametrize("answer,index", [
    ("C", 2), ("(C)", 2), ("C.", 2), ("C)", 2), ("C:", 2), ("(c)", 2), ("\\text{C}", 2),
    ("\\textbf{(C)}", 2), ("$C$", 2), ("Option C", 2), ("choice (C)", 2), ("**C**", 2),
    ("145°", 2), ("145^\\circ", 2), ("145^{\\circ}", 2), (" 145 ° ", 2), ("145", 2), ("145.0", 2),
    ("C. 145°", 2), ("(C) 145^\\circ", 2),
    ("B. 145°", None),   # a letter and another option's text: names two options
    ("F", None),         # no option F among four
    ("c", None),         # a bare lower-case letter is a word, not an option
    ("147", None),       # no option has that number: never the nearest one
    ("145 or 150", None),
    ("", None),
])
def test_choice_by_letter_text_or_number(answer, index):
    assert choice_index(answer, ANGLES) == index


@pytest.mark.parametrize("answer,index", [
    ("Quarter To", 2), ("quarterto", 2), ("  QUARTER   past ", 3), ("quarter", 0), ("O'Clock", 4),
    ("quarter too", None),
])
def test_choice_by_option_text_ignores_case_and_spaces(answer, index):
    assert choice_index(answer, WORDS) == index


@pytest.mark.parametrize("answer,index", [("12 m", 4), ("12", 4), ("12m", 4), ("$12\\,\\mathrm{m}$", 4),
                                          ("E", 4), ("9 m", None)])
def test_choice_with_latex_options(answer, index):
    assert choice_index(answer, LENGTHS) == index


def test_choices_that_are_letters_and_an_option_that_is_two_letters():
    # MathVista's puzzle rows have the options "A".."E"; MATH-V has an option "C or D".
    assert choice_index("E", ["A", "B", "C", "D", "E"]) == 4
    opts = ["A", "B", "C", "D", "C or D"]
    assert choice_index("C or D", opts) == 4
    assert choice_index("C", opts) == 2


def test_duplicate_option_texts_are_not_guessed_between():
    assert choice_index("7", ["7", "7.0", "8"]) == 0        # the exact text names one option
    assert choice_index("7.00", ["7", "7.0", "8"]) is None  # as a number it names two


@pytest.mark.parametrize("gold,answer,kind,precision,ok", [
    # float at the row's precision: both rounded, half up, in decimal arithmetic
    ("3.14", "3.142", "float", 2, True),
    ("3.14", "3.1", "float", 2, False),
    ("3.14", "3.145", "float", 2, False),    # 3.145 -> 3.15 (half up, exact decimal)
    ("3.14", "3.135", "float", 2, True),     # 3.135 -> 3.14
    ("1.2", "1.24", "float", 1, True),
    ("1.2", "1.25", "float", 1, False),
    ("1.50", "1.5", "float", 2, True),       # MathVista's string compare misses this one
    ("1.2", "\\frac{6}{5}", "float", 1, True),
    ("1.2", "6/5", "float", 1, True),
    ("0.5", "1/2", "float", None, True),     # no precision: the gold's own decimals
    ("2.5", "2.46", "float", None, True),
    ("2.5", "2.44", "float", None, False),
    ("1.2", "1.2 m", "float", 1, True),
    ("1.2", "x = 1.2", "float", 1, False),   # not one number
    # integer: a float answer must be the integer itself
    ("5", "5", "integer", None, True),
    ("5", "5.0", "integer", None, True),
    ("5", "5.5", "integer", None, False),    # MathVista's int(float()) would say 5: no credit
    ("5", "4.9", "integer", None, False),
    ("1000", "1,000", "integer", None, True),
    ("1000", "1000 g", "integer", None, True),
    ("1000", "10000", "integer", None, False),
    ("-3", "-3", "integer", None, True),
    ("5", "five", "integer", None, False),
])
def test_numbers(gold, answer, kind, precision, ok):
    assert number_matches(gold, answer, kind, precision) is ok


@pytest.mark.parametrize("gold,answer,ok", [
    ("[2, 3]", "[2, 3]", True), ("[2, 3]", "2, 3", True), ("[2, 3]", "(2,3)", True),
    ("[2, 3]", "[3, 2]", False), ("[2, 3]", "[2, 3, 4]", False), ("[1.5, 2]", "[1.50, 2]", True),
    ("[2, 3]", "[2, x]", False),
    ("[a, b]", "[A, B]", True), ("[a, b]", "[a, c]", False),  # not numbers: compared as text
])
def test_lists(gold, answer, ok):
    assert judge("list", gold, answer)[0] is ok


def test_free_text_ignores_case_and_spaces_only():
    assert judge("text", "Common water flea", "common  Water flea")[0]
    assert not judge("text", "Common water flea", "water flea")[0]


@pytest.mark.parametrize("s,n", [("145°", 145), ("$12 \\mathrm{~m}$", 12), ("-0.5", -0.5), (".5", 0.5),
                                 ("\\dfrac{3}{4}", 0.75), ("1\\,000", 1000), ("2\\sqrt{3}", None),
                                 ("3/0", None), ("1.2.3", None)])
def test_to_number(s, n):
    got = to_number(s)
    assert (got is None) if n is None else float(got) == n


@pytest.mark.parametrize("text,said", [
    ("A quick look at the figure. So the answer is (B).", "(B)."),
    ("The answer is B. Because 145 is the angle.", "B."),
    ("Answer: quarter to\nDone.", "quarter to"),
    ("the final answer is [2, 3].", "[2, 3]."),
    ("A is wrong and B is wrong too.", None),
    ("So the answer is: B", "B"),
    ("Hence the correct option is (D).", "(D)."),
    ("**Answer:** C", "** C"),
])
def test_anchored_statement(text, said):
    assert anchored_statement(text) == said


def test_text_key_strips_latex_dressing():
    assert text_key("$\\text{Quarter} \\; To$.") == text_key("quarter to")


# -- the verifier ----------------------------------------------------------------------------------

def _p(kind, answer, choices=(), precision=None):
    return Problem("p", "q", answer, {"answer_kind": kind, "choices": list(choices), "precision": precision})


@pytest.fixture
def typed():
    v = TypedVerifier(workers=1)
    yield v
    v.close()


@pytest.mark.parametrize("completion,correct,outcome", [
    ("... so \\boxed{C}", True, "correct"),
    ("... so \\boxed{(C)}", True, "correct"),
    ("... \\boxed{C.}", True, "correct"),
    ("<think>angles add up</think> \\boxed{145^\\circ}", True, "correct"),
    ("A triangle's angles sum to 180, so the answer is C.", True, "correct"),  # letter in a sentence
    ("A triangle's angles sum to 180, so it is C.", False, "no_answer"),        # no anchor: not read
    ("A is tempting.", False, "no_answer"),
    ("the answer is A triangle", False, "wrong"),
    ("\\boxed{C} or maybe \\boxed{A}", False, "hedge"),
    ("\\boxed{A}", False, "wrong"),
    ("\\boxed{147}", False, "wrong"),
    ("\\boxed{}", False, "no_answer"),
])
def test_verifier_multiple_choice(typed, completion, correct, outcome):
    v = typed.score(_p("choice", "C", ANGLES), [completion])[0]
    assert (v.correct, v.outcome) == (correct, outcome)
    assert v.info["kind"] == "choice"


def test_verifier_numbers_and_cut_off(typed):
    p = _p("float", "3.14", precision=2)
    got = typed.score_many([(p, ["\\boxed{3.142}", "\\boxed{3.1}", "so it is about 3.142", "it is 3."])],
                           cut_off=[[False, False, False, True]])[0]
    assert [v.correct for v in got] == [True, False, True, False]
    assert got[3].outcome == "truncated"
    ints = typed.score(_p("integer", "5"), ["\\boxed{5.0}", "\\boxed{5.5}"])
    assert [v.correct for v in ints] == [True, False]


def test_verifier_hands_free_form_math_to_math_verify(typed):
    got = typed.score(_p("math", "2\\sqrt{3}"), ["\\boxed{\\sqrt{12}}", "\\boxed{3.46}", "\\boxed{2\\sqrt{3}}"])
    assert [v.correct for v in got] == [True, False, True]
    assert got[0].info["kind"] == "math"


def test_verifier_reads_the_answer_after_the_think_block(typed):
    p = _p("choice", "C", ANGLES)
    got = typed.score(p, ["<think>maybe \\boxed{A}</think> \\boxed{C}",   # the draft box is not a hedge
                          "<think>it is \\boxed{C}</think>",                # nothing after: the whole text
                          "<think>it is \\boxed{C}</think> The answer is A.",  # what follows counts
                          "maybe \\boxed{A}, no: \\boxed{C}"])              # no think block: a hedge
    assert [(v.correct, v.outcome) for v in got] == [(True, "correct"), (True, "correct"),
                                                     (False, "wrong"), (False, "hedge")]
    math = typed.score(_p("math", "2\\sqrt{3}"), ["<think>\\boxed{3}</think> \\boxed{2\\sqrt{3}}"])
    assert math[0].correct


def test_verifier_needs_an_answer_kind(typed):
    with pytest.raises(ValueError, match="answer_kind"):
        typed.score(Problem("x", "q", "1", {}), ["\\boxed{1}"])


def test_verify_typed_block_reaches_the_verifier():
    # `verify.typed.extraction=boxed` (the RL reward rule): an unboxed "answer is" no longer counts.
    from omegaconf import OmegaConf

    from boundlab.config import VerifyConfig
    from boundlab.verify import build_verifier, verifier_options

    cfg = OmegaConf.structured(VerifyConfig)
    cfg.typed.extraction = "boxed"
    opts = verifier_options("typed", cfg)
    assert opts["extraction"] == "boxed" and opts["workers"] == 2
    with build_verifier("typed", **opts) as v:
        got = v.score(_p("choice", "C", ANGLES), ["the answer is C.", "\\boxed{C}"])
        assert [(x.correct, x.outcome) for x in got] == [(False, "no_answer"), (True, "correct")]
        assert v.identity()["settings"]["extraction"] == "boxed"
