"""The probe store's one-line errors for SQLite and OS failures a user can fix (a full disk, a corrupt
file, no write permission, a missing folder)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from boundlab.errors import DiskFull, StoreError


def store_error(path: Path, e: BaseException, doing: str) -> Exception | None:
    """The one-line user error for a SQLite/OS error on the store at `path`, or None when the
    error is not one the user can fix (it is then re-raised as it is)."""
    code = getattr(e, "sqlite_errorcode", None)
    msg = str(e)
    if code == getattr(sqlite3, "SQLITE_FULL", 13) or "disk is full" in msg \
            or getattr(e, "errno", None) == 28:
        return DiskFull(f"no space left on device while {doing} the probe store {path} ({msg}): free "
                        f"space on that disk and rerun the same command (a probe continues where it "
                        f"stopped), or set store.path= (BOUNDLAB_STORE) to a file on another disk")
    if code in (getattr(sqlite3, "SQLITE_NOTADB", 26), getattr(sqlite3, "SQLITE_CORRUPT", 11)) \
            or "not a database" in msg or "malformed" in msg:
        return StoreError(f"the probe store {path} is corrupt ({msg}): move it aside with "
                          f"mv {path} {path}.corrupt and rerun (its probes are sampled again), or after "
                          f"the mv salvage what is readable: sqlite3 {path}.corrupt .recover | sqlite3 {path}")
    if code == getattr(sqlite3, "SQLITE_READONLY", 8) or "readonly" in msg \
            or isinstance(e, PermissionError):
        return StoreError(f"the probe store {path} is not writable ({msg}): make it and its folder "
                          f"writable (chmod u+w {path} {path.parent}) or set store.path= "
                          f"(BOUNDLAB_STORE) to a writable file")
    if code == getattr(sqlite3, "SQLITE_CANTOPEN", 14) or "unable to open" in msg:
        return StoreError(f"cannot open the probe store {path} ({msg}): its folder must exist and be "
                          f"writable (SQLite adds {path.name}-wal and -shm beside it); set store.path= "
                          f"(BOUNDLAB_STORE) to a file in a writable folder")
    return None
