"""Answer diversity (issue 39) by hand, and read from a real store over the first n samples."""

import math

import pytest

from boundlab.probe.diversity import problem_diversity, store_diversity, summarize
from boundlab.probe.store import SampleRow, Store


def test_one_problem_by_hand():
    d = problem_diversity(["4", "4", "5", None, "6", ""])
    # Answered: 4, 4, 5, 6 -> 3 distinct; p = (1/2, 1/4, 1/4).
    assert (d.samples, d.answered, d.distinct) == (6, 4, 3)
    assert d.entropy == pytest.approx(-(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)), abs=1e-15)
    assert d.top_share == 0.5
    one = problem_diversity(["7"] * 5)
    assert (one.distinct, one.entropy, one.top_share) == (1, 0.0, 1.0)
    assert problem_diversity([None, None]).answered == 0


def test_summary_leaves_out_problems_without_answers():
    per = {"a": problem_diversity(["1", "2"]), "b": problem_diversity(["3", "3"]),
           "c": problem_diversity([None, None])}
    s = summarize(per)
    assert s["distinct_answers"] == 1.5
    assert s["answer_entropy"] == pytest.approx(math.log(2) / 2)
    assert s["top_answer_share"] == 0.75
    assert s["no_answer_share"] == pytest.approx(2 / 6)
    assert summarize(per, ["c"]) == {"distinct_answers": None, "answer_entropy": None,
                                     "top_answer_share": None, "no_answer_share": None}


def test_read_from_a_store_over_the_first_n(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.ensure_probe("k", "m", "t", {})
    answers = {"p1": ["1", "1", "2", "9"], "p2": ["5", None, "5", "5"]}
    store.add_samples("k", [SampleRow(pid, i, f"A:{a}", a, a == "1", None, "ok", 3)
                            for pid, xs in answers.items() for i, a in enumerate(xs)])
    per = store_diversity(store, "k", n_max=3)  # the 9 at idx 3 is not read
    assert per["p1"].distinct == 2 and per["p1"].answered == 3
    assert per["p2"].distinct == 1 and per["p2"].samples == 3
    assert store_diversity(store, "k")["p1"].distinct == 3
    store.close()
