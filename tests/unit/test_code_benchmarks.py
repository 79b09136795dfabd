"""The code benchmarks' loaders (HumanEval+, MBPP+, LiveCodeBench), on fixtures written in each
benchmark's official row format (tests/data/code_benchmarks/make_fixtures.py). No sandbox here:
tests/integration/test_code_benchmarks_sandbox.py runs the programs."""

import base64
import json
import pickle
import pickletools
import zlib
from pathlib import Path

import pytest

import boundlab.builtins  # noqa: F401
from boundlab.config import TaskConfig, as_typed
from boundlab.tasks import TASKS, build_task
from boundlab.tasks.evalplus import load_evalplus
from boundlab.tasks.jsonl import DataError
from boundlab.tasks.livecodebench import PREAMBLE, decode_private, load_livecodebench
from boundlab.verify import evalplus

D = Path(__file__).parents[1] / "data" / "code_benchmarks"
HE, MBPP = D / "HumanEvalPlus-fixture.jsonl.gz", D / "MbppPlus-fixture.jsonl"
LCB, BAD = D / "lcb-fixture.jsonl", D / "lcb-malicious.jsonl"
PWNED = Path("/tmp/boundlab-lcb-pickle-ran")


def cfg(name, **kw):
    """The task config a factory gets: the general keys and its own block (evalplus={...}, ...)."""
    return as_typed({"name": name, **kw}, TaskConfig)


def test_humaneval_plus_rows_from_the_gzipped_release_format():
    task = build_task(cfg("humaneval_plus", path=str(HE)))
    assert task.name == "humaneval_plus" and len(task) == 4 and task.verifier == "code"
    fib = task.by_id("HumanEval/55")
    assert fib.meta["kind"] == "evalplus" and fib.meta["dataset"] == "humaneval"
    assert fib.meta["base_input"] == [[10], [1], [11], [8]] and fib.meta["plus_input"][0] == [0]
    assert task.render(fib) == fib.question and fib.question.startswith("def fib(n: int):")
    base = build_task(cfg("humaneval_plus", path=str(HE), evalplus={"tests": "base"}))
    assert base.name == "humaneval_plus-base" and base.by_id("HumanEval/55").meta["plus_input"] == []
    assert base.fingerprint() != task.fingerprint()


def test_mbpp_plus_inputs_are_rebuilt_per_task_id_as_evalplus_does():
    mb = {p.problem_id: p for p in load_evalplus(MBPP, "mbpp")}
    ins = evalplus.all_inputs(mb["Mbpp/2"])  # Mbpp/2: every argument is a tuple
    assert ins["base"][0] == [(3, 4, 5, 6), (5, 7, 4, 10)]
    assert evalplus.all_inputs(mb["Mbpp/900"])["base"] == [[10], [4]]  # no rule: as stored
    assert mb["Mbpp/900"].meta["atol"] == 0.01


def test_missing_release_file_is_one_line_naming_what_to_get(tmp_path):
    for name, file in (("humaneval_plus", "HumanEvalPlus.jsonl.gz"), ("mbpp_plus", "MbppPlus.jsonl.gz"),
                       ("livecodebench", "test5.jsonl")):
        with pytest.raises(DataError) as e:
            TASKS.get(name)(cfg(name, path=str(tmp_path / "nope.jsonl")))
        msg = str(e.value)
        assert "\n" not in msg and file in msg and "task.path=" in msg and "nope.jsonl" in msg
        assert "github.com/evalplus" in msg or "livecodebench/code_generation_lite" in msg


