"""Issue 22: what the model wrote is what gets judged (every bullet of the issue's "Why").

Each case goes through the math verifier, the way a probe scores a completion.
"""

import pytest

from boundlab.tasks.base import Problem
from boundlab.verify import build_verifier
from boundlab.verify.extract import extract, extract_math_answer, final_boxes
from boundlab.verify.math_rules import answer_units, split_gold


@pytest.fixture(scope="module")
def verifier():
    v = build_verifier("math", workers=1, deadline_s=5.0)
    yield v
    v.close()


@pytest.fixture(scope="module")
def boxed_verifier():
    v = build_verifier("math", workers=1, deadline_s=5.0, extraction="boxed")
    yield v
    v.close()


def judge(v, gold, completion, cut_off=False):
    return v.score_many([(Problem("p", "q", gold), [completion])], cut_off=[[cut_off]])[0][0]


# -- no digit pulled out of an expression --------------------------------------------------------
@pytest.mark.parametrize("gold,completion", [
    ("2", r"Therefore, the answer is $\frac{1+\sqrt{5}}{2}$."),
    ("3", r"$\sqrt{3}$"),
    ("1", r"The set is $[0,1)$."),
    ("1", "The set is [0,1)."),
    ("2", "So the value is 2x."),
])
def test_no_number_out_of_a_larger_expression(verifier, gold, completion):
    v = judge(verifier, gold, completion)
    assert (v.correct, v.outcome) == (False, "wrong" if v.extracted else "no_answer"), v


def test_the_whole_expression_is_the_answer(verifier):
    v = judge(verifier, "2", r"Therefore, the answer is $\frac{1+\sqrt{5}}{2}$.")
    assert v.extracted == r"\frac{1+\sqrt{5}}{2}"
    assert judge(verifier, "1", "The set is $[0,1)$.").extracted == "[0,1)"


# -- every box; hedges get no credit -------------------------------------------------------------
def test_hedge_between_boxes_is_wrong(verifier):
    v = judge(verifier, "5", r"It is \boxed{3} or maybe \boxed{5}.")
    assert (v.correct, v.outcome, v.extracted) == (False, "hedge", "3, 5")


def test_several_boxes_against_a_multi_answer_gold_are_a_set(verifier):
    v = judge(verifier, "1, 2", r"The solutions are $\boxed{1}$ and $\boxed{2}$.")
    assert (v.correct, v.outcome) == (True, "correct"), v
    # Order does not matter; a missing answer does.
    assert judge(verifier, "1, 2", r"They are $\boxed{2}$ and $\boxed{1}$.").correct
    assert not judge(verifier, "1, 2, 3", r"They are $\boxed{2}$ and $\boxed{1}$.").correct
    assert not judge(verifier, "1, 2", r"They are $\boxed{1}$ and $\boxed{3}$.").correct


def test_equal_boxes_are_not_a_hedge(verifier):
    v = judge(verifier, r"\frac{1}{2}", r"So $\boxed{\frac12}$, i.e. $\boxed{0.5}$.")
    assert (v.correct, v.outcome) == (True, "correct"), v


def test_only_the_final_statement_counts():
    text = "First, \\boxed{7} is the sum.\n\nSo the answer is $\\boxed{12}$."
    assert final_boxes(text) == ["12"]
    assert extract(text).answers == ("12",)


def test_gold_splitting():
    assert split_gold("1, 2") == ["1", "2"]
    assert split_gold(r"\{1, 2\}") == ["1", "2"]
    assert split_gold("$${1,2,3}$$") == ["1", "2", "3"]
    assert split_gold("(1,2)") == ["(1,2)"]  # a point is one answer
    assert split_gold("1,000") == ["1,000"]  # a thousands separator is not a list
    assert split_gold("[0,1)") == ["[0,1)"]
    assert answer_units("5", ["3", "5"]) == ["3", "5"]
    assert answer_units("1, 2", ["1", "2"]) == ["1, 2"]


# -- final-answer statements and numbers read as math-verify reads them ---------------------------
def test_final_answer_statement_fraction(verifier):
    v = judge(verifier, "10/9", r"So the final answer is \(\frac{10}{9}\).")
    assert (v.correct, v.extracted) == (True, r"\frac{10}{9}"), v


def test_thousands_separators_only_in_groups_of_three(verifier):
    assert judge(verifier, "1000", "The total is 1 000 apples.").extracted == "1000"
    assert judge(verifier, "1000", "The total is 1 000 apples.").correct
    assert judge(verifier, "7425000", "That makes 7,425,000.").correct
    assert extract_math_answer("we get 3 and then 1,000 apples") == "1000"


# -- the boxed rule ------------------------------------------------------------------------------
def test_boxed_rule_reads_boxes_only(verifier, boxed_verifier):
    prose = "Thus, the answer is 17."
    assert judge(verifier, "17", prose).correct
    v = judge(boxed_verifier, "17", prose)
    assert (v.correct, v.outcome, v.extracted) == (False, "no_answer", None)
    assert judge(boxed_verifier, "17", r"Thus, the answer is $\boxed{17}$.").correct


def test_unknown_extraction_rule_is_refused():
    with pytest.raises(ValueError, match="verify.math.extraction must be one of lenient, boxed"):
        build_verifier("math", extraction="loose")


# -- a cut-off completion has no final answer ----------------------------------------------------
def test_cut_off_completion_is_truncated_not_scored_by_a_fallback(verifier):
    cut = "Given the sum of the proper divisors of 284, we first list the divisors: 1, 2, 4, 71, and 142. The"
    v = judge(verifier, "142", cut, cut_off=True)
    assert (v.correct, v.outcome, v.extracted) == (False, "truncated", None)
    assert v.info == {"answer_from": "truncated"}
    # The same text, not cut off, is read by the fallback (and here happens to be right).
    assert judge(verifier, "142", cut.rsplit(" The", 1)[0], cut_off=False).correct


def test_cut_off_completion_keeps_a_stated_or_boxed_answer(verifier):
    assert judge(verifier, "17", "The answer is 17. Let me double-check: 17 * 3 =", cut_off=True).correct
    v = judge(verifier, "17", r"So $\boxed{17}$. Checking again, 17 * 3 = 5", cut_off=True)
    assert (v.correct, v.info) == (True, {"answer_from": "boxed", "boxed": True})
    # An unclosed box at the cut is no box.
    assert judge(verifier, "17", r"so the result is \boxed{1", cut_off=True).outcome == "truncated"
