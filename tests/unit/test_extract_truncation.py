"""Cut-off completions in the probe: the finish flag reaches the verifier, the shares are counted,
and a large truncated share warns with the setting to change."""

from boundlab.probe.answer_stats import AnswerStats, answer_stats, summary_lines
from boundlab.probe.runner import _verify_and_store
from boundlab.probe.store import Store
from boundlab.sampling.base import Completion
from boundlab.tasks.base import Problem
from boundlab.verify import build_verifier


def test_cut_off_completions_are_stored_truncated_and_counted(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.ensure_probe("k", "m", "t", {})
    p = Problem("p1", "q", "284")
    comps = [
        Completion("Given the sum of the proper divisors of 284, the", 32, "length"),
        Completion(r"so it is $\boxed{284}$ and then", 32, "length"),
        Completion(r"The sum is \boxed{284}.", 10, "eos"),
        Completion("The answer is 284.", 8, "eos"),
    ]
    v = build_verifier("math", workers=1)
    try:
        _verify_and_store(v, store, "k", [(p, 0, 4)], [comps])
    finally:
        v.close()
    rows = store.samples("k")
    assert [(r.outcome, r.correct) for r in rows] == [("truncated", False), ("correct", True),
                                                     ("correct", True), ("correct", True)]
    assert rows[0].extracted is None and rows[0].info == {"answer_from": "truncated", "finish": "length"}
    stats = answer_stats(store, "k")
    assert stats == AnswerStats(samples=4, boxed=2, truncated=1)
    assert answer_stats(store, "k", n_max=1) == AnswerStats(samples=1, boxed=0, truncated=1)
    store.close()


def test_summary_warns_above_ten_percent():
    assert summary_lines(AnswerStats(10, 5, 1), 32) == [
        "  answers: 50.0% with a box, 10.0% truncated (cut off with no final answer; 1 of 10)"]
    assert summary_lines(AnswerStats(10, 0, 9), 32)[1] == (
        "  warning: 90% of completions were cut off before a final answer: "
        "raise probe.max_new_tokens=32")
    assert summary_lines(None) == []
