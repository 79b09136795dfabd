"""Reading and writing the small files a run dir is resumed from, so that a crash or a full disk at
any moment leaves either the old file or the new one, never a torn one.

- `atomic_write_text` / `atomic_write_json`: a temp file in the same folder, fsync, `os.replace`, then
  an fsync of the folder. A full disk fails the write with one line naming the file; the previous
  version stays intact.
- `read_jsonl`: one JSON object per line. A torn *last* line (a writer killed mid-append, or the disk
  filled) is skipped with one line on stderr; with `repair=True` (only the file's writer passes it)
  the file is rewritten atomically without it. A bad line that is *not* the last is not a crash
  artefact: it is an error naming file:line, since skipping it would silently drop a result.
- `append_jsonl`: adds a row by rewriting the whole file atomically (these files hold one row per
  probe, so the cost is nothing), never by an in-place append that a kill can tear.
- Strict JSON: Python writes a non-finite float as `Infinity`/`NaN`, which no other JSON reader
  takes. Run files hold such a float as the string `"Infinity"`, `"-Infinity"` or `"NaN"` instead
  (`dumps`), and the readers here turn exactly those strings back into floats (`undo_nonfinite`), so
  code that reads a row sees the float it wrote (`crossing_k_ci_high` = inf: an interval open beyond n).

Departure from the obvious: a reader that is not the file's writer (report.py) skips a torn last
line but does not rewrite the file. A rewrite by a second process could replace the file between the
writer's read and its own replace, and the writer's newest row would be lost.
"""

from __future__ import annotations

import errno
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from boundlab.config import ConfigError


class RunDirError(ConfigError):
    """A run-dir file that cannot be trusted; the message names the file (and line)."""


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # some file systems do not open folders; the replace is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` so that readers (and a crash) see the old file or the new one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            raise OSError(errno.ENOSPC, f"no space left on device while writing {path} "
                                        f"(the previous {path.name} is intact); free space and resume") from None
        raise
    _fsync_dir(path.parent)


_NONFINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def _finite(obj: Any) -> Any:
    """`obj` with every non-finite float (numpy's too) replaced by its string (see the docstring)."""
    if isinstance(obj, float) or (type(obj).__module__ == "numpy" and hasattr(obj, "is_integer")):
        x = float(obj)
        if math.isfinite(x):
            return obj
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def undo_nonfinite(obj: Any) -> Any:
    """The inverse of what `dumps` does to non-finite floats."""
    if isinstance(obj, str):
        return _NONFINITE.get(obj, obj)
    if isinstance(obj, dict):
        return {k: undo_nonfinite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [undo_nonfinite(v) for v in obj]
    return obj


def dumps(obj: Any, **kw: Any) -> str:
    """Strict JSON (no `Infinity`/`NaN` literals): what every run file is written with."""
    return json.dumps(_finite(obj), allow_nan=False, **kw)


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, dumps(obj, indent=2) + "\n")


def read_json(path: str | os.PathLike, default: Any = None, what: str = "") -> Any:
    """The JSON in `path`, or `default` when there is no such file; a file that is not valid JSON
    is a one-line `RunDirError` naming it (and `what` it holds, to say what is at stake)."""
    path = Path(path)
    if not path.is_file():
        return default
    try:
        return undo_nonfinite(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        hold = f" ({what})" if what else ""
        raise RunDirError(f"{path}{hold} is not valid JSON: {e}; restore it or delete it") from None


def _parse(line: str) -> dict[str, Any]:
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise json.JSONDecodeError("not a JSON object", line, 0)
    return undo_nonfinite(obj)


def read_jsonl(path: str | os.PathLike, repair: bool = False) -> list[dict[str, Any]]:
    """The rows of a JSONL file ([] when it does not exist). See the module docstring for torn lines."""
    path = Path(path)
    if not path.is_file():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    # A final "\n" leaves an empty last element; without it the last line may be a torn append.
    ends_clean = lines[-1] == b""
    if ends_clean:
        lines.pop()
    numbered = [(i + 1, raw) for i, raw in enumerate(lines) if raw.strip()]
    rows: list[dict[str, Any]] = []
    torn: tuple[int, bytes] | None = None
    for pos, (lineno, raw) in enumerate(numbered):
        try:
            rows.append(_parse(raw.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            if pos == len(numbered) - 1:
                torn = (lineno, raw)
                break
            raise RunDirError(f"{path}:{lineno}: not a JSON object ({e}); only a torn last line "
                              f"is skipped, so fix or remove this line") from None
    if torn is not None:
        lineno, raw = torn
        fixed = " and rewrote the file without it" if repair else ""
        print(f"[boundlab] {path}:{lineno}: skipped a torn last line ({len(raw)} bytes, cut off by a "
              f"crash or a full disk){fixed}", file=sys.stderr, flush=True)
    if repair and (torn is not None or not ends_clean):
        write_jsonl(path, rows)
    return rows


def write_jsonl(path: str | os.PathLike, rows: list[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(dumps(r) + "\n" for r in rows))


def append_jsonl(path: str | os.PathLike, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Add `row` to the rows on disk (re-read, so a row another process added is kept) and write
    the file atomically. Returns the rows now in the file."""
    rows = read_jsonl(path, repair=True)
    rows.append(row)
    write_jsonl(path, rows)
    return rows


def append_lines(path: str | Path, lines: list[str] | str) -> None:
    """Append whole lines (terminal colour codes removed) to a text file such as RUN_DIR/train.log,
    Hydra's job log, which its handler also opens in append mode, so records and lines interleave whole."""
    import re

    if isinstance(lines, str):
        lines = [lines]
    with open(path, "a", encoding="utf-8") as f:
        for line in lines:
            f.write(re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip("\n") + "\n")
