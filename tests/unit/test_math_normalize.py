"""Issue #11's misreadings, with its real strings: thin-space thousands, empty boxes, `\\textbf{(073)}`,
number words. Each case is checked through the whole math verifier (extraction, normalization,
math-verify in a worker), and the plain math-verify reading that made it a bug is pinned too."""

import pytest

from boundlab.tasks.base import Problem
from boundlab.verify import build_verifier
from boundlab.verify.extract import extract
from boundlab.verify.math import MathVerifier
from boundlab.verify.math_worker import plain_math_verify
from boundlab.verify.normalize import join_thousands, normalize_answer, number_word_answer, unwrap_text_number


@pytest.fixture(scope="module")
def verifier():
    v = build_verifier("math", workers=1, deadline_s=2.0)
    yield v
    v.close()


def judge(v, gold, completion):
    out = v.score(Problem("p", "q", gold), [completion])[0]
    return out.outcome


SEPARATORS = [r"2\,220", r"2\;220", r"2\ 220", "2~220", "2{,}220"]


@pytest.mark.parametrize("boxed", SEPARATORS)
def test_thousands_in_latex_spacing(verifier, boxed):
    completion = rf"So the total is $\boxed{{{boxed}}}$."
    assert judge(verifier, "2220", completion) == "correct"
    assert judge(verifier, "222", completion) == "wrong"  # was a false positive
    assert judge(verifier, "2220.0", completion) == "correct"  # not the integer fast path


def test_plain_math_verify_misreads_thin_space():
    """The reason for the fix (math-verify 0.9): `2\\,220` is 222 to it."""
    assert not plain_math_verify("2220", r"2\,220")
    assert plain_math_verify("222", r"2\,220")


@pytest.mark.parametrize("raw,norm", [
    (r"1\,000\,000", "1000000"), (r"10,\!000", "10000"), (r"-3\,500", "-3500"),
    (r"12\,345.5", "12345.5"),
    # not thousands: left alone
    (r"(1,\,2)", r"(1,\,2)"), (r"x\,220", r"x\,220"), (r"3.14\,159", r"3.14\,159"), (r"2\,22", r"2\,22"),
    (r"1234\,567", r"1234\,567"),
])
def test_join_thousands_only_where_unambiguous(raw, norm):
    assert join_thousands(raw) == norm


def test_empty_box_is_no_answer(verifier):
    # The last number in the text is the gold: the old fallback credited it.
    completion = r"We need 2+2 = 4 apples, so the answer is in the box: \boxed{}"
    assert judge(verifier, "4", completion) == "no_answer"
    assert extract(completion).source == "empty_box"
    assert judge(verifier, "4", r"Total: 4. $\boxed{ }$") == "no_answer"
    assert extract(r"\boxed{}", "boxed").answers == ()
    # An explicit answer statement still counts (lenient only), after the empty box or before
    # it: a real SmolLM2-135M completion on gsm8k-1 echoes the prompt after stating its answer.
    assert judge(verifier, "4", r"\boxed{} Oops. The answer is 4.") == "correct"
    smol = ("So, the answer is 4.\n\nThis is a simple example of how to reason step-by-step and put your "
            "final answer within \\boxed{}.")
    assert judge(verifier, "4", smol) == "correct" and judge(verifier, "3", smol) == "wrong"
    assert extract(smol, "boxed").answers == () and extract(smol, "boxed").source == "empty_box"
    # "the final answer is $\boxed{}$" states nothing.
    assert extract(r"We get 5, so the final answer is $\boxed{}$.") == extract(r"\boxed{}")
    assert extract(r"\boxed{}").source == "empty_box"
    # A non-empty box in the same final statement is still the answer.
    assert judge(verifier, "4", r"\boxed{4} \boxed{}") == "correct"


@pytest.mark.parametrize("completion", [r"\boxed{\textbf{(073)}}", r"\boxed{\text{(073)}}",
                                        r"\boxed{\textbf{073}}", r"\boxed{\text{ 73 }}", r"\boxed{\mathbf{(73)}}"])
def test_text_wrapped_number_unwraps(verifier, completion):
    assert judge(verifier, "73", completion) == "correct"
    assert judge(verifier, "72", completion) == "wrong"


