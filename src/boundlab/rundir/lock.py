"""One trainer and one prober per run dir: advisory `flock` locks on files in the run dir.

- `train.lock` is held by the training process for its whole life (under accelerate only rank 0
  takes it: the other ranks of the same job share the run dir by design).
- `probe.lock` is held by whoever probes the run's checkpoints and appends to `probes.jsonl`: the
  trainer itself with `train.probe_mode=inline`, or a `probe.py watch=RUN_DIR` worker. So two
  watchers, or a watcher beside an inline trainer, cannot both probe.

A second holder fails at once, in one line that names the first (pid, host, start time, command),
which the holder writes into the lock file after taking the lock.

Why flock and not a pid file: the kernel drops a flock when the last descriptor of it closes, so a
process killed with SIGKILL (or by the OOM killer) leaves nothing that blocks the next run; the
file's text is only read to name a *live* holder. The file is never deleted: unlinking a lock file
races with a process that opened it just before. Python opens it non-inheritable, so programs
started with exec (spawned workers, sandboxes) never hold it; only a plain fork would share it.

File systems: Linux emulates flock with byte-range locks on NFS (visible across nodes); Lustre
needs the `flock` mount option. Where the file system refuses locks we warn in one line and go on
unlocked rather than make every run impossible there.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from boundlab.rundir import PROBE_LOCK, TRAIN_LOCK

# Locks this process holds: lock file -> [fd, depth]. Re-entrant because a resume takes the train
# lock before it records itself, then the training function takes it again; a second flock on a
# new descriptor of the same file would conflict with our own first one.
_HELD: dict[str, list[int]] = {}


class RunDirBusy(RuntimeError):
    """Another live process holds this run dir's lock."""


def main_rank() -> bool:
    """Rank 0 of a multi-process launch (or a single process): the one that locks and probes."""
    return int(os.environ.get("RANK", "0")) == 0


def _describe(path: Path) -> str:
    try:
        h = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        h = {}
    if not h.get("pid"):
        return "another process (it has not written its name yet)"
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(h.get("since", 0)))
    who = f"pid {h['pid']} on {h.get('host', '?')} ({h.get('what', '?')}, since {since})"
    if h.get("host") == socket.gethostname() and not _alive(int(h["pid"])):
        # flock outlives its taker only in a forked child that still has the descriptor.
        who += f"; that pid is gone, a process forked from it still holds {path.name} (see: fuser {path})"
    return who


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def acquire(run_dir: str | Path, name: str, what: str) -> bool:
    """Take RUN_DIR/name, or raise RunDirBusy naming the holder. False when the file system
    cannot lock (warned; the run goes on unlocked)."""
    import fcntl

    path = Path(run_dir) / name
    key = str(path.resolve())
    if key in _HELD:
        _HELD[key][1] += 1
        return True
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:  # a read-only run dir: whatever needs writing will say so itself
        print(f"[boundlab] warning: cannot lock {path} ({e.strerror}); nothing stops a second "
              f"process on this run dir", file=sys.stderr, flush=True)
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise RunDirBusy(f"{run_dir} is in use: {name} is held by {_describe(path)}; "
                             f"wait for it to end or stop it (the lock frees itself when it exits)") from None
        print(f"[boundlab] warning: cannot lock {path} ({e.strerror}); nothing stops a second "
              f"process on this run dir", file=sys.stderr, flush=True)
        return False
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(), "what": what}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
    _HELD[key] = [fd, 1]
    return True


def held_by(run_dir: str | Path, name: str) -> str | None:
    """Who holds RUN_DIR/name now (its holder line), or None when no process does. Only looks:
    a shared, non-blocking flock on a read-only descriptor, dropped at once; nothing is written."""
    import fcntl

    path = Path(run_dir) / name
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None  # never taken here (or unreadable: nothing to say who)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return _describe(path)
        return None
    finally:
        os.close(fd)  # drops the shared lock, if taken
    return None


def release(run_dir: str | Path, name: str) -> None:
    key = str((Path(run_dir) / name).resolve())
    held = _HELD.get(key)
    if held is None:
        return
    held[1] -= 1
    if held[1] == 0:
        del _HELD[key]
        os.close(held[0])  # closing the last descriptor drops the flock; the text stays, unread


@contextmanager
def hold(run_dir: str | Path, names: tuple[str, ...], what: str) -> Iterator[None]:
    """Hold every lock in `names` (in order) for the block; only on the main rank."""
    taken: list[str] = []
    try:
        if main_rank():
            for name in names:
                if acquire(run_dir, name, what):
                    taken.append(name)
        yield
    finally:
        for name in reversed(taken):
            release(run_dir, name)


def training_locks(run_dir: str | Path, probe_mode: str) -> Any:
    """What a training process holds: the run dir, and the probing too when it probes inline
    (`probe_mode` is train.probe_mode)."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    names = (TRAIN_LOCK, PROBE_LOCK) if probe_mode == "inline" else (TRAIN_LOCK,)
    return hold(run_dir, names, _what())


def watcher_lock(run_dir: str | Path) -> Any:
    """What a `probe.py watch=` worker holds. A missing dir is left to the watcher's own error."""
    if not Path(run_dir).is_dir():
        return hold(run_dir, (), _what())
    return hold(run_dir, (PROBE_LOCK,), _what())


def _what() -> str:
    argv = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else ["python"]
    s = " ".join(argv)
    return s if len(s) <= 120 else s[:117] + "..."
