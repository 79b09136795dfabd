"""Writes the code-benchmark fixtures beside this file, each in its benchmark's official row format.

    python tests/data/code_benchmarks/make_fixtures.py

- HumanEvalPlus-fixture.jsonl.gz: EvalPlus HumanEval+ rows (task_id, prompt, entry_point,
  canonical_solution, contract, base_input, plus_input, atol), gzipped as released.
- MbppPlus-fixture.jsonl: EvalPlus MBPP+ rows (+ assertion); Mbpp/2 keeps its real id, so its
  inputs are rebuilt as tuples and its output compared as a set.
- lcb-fixture.jsonl: LiveCodeBench code_generation_lite rows; private tests compressed as released
  (base64 of zlib of pickle of the JSON string).
- lcb-malicious.jsonl: one row whose compressed private tests are a pickle that would run
  `os.system("touch /tmp/boundlab-lcb-pickle-ran")` if unpickled with pickle.loads.
The problems are written here (not copied from the benchmarks), except Mbpp/2's text and solution.
"""

import base64
import gzip
import json
import os
import pickle
import zlib
from pathlib import Path

HERE = Path(__file__).parent
PWNED = "/tmp/boundlab-lcb-pickle-ran"


def he_rows():
    return [
        {"task_id": "HumanEval/55", "entry_point": "fib",
         "prompt": 'def fib(n: int):\n    """Return n-th Fibonacci number (fib(0) == 0).\n    >>> fib(10)\n    55\n    """\n',
         "canonical_solution": "    if n == 0:\n        return 0\n    if n == 1:\n        return 1\n    return fib(n - 1) + fib(n - 2)\n",
         "contract": "\n    assert n >= 0, \"invalid inputs\"  # $_CONTRACT_$\n",
         "base_input": [[10], [1], [11], [8]], "plus_input": [[0], [2], [15], [20]], "atol": 0},
        {"task_id": "HumanEval/900", "entry_point": "mean",
         "prompt": 'def mean(xs: list) -> float:\n    """The arithmetic mean of a non-empty list of floats.\n    >>> mean([1.0, 2.0])\n    1.5\n    """\n',
         "canonical_solution": "    return sum(xs) / len(xs)\n",
         "contract": "\n    assert len(xs) > 0  # $_CONTRACT_$\n",
         "base_input": [[[1.0, 2.0]], [[0.1, 0.2, 0.3]]],
         "plus_input": [[[0.1, 0.7, 0.2, 0.3, 1e-9]], [[3.3, 1.1, 2.2]]], "atol": 0},
        {"task_id": "HumanEval/32", "entry_point": "find_zero",
         "prompt": 'import math\n\n\ndef poly(xs: list, x: float):\n    """xs[0] + xs[1] * x + ... + xs[n] * x^n"""\n    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])\n\n\ndef find_zero(xs: list):\n    """A zero of the polynomial with coefficients xs (an odd number of them... here: any real root).\n    >>> round(find_zero([-1, 0, 1]), 2)  # x^2 - 1\n    1.0\n    """\n',
         "canonical_solution": "    lo, hi = 0.0, 1e3\n    for _ in range(200):\n        mid = (lo + hi) / 2\n        if poly(xs, lo) * poly(xs, mid) <= 0:\n            hi = mid\n        else:\n            lo = mid\n    return lo\n",
         "contract": "", "base_input": [[[-1, 0, 1]], [[-4, 0, 1]]], "plus_input": [[[-9, 0, 1]]],
         "atol": 0.0001},
        {"task_id": "HumanEval/901", "entry_point": "pair_sums",
         "prompt": 'def pair_sums(pairs: list) -> tuple:\n    """A tuple of the sums of each pair.\n    >>> pair_sums([[1, 2]])\n    (3,)\n    """\n',
         "canonical_solution": "    return tuple(a + b for a, b in pairs)\n",
         "contract": "", "base_input": [[[[1, 2], [3, 4]]]], "plus_input": [[[]]], "atol": 0},
    ]


