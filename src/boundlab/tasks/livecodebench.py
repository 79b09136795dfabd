"""LiveCodeBench (code_generation_lite), read from the official release files at a local path.

    probe.py task=livecodebench task.path=/data/test5.jsonl \\
        task.livecodebench.date_from=2024-08-01 task.livecodebench.date_to=2025-02-01

Rows are LiveCodeBench's own (`lcb_runner/benchmarks/code_generation.py`): `question_title`,
`question_content`, `platform`, `question_id`, `contest_id`, `contest_date`
(`2024-08-03T00:00:00`), `starter_code`, `difficulty`, `public_test_cases` (a JSON string),
`private_test_cases` (a JSON string, or base64 -> zlib -> pickle -> JSON string) and `metadata`
(a JSON string; `func_name` for LeetCode's functional tests). The files (`test.jsonl` ...
`test6.jsonl`, one per release version) are not in any package registry and are never downloaded
here: a missing file fails in one line naming what to get.

- Dates: problems with date_from <= contest_date <= date_to (days, both ends kept, as
  LiveCodeBench's `--start_date`/`--end_date`); either bound may be left out.
- Tests: public then private, as LiveCodeBench grades. `stdin` tests run the program once per
  test and compare stdout with LiveCodeBench's rule (`boundlab.sandbox.compare`). `functional`
  tests call `Solution().<func_name>(*args)`, the args being the input's lines, each JSON-decoded,
  and compare the result (a tuple counts as a list) with the JSON-decoded output, exactly. Both
  run with LiveCodeBench's preamble of standard-library imports (`PREAMBLE`), so starter code
  that uses `List` works; each test has LiveCodeBench's 6 s limit.
- Private tests in compressed form are decoded without running any pickle: the unpickler's
  `find_class` refuses every global, and anything but a pickled `str` is refused with a
  one-line error naming the row. A data file never runs code in BoundLab's process.
- Prompt: LiveCodeBench's generic code-generation prompt (`### Question`, `### Format` with the
  starter code or the stdin instruction, `### Answer`), in a chat turn with its system message.
- Tags in meta: `platform`, `difficulty`, `contest_date` (the day), `contest_id`, `title`.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import pickle
import zlib
from pathlib import Path
from typing import Any

from boundlab.config import TaskConfig
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task
from boundlab.tasks.evalplus import missing_file_message
from boundlab.tasks.jsonl import DataError, iter_jsonl

URL = "https://huggingface.co/datasets/livecodebench/code_generation_lite (its test*.jsonl files)"
FILENAME = "test5.jsonl"
# Seconds per test (LiveCodeBench's default `timeout`).
TEST_TIMEOUT_S = 6.0
MAX_PRIVATE_BYTES = 1 << 30  # a decompressed private-test blob larger than this is refused

# LiveCodeBench's `import_string` (lcb_runner/evaluation/testing_util.py), run before the program.
PREAMBLE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
    "from random import *\nfrom statistics import *\nfrom itertools import *\n"
    "from functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\n"
    "import datetime\nimport collections\nimport heapq\nimport bisect\nimport copy\nimport math\n"
    "import random\nimport statistics\nimport itertools\nimport functools\nimport operator\n"
    "import io\nimport sys\nimport json\nsys.setrecursionlimit(50000)\n")

SYSTEM = ("You are an expert Python programmer. You will be given a question (problem "
          "specification) and will generate a correct Python program that matches the "
          "specification and passes all tests.")
_WITH_STARTER = ("You will use the following starter code to write the solution to the problem "
                 "and enclose your code within delimiters.")
_WITHOUT_STARTER = ("Read the inputs from stdin solve the problem and write the answer to stdout "
                    "(do not directly test on the sample inputs). Enclose your code within "
                    "delimiters as follows. Ensure that when the python program runs, it reads "
                    "the inputs, runs the algorithm and writes output to STDOUT.")


def prompt(question: str, starter: str) -> str:
    out = f"### Question:\n{question}\n\n"
    if starter:
        out += f"### Format: {_WITH_STARTER}\n```python\n{starter}\n```\n\n"
    else:
        out += f"### Format: {_WITHOUT_STARTER}\n```python\n# YOUR CODE HERE\n```\n\n"
    return out + "### Answer: (use the provided format with backticks)\n\n"


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"global {module}.{name}")


def decode_private(where: str, raw: str) -> list:
    """The private tests of a row: a JSON string, or base64 -> zlib -> pickle(str) -> JSON."""
    text: Any = raw
    if not raw.lstrip().startswith("["):
        try:
            packed = base64.b64decode(raw.encode("ascii"), validate=False)
            d = zlib.decompressobj()
            blob = d.decompress(packed, MAX_PRIVATE_BYTES)
            if d.unconsumed_tail:
                raise DataError(f"{where}: private_test_cases decompress to over "
                                f"{MAX_PRIVATE_BYTES >> 20} MiB; refused")
        except (ValueError, zlib.error, UnicodeEncodeError) as e:
            raise DataError(f"{where}: private_test_cases is neither JSON nor base64+zlib "
                            f"({type(e).__name__})") from None
        try:
            text = _NoGlobals(io.BytesIO(blob)).load()
        except Exception as e:  # noqa: BLE001 - any failure is a refusal, nothing ran
            raise DataError(f"{where}: private_test_cases refused: the pickle is not a plain "
                            f"string ({type(e).__name__}: {str(e)[:80]}); nothing in it was run") \
                from None
        if not isinstance(text, str):
            raise DataError(f"{where}: private_test_cases refused: the pickle holds a "
                            f"{type(text).__name__}, not a string")
    try:
        tests = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: private_test_cases is not JSON ({e.msg})") from None
    if not isinstance(tests, list):
        raise DataError(f"{where}: private_test_cases must be a JSON list")
    return tests


def _tests(where: str, obj: dict[str, Any]) -> list[dict[str, str]]:
    pub = obj.get("public_test_cases", "[]")
    try:
        pub = json.loads(pub) if isinstance(pub, str) else pub
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: public_test_cases is not JSON ({e.msg})") from None
    priv = obj.get("private_test_cases") or "[]"
    priv = decode_private(where, priv) if isinstance(priv, str) else priv
    if not isinstance(pub, list) or not isinstance(priv, list):
        raise DataError(f"{where}: public/private_test_cases must be lists")
    out = []
    for j, t in enumerate(pub + priv):
        if not (isinstance(t, dict) and isinstance(t.get("input"), str)
                and isinstance(t.get("output"), str)):
            raise DataError(f"{where}: test {j} needs string 'input' and 'output'")
        if t.get("testtype") not in ("stdin", "functional"):
            raise DataError(f"{where}: test {j} has testtype {t.get('testtype')!r}; expected "
                            "'stdin' or 'functional'")
        out.append({"input": t["input"], "output": t["output"], "testtype": t["testtype"]})
    if not out:
        raise DataError(f"{where}: no tests")
    return out


def _day(where: str, value: Any, what: str) -> dt.date:
    try:
        return dt.date.fromisoformat(str(value)[:10])
    except ValueError:
        raise DataError(f"{where}: {what} must be a date (YYYY-MM-DD...), got {value!r:.40}") \
            from None


def functional_test(where: str, tests: list[dict[str, str]]) -> str:
    """The judge's test code for functional tests: the program's `_boundlab_lcb_call(*args)`."""
    cases = []
    for j, t in enumerate(tests):
        try:
            args = [json.loads(line) for line in t["input"].split("\n")]
            json.loads(t["output"])
        except json.JSONDecodeError as e:
            raise DataError(f"{where}: functional test {j} is not JSON per line ({e.msg})") \
                from None
        cases.append([json.dumps(args), t["output"]])
    return (f"import json as _json, time as _time\n_CASES = {cases!r}\n_LIMIT = {TEST_TIMEOUT_S!r}\n"
            "def check(candidate):\n"
            "    for i, (args, out) in enumerate(_CASES):\n"
            "        t0 = _time.monotonic()\n"
            "        got = candidate(*_json.loads(args))\n"
            "        if _time.monotonic() - t0 > _LIMIT:\n"
            "            raise TimeoutError('test %d over %.0f s' % (i, _LIMIT))\n"
            "        if isinstance(got, tuple):\n"
            "            got = list(got)\n"
            "        if got != _json.loads(out):\n"
            "            raise AssertionError('wrong answer on test %d' % i)\n")


def load_livecodebench(path: str | Path, date_from: str | None = None,
                       date_to: str | None = None) -> list[Problem]:
    path = Path(path)
    lo = _day("task.livecodebench.date_from", date_from, "task.livecodebench.date_from") if date_from else None
    hi = _day("task.livecodebench.date_to", date_to, "task.livecodebench.date_to") if date_to else None
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno} (question_id {obj.get('question_id')!r})"
        qid = obj.get("question_id")
        content = obj.get("question_content")
        if not isinstance(qid, str) or not qid or not isinstance(content, str):
            raise DataError(f"{where}: needs string 'question_id' and 'question_content'")
        day = _day(where, obj.get("contest_date"), "'contest_date'")
        if (lo and day < lo) or (hi and day > hi):
            continue
        if qid in seen:
            raise DataError(f"{where}: duplicate question_id (first on line {seen[qid]})")
        seen[qid] = lineno
        tests = _tests(where, obj)
        kinds = {t["testtype"] for t in tests}
        if len(kinds) != 1:
            raise DataError(f"{where}: mixes stdin and functional tests")
        starter = obj.get("starter_code") or ""
        meta: dict[str, Any] = {"platform": obj.get("platform"), "difficulty": obj.get("difficulty"),
                                "contest_date": day.isoformat(), "contest_id": obj.get("contest_id"),
                                "title": obj.get("question_title"), "preamble": PREAMBLE,
                                "timeout_s": TEST_TIMEOUT_S}
        if kinds == {"stdin"}:
            meta.update(kind="stdio", cases=[[t["input"], t["output"]] for t in tests])
        else:
            md = obj.get("metadata") or "{}"
            try:
                md = json.loads(md) if isinstance(md, str) else md
            except json.JSONDecodeError:
                md = {}
            func = md.get("func_name") if isinstance(md, dict) else None
            if not (isinstance(func, str) and func.isidentifier()):
                raise DataError(f"{where}: functional tests need metadata.func_name")
            meta.update(kind="lcb_functional", func_name=func,
                        test=functional_test(where, tests),
                        # LiveCodeBench's whole-run bound: (timeout + 1) per test, plus 5 s.
                        timeout_s=(TEST_TIMEOUT_S + 1) * len(tests) + 5)
        problems.append(Problem(qid, prompt(content, starter), "", meta))
    return problems


@TASKS.register("livecodebench")
def _livecodebench(cfg: TaskConfig | None) -> Task:
    raw = cfg.path if cfg is not None else None
    p = Path(raw).expanduser() if raw else None
    if p is None or not p.is_file():
        raise DataError(missing_file_message("livecodebench", raw, FILENAME, URL))
    problems = load_livecodebench(p, cfg.livecodebench.date_from, cfg.livecodebench.date_to)
    return Task("livecodebench", problems, template="{question}", verifier="code", chat=True,
                system=SYSTEM)
