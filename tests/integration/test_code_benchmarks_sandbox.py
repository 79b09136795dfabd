"""HumanEval+, MBPP+ and LiveCodeBench judged in the real bubblewrap sandbox, on fixtures in each
benchmark's official row format (tests/data/code_benchmarks). Each verdict below is the sandbox's."""

import json
from pathlib import Path

import pytest

import boundlab.builtins  # noqa: F401
from boundlab.tasks.evalplus import load_evalplus
from boundlab.tasks.livecodebench import load_livecodebench
from boundlab.verify import build_verifier, evalplus

D = Path(__file__).parents[1] / "data" / "code_benchmarks"

FIB_WRONG_AT_ZERO = ("    a, b = 1, 1\n    for _ in range(n - 2):\n        a, b = b, a + b\n"
                     "    return b if n > 1 else 1\n")  # right for n >= 1, says fib(0) = 1


@pytest.fixture(scope="module")
def verifier():
    v = build_verifier("code", workers=2)
    yield v
    v.close()


def problems(path, dataset, tests="plus"):
    return {p.problem_id: p for p in load_evalplus(path, dataset, tests)}


def outcomes(v, p, completions):
    return [(x.outcome, x.info.get("error", x.info.get("reason"))) for x in v.score(p, completions)]


def test_canonical_solutions_pass_and_a_stub_fails(verifier):
    items = [(p, [p.meta["canonical_solution"], "    return None\n"])
             for path, ds in ((D / "HumanEvalPlus-fixture.jsonl.gz", "humaneval"),
                              (D / "MbppPlus-fixture.jsonl", "mbpp"))
             for p in problems(path, ds).values()]
    verdicts = verifier.score_many(items)
    assert len(verdicts) == 6
    for (p, _), (good, stub) in zip(items, verdicts):
        assert good.correct, (p.problem_id, good.outcome, good.info)
        assert not stub.correct and stub.outcome in ("failed", "runtime_error"), p.problem_id


def test_right_on_base_wrong_on_plus_fails_plus_and_passes_base(verifier):
    plus = problems(D / "HumanEvalPlus-fixture.jsonl.gz", "humaneval")["HumanEval/55"]
    base = problems(D / "HumanEvalPlus-fixture.jsonl.gz", "humaneval", "base")["HumanEval/55"]
    assert outcomes(verifier, plus, [FIB_WRONG_AT_ZERO]) == [("failed", "AssertionError: wrong output on plus input 0")]
    assert outcomes(verifier, base, [FIB_WRONG_AT_ZERO]) == [("passed", None)]


def test_floats_within_atol_and_not_beyond(verifier):
    mean = problems(D / "HumanEvalPlus-fixture.jsonl.gz", "humaneval")["HumanEval/900"]
    assert mean.meta["atol"] == 0.0  # float outputs: EvalPlus enforces atol = 1e-6
    reordered = "    return sum(reversed(xs)) / len(xs)\n"  # same mean, different rounding
    assert sum([0.1, 0.2, 0.3]) != sum(reversed([0.1, 0.2, 0.3]))
    off = "    return sum(xs) / len(xs) + 1e-4\n"
    assert [v.outcome for v in verifier.score(mean, [reordered, off])] == ["passed", "failed"]
    area = problems(D / "MbppPlus-fixture.jsonl", "mbpp")["Mbpp/900"]  # atol 0.01 from the row
    near = "def circle_area(r):\n    return 3.14159265 * r * r\n"   # off by ~3e-3 at r = 1000
    far = "def circle_area(r):\n    return 3.1416 * r * r\n"        # off by ~7e-3 * 1e3 = 7.3
    assert [v.outcome for v in verifier.score(area, [near, far])] == ["passed", "failed"]


def test_exact_types_and_mbpp_oracles(verifier):
    pairs = problems(D / "HumanEvalPlus-fixture.jsonl.gz", "humaneval")["HumanEval/901"]
    as_list = "    return [a + b for a, b in pairs]\n"  # a list is not the expected tuple
    assert [v.outcome for v in verifier.score(pairs, [as_list])] == ["failed"]
    sim = problems(D / "MbppPlus-fixture.jsonl", "mbpp")["Mbpp/2"]
    # compared as a set (order and container free), and the inputs arrive as tuples
    sorted_list = ("def similar_elements(a, b):\n    assert isinstance(a, tuple) and isinstance(b, tuple)\n"
                   "    return sorted(set(a) & set(b), reverse=True)\n")
    assert [v.outcome for v in verifier.score(sim, [sorted_list])] == ["passed"]


def test_each_input_has_a_time_limit_from_the_canonical_run(verifier):
    fib = problems(D / "HumanEvalPlus-fixture.jsonl.gz", "humaneval")["HumanEval/55"]
    slow = ("    import time\n    if n == 20:\n        time.sleep(1.6)\n"
            "    return fib(n - 1) + fib(n - 2) if n > 1 else n\n")
    # The limit comes from the canonical run, so the slow input is the one that times out (the
    # mechanism); how long the whole call took on this machine is not the test's business.
    (v,) = verifier.score(fib, [slow])
    assert v.outcome == "timeout" and "plus input 3" in v.info["error"], v.info