@pytest.mark.parametrize("row,msg", [
    ({"task_id": "x", "entry_point": "f", "prompt": "", "canonical_solution": "",
      "base_input": [1], "plus_input": []}, "list of argument lists"),
    ({"task_id": "x", "entry_point": "f g", "prompt": "", "canonical_solution": "",
      "base_input": [[1]], "plus_input": []}, "identifier"),
    ({"task_id": "x", "entry_point": "f", "prompt": "", "canonical_solution": "",
      "base_input": [[1]], "plus_input": [], "atol": -1}, "atol"),
])
def test_bad_evalplus_rows_name_file_and_line(tmp_path, row, msg):
    p = tmp_path / "x.jsonl"
    p.write_text("\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError, match=rf"x.jsonl:2: .*{msg}"):
        load_evalplus(p, "humaneval")


def test_livecodebench_rows_dates_tests_prompt_and_tags():
    probs = {p.problem_id: p for p in load_livecodebench(LCB, "2024-08-01", "2025-02-01")}
    assert sorted(probs) == ["3901", "abc372_a"]  # abc300_a (2023-04-29) is outside the window
    assert len(load_livecodebench(LCB)) == 3
    assert [p.problem_id for p in load_livecodebench(LCB, "2024-09-21", "2024-09-21")] == ["abc372_a"]
    fn, sd = probs["3901"], probs["abc372_a"]
    assert fn.meta["kind"] == "lcb_functional" and fn.meta["func_name"] == "addK"
    assert {k: fn.meta[k] for k in ("platform", "difficulty", "contest_date")} == \
        {"platform": "leetcode", "difficulty": "easy", "contest_date": "2024-09-15"}
    assert "### Format: You will use the following starter code" in fn.question
    assert "def addK(self, nums: List[int], k: int)" in fn.question
    assert "Read the inputs from stdin" in sd.question and "# YOUR CODE HERE" in sd.question
    # public then the decompressed private tests
    assert sd.meta["kind"] == "stdio" and [c[0] for c in sd.meta["cases"]] == \
        ["3\n1 2 3\n", "1\n-5\n", "2\n1000000000 1000000000\n"]
    assert sd.meta["preamble"] == PREAMBLE and "from typing import *" in PREAMBLE
    assert "[[], 5]" in fn.meta["test"] and "[[-1], 1]" in fn.meta["test"]
    task = build_task(cfg("livecodebench", path=str(LCB), livecodebench={"date_from": "2024-08-01"}))
    assert task.chat and task.system.startswith("You are an expert Python programmer")


def test_malicious_pickle_is_refused_in_one_line_and_nothing_runs():
    row = json.loads(BAD.read_text())
    blob = zlib.decompress(base64.b64decode(row["private_test_cases"]))
    ops = [op.name for op, _, _ in pickletools.genops(blob)]
    assert "REDUCE" in ops and ("STACK_GLOBAL" in ops or "GLOBAL" in ops)  # it is a real payload
    if PWNED.exists():
        PWNED.unlink()
    with pytest.raises(DataError) as e:
        load_livecodebench(BAD)
    msg = str(e.value)
    assert "\n" not in msg and "abc999_z" in msg and "lcb-malicious.jsonl:1" in msg
    assert "not a plain string" in msg
    assert not PWNED.exists()


def test_a_pickle_of_anything_but_a_string_is_refused():
    packed = base64.b64encode(zlib.compress(pickle.dumps([{"input": "1", "output": "1"}]))).decode()
    with pytest.raises(DataError, match="row 7: private_test_cases refused: the pickle holds a list"):
        decode_private("row 7", packed)
    good = base64.b64encode(zlib.compress(pickle.dumps('[{"input": "1"}]'))).decode()
    assert decode_private("r", good) == [{"input": "1"}]
    with pytest.raises(DataError, match="neither JSON nor base64"):
        decode_private("r", "@@@ not base64 @@@")


def test_cache_key_is_content_addressed():
    a = load_evalplus(HE, "humaneval")[0]
    b = load_evalplus(HE, "humaneval", tests="base")[0]
    assert evalplus.cache_key(a) == evalplus.cache_key(a) and len(evalplus.cache_key(a)) == 64
    assert evalplus.cache_key(a) != evalplus.cache_key(b)  # the plus inputs are part of the row
    c = type(a)(a.problem_id, a.question, "", {**a.meta, "canonical_solution": "    return 1\n"})
    assert evalplus.cache_key(c) != evalplus.cache_key(a)


def test_time_limits_are_evalplus_defaults():
    assert evalplus.limits([0.0, 0.1, 0.5]) == [1.0, 1.0, 2.0]


def test_verifier_version_moved_for_the_new_rules():
    from boundlab.verify.code import CodeVerifier

    assert CodeVerifier.version == 2


def test_the_judges_test_code_asks_the_program_for_nothing_but_the_entry_point():
    """Every name the generated test code reads is its own or a builtin: a free name would be asked
    of the (untrusted) program, which could then supply it."""
    from boundlab.sandbox._worker.judge import free_names
    from boundlab.sandbox._worker.codec import encode

    fib = load_evalplus(HE, "humaneval")[0]
    n = len(fib.meta["base_input"]) + len(fib.meta["plus_input"])
    fake = {"base": [[encode(0), 0.0]] * len(fib.meta["base_input"]),
            "plus": [[encode(0), 0.0]] * len(fib.meta["plus_input"])}
    code, limit = evalplus.test_code(fib, fake)
    assert free_names(code) == [] and limit == n * 1.0 + 1.0
    lcb = {p.problem_id: p for p in load_livecodebench(LCB)}["3901"]
    assert free_names(lcb.meta["test"]) == []
