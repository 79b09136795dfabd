"""The report's boxed-vs-lenient table: stored completions rescored under both rules."""

from boundlab.probe.store import SampleRow, Store
from boundlab.report.answer_rules import answer_rule_rows
from boundlab.tasks.base import Problem, Task


def test_rescoring_under_both_rules(tmp_path):
    task = Task("t", [Problem("a", "q", "17"), Problem("b", "q", "5")], verifier="math")
    store = Store(tmp_path / "s.sqlite")
    # The "base" states answers in prose; the "trained" model boxes them.
    base = [("a", "The answer is 17."), ("a", "I think 12."), ("b", "So it is 5."),
            ("b", r"It is $\boxed{4}$.")]
    trained = [("a", r"$\boxed{17}$"), ("a", r"$\boxed{17}$"), ("b", r"$\boxed{4}$"),
               ("b", "Given 5 apples and")]
    for key, rows in (("base", base), ("trained", trained)):
        store.ensure_probe(key, key, "t", {})
        idx = {}
        samples = []
        for pid, text in rows:
            i = idx.get(pid, 0)
            idx[pid] = i + 1
            cut = key == "trained" and text.startswith("Given")
            samples.append(SampleRow(pid, i, text, None, False, None, "wrong", 5,
                                     {"finish": "length"} if cut else None))
        store.add_samples(key, samples)
    rows = answer_rule_rows(store, [("base", "base"), ("trained", "trained")], task, ["a", "b"],
                            None, workers=1)
    store.close()
    assert rows == [
        # base: lenient reads both prose answers (a: 1 of 2, b: 1 of 2); boxed sees one wrong box.
        ["base", "lenient", 2, 0.5, 1.0, 0.25, 0.0],
        ["base", "boxed", 2, 0.0, 0.0, 0.25, 0.0],
        # trained: the cut-off "Given 5 apples" is truncated under both rules, never 5.
        ["trained", "lenient", 2, 0.5, 0.5, 0.75, 0.25],
        ["trained", "boxed", 2, 0.5, 0.5, 0.75, 0.25],
    ]
