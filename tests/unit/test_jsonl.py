"""JSONL problems and external-sample files: bad lines name the file and the line."""

import json

import pytest

from boundlab.probe.runner import read_samples_file
from boundlab.tasks import build_task
from boundlab.tasks.base import Problem, Task
from boundlab.tasks.jsonl import DataError, load_jsonl_problems


def write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_loads_prompt_or_question_and_keeps_tags(tmp_path):
    f = write(tmp_path / "p.jsonl", [
        json.dumps({"problem_id": "a", "prompt": "1+1?", "answer": "2", "level": 1}),
        "",
        json.dumps({"problem_id": 7, "question": "2+2?", "answer": 4}),
    ])
    ps = load_jsonl_problems(f)
    assert [p.problem_id for p in ps] == ["a", "7"]
    assert ps[0].meta == {"level": 1} and ps[1].answer == "4"


@pytest.mark.parametrize("bad,msg", [
    ('{"problem_id": "a", "prompt": "x", "answer": "1"', "bad JSON"),
    ('{"prompt": "x", "answer": "1"}', "missing field 'problem_id'"),
    ('{"problem_id": "b", "answer": "1"}', "missing field 'prompt'"),
    ('{"problem_id": "b", "prompt": "x"}', "missing field 'answer'"),
    ('[1, 2]', "expected a JSON object"),
    ('{"problem_id": "a", "prompt": "x", "answer": "1"}', "duplicate problem_id"),
])
def test_bad_problem_lines(tmp_path, bad, msg):
    f = write(tmp_path / "p.jsonl", [json.dumps({"problem_id": "a", "prompt": "x", "answer": "1"}), bad])
    with pytest.raises(DataError) as e:
        load_jsonl_problems(f)
    assert f"{f}:2:" in str(e.value) and msg in str(e.value)


def test_missing_file_is_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="data file not found"):
        load_jsonl_problems(tmp_path / "nope.jsonl")


def test_jsonl_task_through_registry(tmp_path):
    f = write(tmp_path / "p.jsonl", [json.dumps({"problem_id": "a", "prompt": "x", "answer": "1"})])
    cfg = type("C", (), {"name": "jsonl", "path": str(f), "template": None, "chat": None,
                         "system": None, "verifier": None, "limit": None})()
    task = build_task(cfg)
    assert task.verifier == "math" and len(task) == 1


TASK = Task("t", [Problem("a", "q", "1"), Problem("b", "q", "2")])


@pytest.mark.parametrize("bad,msg", [
    ("not json", "bad JSON"),
    (json.dumps({"problem_id": "zzz", "completion": "x"}), "unknown problem_id 'zzz'"),
    (json.dumps({"problem_id": "a"}), "missing field 'completion'"),
    (json.dumps({"completion": "x"}), "missing field 'problem_id'"),
    (json.dumps({"problem_id": "a", "completion": 3}), "must be a string"),
])
def test_bad_sample_lines(tmp_path, bad, msg):
    f = write(tmp_path / "s.jsonl", [json.dumps({"problem_id": "a", "completion": "ok"}), bad])
    with pytest.raises(DataError) as e:
        read_samples_file(f, TASK)
    assert f"{f}:2:" in str(e.value) and msg in str(e.value)


def test_samples_grouped_per_problem_with_uneven_counts(tmp_path):
    f = write(tmp_path / "s.jsonl", [json.dumps({"problem_id": pid, "completion": str(i)})
                                     for i, pid in enumerate("aab")])
    assert read_samples_file(f, TASK) == {"a": ["0", "1"], "b": ["2"]}


def test_mmath_tasks_have_expected_sizes():
    def cfg(name):
        return type("C", (), {"name": name, "template": None, "chat": None, "system": None,
                              "verifier": None, "limit": None})()
    names = ("aime24", "aime25", "math500", "math500_int", "gsm8k", "minerva", "olympiadbench", "amc23")
    sizes = {name: len(build_task(cfg(name))) for name in names}
    assert sizes == {"aime24": 30, "aime25": 15, "math500": 500, "math500_int": 311, "gsm8k": 1319,
                     "minerva": 272, "olympiadbench": 675, "amc23": 40}
    t = build_task(cfg("aime24"))
    assert t.by_id("aime24-0").answer == "204"
    assert "\\boxed{}" in t.render(t.problems[0])


def test_with_problems_keeps_everything_but_the_problems():
    t = Task("t", [Problem("a", "q", "1"), Problem("b", "q", "2")], template="Q:{question}",
             verifier="exact", chat=True, system="s")
    sub = t.with_problems(t.problems[1:])
    assert [p.problem_id for p in sub.problems] == ["b"] and sub.has("b") and not sub.has("a")
    assert (sub.name, sub.template, sub.verifier, sub.chat, sub.system) == ("t", "Q:{question}", "exact", True, "s")