def test_text_wrapper_without_a_number_is_untouched(verifier):
    assert unwrap_text_number(r"\text{(C)}") == r"\text{(C)}"
    assert normalize_answer(r"\text{east}") == r"\text{east}"
    assert judge(verifier, r"\text{(C)}", r"\boxed{\text{(C)}}") == "correct"
    assert not plain_math_verify("73", r"\textbf{(073)}")  # math-verify's reading: a symbol


@pytest.mark.parametrize("completion,gold", [
    ("The answer is nine.", "9"), ("So the final answer is Twenty!", "20"), ("Answer: **zero**", "0"),
    ("I counted 4 cats and 5 dogs. The answer is nine.", "9"), ("the answer is eleven", "11"),
])
def test_number_words_up_to_twenty(verifier, completion, gold):
    assert judge(verifier, gold, completion) == "correct"


@pytest.mark.parametrize("completion", [
    "The answer is one of the two choices, 7.",  # a word that starts a phrase is not the answer
    "The answer is twenty-one.", "The answer is nine apples and 3 pears",
])
def test_number_words_policy_limits(completion):
    assert number_word_answer(completion) is None


def test_number_words_only_in_lenient_mode_and_boxes_win(verifier):
    assert extract("The answer is nine.", "boxed").answers == ()
    assert extract(r"\boxed{8}. The answer is nine.").answers == ("8",)
    # The last anchored statement decides: a later digit statement wins over an earlier word.
    assert extract("The answer is nine. Wait, the answer is 8.").answers == ("8",)


def test_version_bumped():
    assert MathVerifier.version == 4  # 4: Minerva's per-problem relative tolerance


@pytest.mark.parametrize("raw,norm", [("4.5e33", r"4.5 \times 10^{33}"), ("-2E-05", r"-2 \times 10^{-5}"),
                                      ("e3", "e3"), ("2e3x", "2e3x"), (r"4.5e33 \text{ erg}", r"4.5e33 \text{ erg}")])
def test_e_notation_only_for_a_whole_number(raw, norm):
    assert normalize_answer(raw) == norm


def test_plain_math_verify_reads_e_notation_as_euler():
    assert not plain_math_verify("4.5e33", r"4.5 \times 10^{33}")


def test_every_minerva_e_notation_gold(verifier):
    """Minerva's 58 e-notation golds accept the number in LaTeX and reject it off by 10x."""
    import re

    import boundlab.builtins  # noqa: F401
    from boundlab.tasks import TASKS

    golds = [p for p in TASKS.get("minerva")(None).problems if re.search(r"\de[-+]?\d", p.answer)]
    assert len(golds) == 58
    items = []
    for p in golds:
        m, k = re.fullmatch(r"(-?[\d.]+)e([-+]?\d+)", p.answer).groups()
        items.append((p, [rf"\boxed{{{m} \times 10^{{{int(k)}}}}}", rf"\boxed{{{m} \times 10^{{{int(k) + 1}}}}}",
                          rf"\boxed{{{p.answer}}}"]))
    out = verifier.score_many(items)
    assert [[v.outcome for v in row] for row in out] == [["correct", "wrong", "correct"]] * 58


def test_small_numbers_are_not_equal_by_rounding(verifier):
    """math-verify rounds to 6 decimals: to it, 2.88e-19 equals 2.88e-18. We compare such pairs to
    6 significant digits."""
    assert plain_math_verify(r"2.88 \times 10^{-19}", r"2.88 \times 10^{-18}")  # the reason
    gold = Problem("p", "q", "2.88e-19")
    out = verifier.score(gold, [r"\boxed{2.88 \times 10^{-18}}", r"\boxed{0.000000000000000000288}",
                                r"\boxed{2.88\cdot 10^{-19}}", r"\boxed{2.9 \times 10^{-19}}"])
    assert [v.outcome for v in out] == ["wrong", "correct", "correct", "wrong"]
    # Above 1e-3 math-verify decides, as before.
    assert judge(verifier, "0.5", r"\boxed{\frac{1}{2}}") == "correct"
    assert judge(verifier, "0.001", r"\boxed{10^{-3}}") == "correct"
