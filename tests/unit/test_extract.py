"""Answer extraction from math completions."""

import time

from boundlab.verify.extract import all_boxes, extract_math_answer, last_boxed


def test_nested_braces():
    assert last_boxed(r"so \boxed{\frac{1}{\sqrt{2}}} done") == r"\frac{1}{\sqrt{2}}"


def test_last_of_several_boxes():
    assert last_boxed(r"\boxed{1} then \boxed{2}, finally \boxed{x^{2}}") == "x^{2}"


def test_no_box():
    assert last_boxed("no boxes here") is None


def test_unclosed_last_box_falls_back_to_earlier_one():
    assert last_boxed(r"\boxed{7} and then \boxed{\frac{1}{2}") == "7"


def test_fbox_and_braceless_box():
    assert last_boxed(r"\fbox{3}") == "3"
    assert last_boxed(r"$\boxed 5$") == "5"


def test_fallbacks_answer_is_then_last_number():
    assert extract_math_answer("Thus, the answer is 17.") == "17"
    assert extract_math_answer("The answer is $\\frac{3}{4}$.") == "\\frac{3}{4}"
    assert extract_math_answer("we get 3 and then 1,000 apples") == "1000"
    assert extract_math_answer("nothing numeric") is None


def test_box_beats_phrase_and_numbers():
    assert extract_math_answer(r"the answer is 3 or \boxed{4} then 5") == "4"


def test_pathological_inputs_are_linear():
    deep = "\\boxed{" + "{" * 10000 + "1" + "}" * 10000 + "}"
    many_unclosed = "\\boxed{" * 20000
    huge = "\\boxed{" + "9" * 100_000 + "}"
    for text in (deep, many_unclosed, huge, "x" * 1_000_000):
        # CPU time, not wall time: a loaded machine stretches the wall clock, not the work done.
        t = time.process_time()
        extract_math_answer(text)
        assert time.process_time() - t < 0.5


def test_closing_brace_scan_matches_the_one_pass_brace_map():
    # all_boxes finds a box's closing brace by scanning from the box on (few boxes) or from one
    # pass over the text (many): the same brace either way, on random brace soup.
    import random

    from boundlab.verify.extract import _closing_brace, _matching_braces

    rng = random.Random(0)
    for _ in range(5000):
        t = "".join(rng.choice("{}ab\\ ") for _ in range(rng.randint(0, 40)))
        pairs = _matching_braces(t)
        for j, ch in enumerate(t):
            if ch == "{":
                assert _closing_brace(t, j) == pairs.get(j), (t, j)
    few = "a } \\boxed{x{y}} and \\boxed{z"
    many = few + " \\boxed{1}" * 6
    assert all_boxes(few) == [(4, 16, "x{y}")]
    assert all_boxes(many)[:1] == [(4, 16, "x{y}")] and len(all_boxes(many)) == 7
