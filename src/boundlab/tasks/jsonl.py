"""Generic JSONL tasks: one problem per line, `{"problem_id", "prompt"|"question", "answer"}`.

Any other fields go into `Problem.meta` (so `level`/`subject` tags drive the report's breakdowns).
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any, Iterator

from boundlab.config import TaskConfig
from boundlab.tasks.base import Problem, Task


class DataError(ValueError):
    """A malformed data file; the message names the file and the line."""


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a `.jsonl` (or gzipped `.jsonl.gz`)
    file, with file:line errors."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    empty = True
    # Bytes, decoded line by line: a non-UTF-8 file is then named with its line, not a traceback.
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        for lineno, raw in _lines(path, f):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")  # a BOM is fine
            except UnicodeDecodeError as e:
                raise DataError(f"{path}:{lineno}: not UTF-8 text (byte 0x{raw[e.start]:02x} at column "
                                f"{e.start + 1}); re-save the file as UTF-8") from None
            if not line.strip():
                continue
            empty = False
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: bad JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj
    if empty:
        raise DataError(f"{path}: the file is empty; it needs one JSON object per line")


def _lines(path: Path, f: Any) -> Iterator[tuple[int, bytes]]:
    """The file's numbered lines; a corrupt gzip stream is a one-line DataError."""
    try:
        yield from enumerate(f, start=1)
    except (OSError, EOFError, zlib.error) as e:
        raise DataError(f"{path}: not a readable gzip file ({e})") from None


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
        # str(None) would become the gold answer "None", which "The answer is None" matches.
        if obj["answer"] is None or not str(obj["answer"]).strip():
            raise DataError(f"{path}:{lineno}: 'answer' is {'null' if obj['answer'] is None else 'empty'}; "
                            f"every problem needs a gold answer (drop the line or fill it in)")
        if not str(question).strip():
            raise DataError(f"{path}:{lineno}: 'prompt' (or 'question') is empty")
        pid = str(pid)
        if pid in seen:
            raise DataError(f"{path}:{lineno}: duplicate problem_id {pid!r} (first on line {seen[pid]})")
        seen[pid] = lineno
        meta = {k: v for k, v in obj.items() if k not in {"problem_id", "id", "prompt", "question", "answer"}}
        problems.append(Problem(pid, str(question), str(obj["answer"]), meta))
    return problems


def _jsonl_task(cfg: TaskConfig | None) -> Task:
    path = cfg.path if cfg is not None else None
    if not path:
        from boundlab.config import ConfigError

        raise ConfigError("task=jsonl needs task.path=/path/to/problems.jsonl")
    return Task("jsonl:" + Path(path).stem, load_jsonl_problems(path), verifier="math")


from boundlab.tasks import TASKS  # noqa: E402

TASKS.register("jsonl")(_jsonl_task)
