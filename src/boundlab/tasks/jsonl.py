"""Generic JSONL tasks: one problem per line, `{"problem_id", "prompt"|"question", "answer"}`.

Any other fields go into `Problem.meta` (so `level`/`subject` tags drive the report's breakdowns).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from boundlab.tasks.base import Problem, Task


class DataError(ValueError):
    """A malformed data file; the message names the file and the line."""


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line, with file:line errors."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: bad JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def load_jsonl_problems(path: str | Path) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        pid = obj.get("problem_id", obj.get("id"))
        question = obj.get("prompt", obj.get("question"))
        if pid is None:
            raise DataError(f"{path}:{lineno}: missing field 'problem_id'")
        if question is None:
            raise DataError(f"{path}:{lineno}: missing field 'prompt' (or 'question')")
        if "answer" not in obj:
            raise DataError(f"{path}:{lineno}: missing field 'answer'")
        pid = str(pid)
        if pid in seen:
            raise DataError(f"{path}:{lineno}: duplicate problem_id {pid!r} (first on line {seen[pid]})")
        seen[pid] = lineno
        meta = {k: v for k, v in obj.items() if k not in {"problem_id", "id", "prompt", "question", "answer"}}
        problems.append(Problem(pid, str(question), str(obj["answer"]), meta))
    return problems


def _jsonl_task(cfg: Any) -> Task:
    path = getattr(cfg, "path", None)
    if not path:
        raise ValueError("task=jsonl needs task.path=/path/to/problems.jsonl")
    return Task("jsonl:" + Path(path).stem, load_jsonl_problems(path), verifier="math")


from boundlab.tasks import TASKS  # noqa: E402

TASKS.register("jsonl")(_jsonl_task)
