"""All 164 HumanEval canonical solutions pass in the sandbox; a broken variant of each fails.

Needs bubblewrap. Locally the module is skipped without it (with the reason); in CI (CI=true)
it fails instead: .ci/system-deps.sh installs bubblewrap.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from types import SimpleNamespace

import pytest

from boundlab.sandbox import isolation_problem
from boundlab.tasks import build_task
from boundlab.verify import build_verifier


def _require_sandbox() -> None:
    why = isolation_problem()
    if why:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI needs the sandbox: {why}")
        pytest.skip(f"no sandbox here: {why}")


@pytest.fixture(scope="module")
def verifier():
    _require_sandbox()
    v = build_verifier("code", timeout_s=5.0)
    yield v
    v.close()


@pytest.fixture(scope="module")
def task():
    return build_task(SimpleNamespace(name="humaneval"))


def test_canonical_solutions_pass_and_broken_variants_fail(verifier, task):
    broken = "    return None\n"
    items = [(p, [p.meta["canonical_solution"], broken]) for p in task.problems]
    results = verifier.score_many(items)
    canonical = {p.problem_id: r[0] for p, r in zip(task.problems, results)}
    wrong = {p.problem_id: r[1] for p, r in zip(task.problems, results)}
    not_passing = {k: (v.outcome, v.info) for k, v in canonical.items() if not v.correct}
    assert not not_passing, not_passing
    assert all(v.outcome == "passed" for v in canonical.values())
    passing_broken = [k for k, v in wrong.items() if v.correct]
    assert not passing_broken
    outcomes = Counter(v.outcome for v in wrong.values())
    assert "sandbox_error" not in outcomes, outcomes
    # The program is the prompt plus the completion, as in the paper's harness.
    first = task.problems[0]
    assert canonical[first.problem_id].extracted.startswith(first.question)


def test_chat_style_fenced_answers_pass(verifier, task):
    # The same canonical solutions, answered as a chat model would: a fenced full function.
    probs = task.problems[:20]
    items = []
    for p in probs:
        fn = p.question.rstrip() + "\n" + p.meta["canonical_solution"]
        items.append((p, [f"Sure! Here is the code:\n```python\n{fn}\n```\nHope it helps."]))
    results = verifier.score_many(items)
    assert [r[0].outcome for r in results] == ["passed"] * len(probs)


def test_duplicate_completions_run_once_and_agree(verifier, task):
    p = task.problems[3]
    comps = [p.meta["canonical_solution"]] * 5 + ["    return 0\n"] * 3 + [""]
    verdicts = verifier.score(p, comps)
    assert [v.outcome for v in verdicts] == ["passed"] * 5 + ["failed"] * 3 + ["failed"]
    assert verdicts[-1].extracted is None and verdicts[-1].info["reason"] == "no program"


def test_code_jsonl_both_shapes_end_to_end(verifier, tmp_path):
    rows = [
        {"task_id": "mbpp/1", "text": "Remove all spaces.", "entry_point": "nospace",
         "test_list": ["assert nospace('a b c') == 'abc'", "assert nospace(' ') == ''"]},
        {"question_id": "lcb/1", "question_content": "Print the sum of the numbers.",
         "cases": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5 5\n", "output": "15\n"}]},
        {"question_id": "lcb/2", "question_content": "Print a third of n.", "float_tol": 1e-6,
         "cases": [{"input": "1\n", "output": "0.333333333\n"}]},
    ]
    path = tmp_path / "code.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = build_task(SimpleNamespace(name="code_jsonl", path=str(path)))
    mbpp, add, third = task.problems
    good_mbpp = "```python\ndef nospace(s):\n    return s.replace(' ', '')\n```"
    bad_mbpp = "```python\ndef nospace(s):\n    return s.strip()\n```"
    good_add = "```python\nimport sys\nprint(sum(map(int, sys.stdin.read().split())))\n```"
    bad_add = "```python\nprint(sum(map(int, input().split())) + 1)\n```"
    crash = "```python\nraise ValueError('boom')\n```"
    results = verifier.score_many([(mbpp, [good_mbpp, bad_mbpp]),
                                   (add, [good_add, bad_add, crash]),
                                   (third, ["print(int(input()) / 3)", "print(0.3334)"])])
    assert [[v.outcome for v in r] for r in results] == [
        ["passed", "failed"], ["passed", "failed", "runtime_error"], ["passed", "failed"]]
    assert results[1][1].info == {"case": 0, "cases": 2, "reason": "wrong output"}
