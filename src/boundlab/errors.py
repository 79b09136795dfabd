"""User errors: something the user can fix, reported by the entry points as one line, exit 2.

`boundlab.cli.friendly_errors` prints `error: <message>` for these (and for ConfigError, DataError,
ModelNotFound, FileNotFoundError) instead of a traceback. A message names the key, file (and line)
or path, and says what to do.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class UserError(Exception):
    """Base of the errors below: one line for the user, never a traceback."""


class StoreError(UserError):
    """The probe store cannot be opened or written (corrupt, read-only, a directory, disk full)."""


class TextDropped(StoreError):
    """A reader needs a completion's text that a compact probe (probe.keep_text=compact) dropped."""


class DiskFull(UserError):
    """No space left while writing the store, a checkpoint or a run file."""


class ModelFileError(UserError):
    """A model folder holds a weight file that cannot be read (truncated or corrupted)."""


def is_no_space(e: BaseException) -> bool:
    """Whether `e` (or an exception it was raised from or during) reports ENOSPC: errno 28, or its
    text (safetensors says "os error 28"). torch's writer says only "file write failed"; that case
    is decided by `no_space_left`, which looks at the free space."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if getattr(e, "errno", None) == 28 or "No space left on device" in str(e) \
                or "os error 28" in str(e):
            return True
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return False


_LOW_SPACE = 64 << 20  # bytes: below this a failed torch write is taken for a full disk


def _free_bytes(path: Path) -> int | None:
    import shutil

    for p in (path, *path.parents):
        if p.exists():
            try:
                return shutil.disk_usage(p).free
            except OSError:
                return None
    return None


@contextmanager
def no_space_left(path: str | Path, then: str) -> Iterator[None]:
    """Turn a full disk met inside the block into one `DiskFull` line naming the file (or `path`)
    and `then`, what to run once space is freed. Other errors pass through unchanged."""
    path = Path(path)
    try:
        yield
    except UserError:
        raise
    except Exception as e:  # noqa: BLE001 - OSError, torch's RuntimeError, SafetensorError alike
        torch_write = "file write failed" in str(e) or "failed writing file" in str(e)
        free = _free_bytes(path)
        if not (is_no_space(e) or (torch_write and free is not None and free < _LOW_SPACE)):
            raise
        where = getattr(e, "filename", None) or path
        left = "" if free is None else f", {free >> 20} MiB free"
        raise DiskFull(f"no space left on device while writing {where}{left}: free space on that "
                       f"disk, then {then}") from None


class Interrupted(Exception):
    """The user pressed Ctrl-C: the message is the one line that says where the run stopped and how
    to continue it (the entry points print it and exit 130, the shell's code for SIGINT)."""
