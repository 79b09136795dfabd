"""HumanEval+ and MBPP+ (EvalPlus), read from the official release files at a local path.

    probe.py task=humaneval_plus task.path=/data/HumanEvalPlus.jsonl.gz
    probe.py task=mbpp_plus task.path=/data/MbppPlus.jsonl.gz task.evalplus.tests=base

The files are published outside any package registry, so they do not ship and are never
downloaded at run time: a missing file fails in one line naming the file and where to get it.
One row per line (`.jsonl`, or `.jsonl.gz` as released), in EvalPlus's own fields: `task_id`,
`prompt`, `entry_point`, `canonical_solution`, `base_input`, `plus_input` (lists of argument
lists), `atol`; `contract` and MBPP+'s `assertion` are read but not used (EvalPlus scores
without them).

How a sample is judged (EvalPlus's `evaluate`, reproduced in `boundlab.verify.evalplus`): the
expected outputs are the canonical solution's, run on every input in the sandbox; outputs must
equal them exactly, floats within `atol` (1e-6 when `atol` is 0 and the expected value is
float-shaped); each input has a time limit of max(1 s, 4 x the canonical run's time); EvalPlus's
special oracles apply (HumanEval/32 `find_zero` is checked as a root; MBPP's set-valued and
"returns something" tasks, `are_equivalent`, `sum_div`). A sample passes only when every input
passes. `task.evalplus.tests=plus` (default) uses base and plus inputs, `task.evalplus.tests=base` the base inputs
alone (the original HumanEval/MBPP tests, so the two pass@k curves sit side by side).

Prompt: the row's `prompt`, continued by the model (EvalPlus's base-model prompt; no chat
wrapping); the program is prompt + completion, as in EvalPlus. MBPP+ stores tuples, sets and
complex numbers as JSON lists and strings; they are rebuilt per task id (EvalPlus's
`mbpp_deserialize_inputs`) when the inputs are sent to a program (`boundlab.verify.evalplus`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from boundlab.config import TaskConfig
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task
from boundlab.tasks.jsonl import DataError, iter_jsonl

# Which file each task reads, and where it is published (EvalPlus's own release URLs).
RELEASES = {
    "humaneval_plus": ("HumanEvalPlus.jsonl.gz", "humaneval",
                       "https://github.com/evalplus/humanevalplus_release/releases/download/"
                       "v0.1.10/HumanEvalPlus.jsonl.gz"),
    "mbpp_plus": ("MbppPlus.jsonl.gz", "mbpp",
                  "https://github.com/evalplus/mbppplus_release/releases/download/v0.2.0/"
                  "MbppPlus.jsonl.gz"),
}
DATA_DIR = "~/.cache/boundlab/data"
TEST_SETS = ("plus", "base")


def missing_file_message(task: str, path: str | None, filename: str, url: str) -> str:
    where = f"{DATA_DIR}/{filename}"
    found = f"{path} does not exist" if path else "no task.path given"
    return (f"task={task}: {found}; obtain {filename} from {url} (nothing is downloaded at run "
            f"time), put it at {where} or anywhere, and pass task.path=FILE")


def resolve_path(task: str, cfg: TaskConfig | None, filename: str, url: str) -> Path:
    """task.path, else the default location; a missing file is one line saying what to get."""
    raw = cfg.path if cfg is not None else None
    path = Path(raw).expanduser() if raw else Path(DATA_DIR).expanduser() / filename
    if not path.is_file():
        raise DataError(missing_file_message(task, raw, filename, url))
    return path


def _need(where: str, obj: dict[str, Any], key: str, kind: type) -> Any:
    val = obj.get(key)
    if not isinstance(val, kind) or isinstance(val, bool):
        raise DataError(f"{where}: field {key!r} must be a {kind.__name__}, got {val!r:.60}")
    return val


def load_evalplus(path: str | Path, dataset: str, tests: str = "plus") -> list[Problem]:
    if tests not in TEST_SETS:
        raise DataError(f"task.evalplus.tests must be one of {list(TEST_SETS)}, not {tests!r}")
    path = Path(path)
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        tid = _need(where, obj, "task_id", str)
        if tid in seen:
            raise DataError(f"{where}: duplicate task_id {tid!r} (first on line {seen[tid]})")
        seen[tid] = lineno
        entry = _need(where, obj, "entry_point", str)
        if not entry.isidentifier():
            raise DataError(f"{where}: 'entry_point' must be a Python identifier, got {entry!r}")
        prompt = _need(where, obj, "prompt", str)
        canonical = _need(where, obj, "canonical_solution", str)
        inputs = {}
        for key in ("base_input", "plus_input"):
            val = obj.get(key)
            if key == "plus_input" and val is None and tests == "base":
                val = []
            if not isinstance(val, list) or not all(isinstance(a, list) for a in val):
                raise DataError(f"{where}: {key!r} must be a list of argument lists")
            inputs[key] = val
        if not inputs["base_input"]:
            raise DataError(f"{where}: 'base_input' is empty")
        atol = obj.get("atol", 0)
        if not isinstance(atol, (int, float)) or isinstance(atol, bool) or atol < 0:
            raise DataError(f"{where}: 'atol' must be a number >= 0, got {atol!r:.40}")
        meta = {"kind": "evalplus", "dataset": dataset, "entry_point": entry,
                "continuation": True, "canonical_solution": canonical, "atol": float(atol),
                "tests": tests, "base_input": inputs["base_input"],
                "plus_input": inputs["plus_input"] if tests == "plus" else []}
        problems.append(Problem(tid, prompt, "", meta))
    return problems


def _factory(name: str):
    filename, dataset, url = RELEASES[name]

    def build(cfg: TaskConfig | None) -> Task:
        tests = str((cfg.evalplus.tests if cfg is not None else None) or "plus")
        path = resolve_path(name, cfg, filename, url)
        task_name = name if tests == "plus" else f"{name}-base"
        return Task(task_name, load_evalplus(path, dataset, tests), template="{question}",
                    verifier="code", chat=False)

    return build


for _name in RELEASES:
    TASKS.register(_name)(_factory(_name))