def mbpp_rows():
    return [
        {"task_id": "Mbpp/2", "entry_point": "similar_elements",
         "prompt": '"""\nWrite a function to find the shared elements from the given two lists.\nassert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))\n"""\n',
         "canonical_solution": "\ndef similar_elements(test_tup1, test_tup2):\n  return tuple(set(test_tup1) & set(test_tup2))\n",
         "base_input": [[[3, 4, 5, 6], [5, 7, 4, 10]], [[1, 2, 3, 4], [5, 4, 3, 7]], [[11, 12, 14, 13], [17, 15, 14, 13]]],
         "plus_input": [[[1, 2, 3], [4, 5, 6]], [[1, 2, 2, 9], [9, 2]]], "atol": 0,
         "contract": "\n    assert isinstance(test_tup1, tuple)  # $_CONTRACT_$\n",
         "assertion": "\nassert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))\n"},
        {"task_id": "Mbpp/900", "entry_point": "circle_area",
         "prompt": '"""\nWrite a function to find the area of a circle of radius r.\nassert math.isclose(circle_area(10), 314.1592653589793, rel_tol=0.001)\n"""\n',
         "canonical_solution": "\nimport math\ndef circle_area(r):\n  return math.pi * r * r\n",
         "base_input": [[10], [4]], "plus_input": [[0.5], [1e3]], "atol": 0.01, "contract": "",
         "assertion": "\nassert math.isclose(circle_area(10), 314.1592653589793, rel_tol=0.001)\n"},
    ]


def pack(tests):
    """LiveCodeBench's compressed private tests: base64(zlib(pickle(json string)))."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()


def lcb_rows():
    functional = [{"input": "[1, 2, 3]\n2", "output": "[3, 4, 5]", "testtype": "functional"}]
    functional_private = [{"input": "[]\n5", "output": "[]", "testtype": "functional"},
                          {"input": "[-1]\n1", "output": "[0]", "testtype": "functional"}]
    stdin = [{"input": "3\n1 2 3\n", "output": "6\n", "testtype": "stdin"}]
    stdin_private = [{"input": "1\n-5\n", "output": "-5\n", "testtype": "stdin"},
                     {"input": "2\n1000000000 1000000000\n", "output": "2000000000\n", "testtype": "stdin"}]
    base = {"question_title": "", "contest_id": "", "metadata": "{}", "starter_code": ""}
    return [
        {**base, "question_title": "Add K", "question_id": "3901", "platform": "leetcode",
         "contest_id": "weekly-contest-415", "contest_date": "2024-09-15T00:00:00",
         "difficulty": "easy",
         "question_content": "Given an integer array nums and an integer k, return the array with k added to each element.",
         "starter_code": "class Solution:\n    def addK(self, nums: List[int], k: int) -> List[int]:\n        ",
         "public_test_cases": json.dumps(functional), "private_test_cases": pack(functional_private),
         "metadata": json.dumps({"func_name": "addK"})},
        {**base, "question_title": "Sum", "question_id": "abc372_a", "platform": "atcoder",
         "contest_id": "abc372", "contest_date": "2024-09-21T00:00:00", "difficulty": "easy",
         "question_content": "You are given N integers. Print their sum.\n\nInput\n\nN\nA_1 ... A_N",
         "public_test_cases": json.dumps(stdin), "private_test_cases": pack(stdin_private)},
        {**base, "question_title": "Old", "question_id": "abc300_a", "platform": "atcoder",
         "contest_id": "abc300", "contest_date": "2023-04-29T00:00:00", "difficulty": "easy",
         "question_content": "Print 1.", "public_test_cases": json.dumps(
             [{"input": "\n", "output": "1\n", "testtype": "stdin"}]),
         "private_test_cases": json.dumps([])},
    ]


class _Payload:
    def __reduce__(self):
        return (os.system, (f"touch {PWNED}",))


def main():
    with gzip.open(HERE / "HumanEvalPlus-fixture.jsonl.gz", "wt", encoding="utf-8") as f:
        for r in he_rows():
            f.write(json.dumps(r) + "\n")
    with (HERE / "MbppPlus-fixture.jsonl").open("w") as f:
        for r in mbpp_rows():
            f.write(json.dumps(r) + "\n")
    with (HERE / "lcb-fixture.jsonl").open("w") as f:
        for r in lcb_rows():
            f.write(json.dumps(r) + "\n")
    row = dict(lcb_rows()[1], question_id="abc999_z")
    row["private_test_cases"] = base64.b64encode(zlib.compress(pickle.dumps(_Payload()))).decode()
    with (HERE / "lcb-malicious.jsonl").open("w") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