def test_expected_outputs_are_cached_by_content_next_to_the_store(tmp_path):
    p = problems(D / "HumanEvalPlus-fixture.jsonl.gz", "humaneval")["HumanEval/55"]
    key = evalplus.cache_key(p)
    with build_verifier("code", workers=1) as v:
        v.use_cache_dir(tmp_path / "evalplus_expected")
        assert v.score(p, [p.meta["canonical_solution"]])[0].correct
    saved = json.loads((tmp_path / "evalplus_expected" / f"{key}.json").read_text())
    assert evalplus.decoded_expected(saved) == {"base": [55, 1, 89, 21], "plus": [0, 1, 610, 6765]}
    assert all(t >= 0 for _, t in saved["base"] + saved["plus"])
    with build_verifier("code", workers=1) as v:
        v.use_cache_dir(tmp_path / "evalplus_expected")
        assert v.expected.get(key) == saved  # a later probe reads it instead of rerunning


LCB_FN_RIGHT = ("Here it is.\n```python\nclass Solution:\n    def addK(self, nums: List[int], k: int)"
                " -> List[int]:\n        return [x + k for x in nums]\n```\n")
LCB_FN_TUPLE = LCB_FN_RIGHT.replace("[x + k for x in nums]", "tuple(x + k for x in nums)")
LCB_STDIN_RIGHT = "```python\nn = int(input())\nprint(sum(map(int, input().split())))\n```"
LCB_STDIN_WRONG = "```python\nn = int(input())\nprint(abs(sum(map(int, input().split()))))\n```"


def test_livecodebench_functional_and_stdin_judged_right_and_wrong(verifier):
    probs = {p.problem_id: p for p in load_livecodebench(D / "lcb-fixture.jsonl", "2024-08-01", "2025-02-01")}
    fn, sd = probs["3901"], probs["abc372_a"]
    wrong = LCB_FN_RIGHT.replace("[x + k for x in nums]", "[x + k for x in nums if x > 0]")
    got = verifier.score(fn, [LCB_FN_RIGHT, LCB_FN_TUPLE, wrong])
    assert [v.outcome for v in got] == ["passed", "passed", "failed"], [v.info for v in got]
    assert "test 2" in got[2].info["error"]  # the private test [-1] + 1 -> [0]
    got = verifier.score(sd, [LCB_STDIN_RIGHT, LCB_STDIN_WRONG])
    assert [v.outcome for v in got] == ["passed", "failed"]
    assert got[1].info["case"] == 1  # the private case -5


# -- through probe.py (scores a samples file; no model)
ROOT = Path(__file__).resolve().parents[2]


def _probe(tmp_path, *args):
    import os
    import subprocess
    import sys

    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store" / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, str(ROOT / "probe.py"), *args, "logger=none"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)


def _counts(run_dir):
    import csv

    with (run_dir / "problems.csv").open() as f:
        return {r["problem_id"]: (int(r["n"]), int(r["c"])) for r in csv.DictReader(f)}


def test_probe_cli_humaneval_plus_plus_and_base(tmp_path):
    he = D / "HumanEvalPlus-fixture.jsonl.gz"
    samples = tmp_path / "samples.jsonl"
    with samples.open("w") as f:
        for p in problems(he, "humaneval").values():
            f.write(json.dumps({"problem_id": p.problem_id, "completion": p.meta["canonical_solution"]}) + "\n")
        f.write(json.dumps({"problem_id": "HumanEval/55", "completion": FIB_WRONG_AT_ZERO}) + "\n")
    got = {}
    for tests in ("plus", "base"):
        run_dir = tmp_path / tests
        proc = _probe(tmp_path, "task=humaneval_plus", f"task.path={he}", f"task.evalplus.tests={tests}",
                      f"samples={samples}", f"hydra.run.dir={run_dir}")
        assert proc.returncode == 0, proc.stderr[-3000:]
        got[tests] = _counts(run_dir)
    assert got["plus"] == {"HumanEval/55": (2, 1), "HumanEval/900": (1, 1), "HumanEval/32": (1, 1),
                           "HumanEval/901": (1, 1)}
    assert got["base"] == {"HumanEval/55": (2, 2), "HumanEval/900": (1, 1), "HumanEval/32": (1, 1),
                           "HumanEval/901": (1, 1)}
    cached = sorted((tmp_path / "store" / "evalplus_expected").glob("*.json"))
    assert len(cached) == 4 + 4  # one per row and test set (the base rows drop plus_input)


def test_probe_cli_missing_release_file_is_one_line(tmp_path):
    proc = _probe(tmp_path, "task=mbpp_plus", f"task.path={tmp_path / 'MbppPlus.jsonl.gz'}",
                  f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "MbppPlus.jsonl.gz" in lines[0] and "mbppplus_release" in lines[0], proc.stderr


def test_probe_cli_export_livecodebench_window(tmp_path):
    out = tmp_path / "lcb.jsonl"
    proc = _probe(tmp_path, "task=livecodebench", f"task.path={D / 'lcb-fixture.jsonl'}",
                  "task.livecodebench.date_from=2024-08-01", "task.livecodebench.date_to=2025-02-01", f"export={out}",
                  f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["problem_id"] for r in rows] == ["3901", "abc372_a"]
    assert rows[0]["messages"][0]["role"] == "system" and rows[0]["meta"]["platform"] == "leetcode"


def test_find_zero_is_judged_as_a_root_not_against_the_canonical_value(verifier):
    fz = problems(D / "HumanEvalPlus-fixture.jsonl.gz", "humaneval")["HumanEval/32"]
    negative_root = "    return -math.sqrt(-xs[0])\n"   # the canonical finds +sqrt; -sqrt is a root too
    not_a_root = "    return math.sqrt(-xs[0]) + 0.01\n"
    assert [v.outcome for v in verifier.score(fz, [fz.meta["canonical_solution"], negative_root, not_a_root])] \
        == ["passed", "passed", "failed"]
