"""Per-worker memory and pids cgroups (root only; best effort, v1 or v2).

RLIMIT_AS bounds one process, and RLIMIT_NPROC the number of processes, so a program that forks
its limit and fills each child could still hold nproc x memory_mb of RAM. A memory cgroup around
each worker caps the whole program (and its tmpfs) at once; a pids cgroup backs RLIMIT_NPROC.
Both need root (or a delegated cgroup v2 subtree); without them the sandbox still runs, with the
per-process limits only, and `SandboxPool.cgroups` says so.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

_COUNTER = itertools.count()


def _mounts() -> tuple[dict[str, str], str | None]:
    """({v1 controller: mount point}, v2 mount point)."""
    v1: dict[str, str] = {}
    v2 = None
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return v1, v2
    for line in lines:
        left, _, right = line.partition(" - ")
        parts, rparts = left.split(), right.split()
        if len(parts) < 5 or len(rparts) < 3:
            continue
        mnt, fstype, opts = parts[4], rparts[0], rparts[2].split(",")
        if fstype == "cgroup2" and v2 is None:
            v2 = mnt
        elif fstype == "cgroup":
            for c in ("memory", "pids"):
                if c in opts:
                    v1.setdefault(c, mnt)
    return v1, v2


def _own_paths() -> tuple[dict[str, str], str | None]:
    v1: dict[str, str] = {}
    v2 = None
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            hid, ctrls, path = line.split(":", 2)
            if hid == "0" and ctrls == "":
                v2 = path
            for c in ctrls.split(","):
                v1[c] = path
    except (OSError, ValueError):
        pass
    return v1, v2


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


class WorkerCgroup:
    """Cgroup directories holding one worker; the launcher joins them before exec'ing bwrap."""

    def __init__(self, dirs: list[Path], kinds: list[str]):
        self.dirs = dirs
        self.kinds = kinds  # e.g. ["memory(v1)", "pids(v1)"]

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    @classmethod
    def create(cls, memory_bytes: int, pids_max: int) -> "WorkerCgroup | None":
        if os.geteuid() != 0:
            return None
        name = f"boundlab-sandbox-{os.getpid()}-{next(_COUNTER)}"
        v1_mounts, v2_mount = _mounts()
        v1_paths, v2_path = _own_paths()
        dirs: list[Path] = []
        kinds: list[str] = []
        wanted = {"memory": memory_bytes, "pids": pids_max}
        # cgroup v2 first (one directory for both controllers), where the controllers are enabled
        if v2_mount and v2_path is not None:
            d = Path(v2_mount) / v2_path.lstrip("/") / name
            try:
                d.mkdir()
                avail = (d / "cgroup.controllers").read_text().split()
                done = []
                if "memory" in avail:
                    _write(d / "memory.max", str(memory_bytes))
                    try:
                        _write(d / "memory.swap.max", "0")
                    except OSError:
                        pass
                    done.append("memory")
                if "pids" in avail:
                    _write(d / "pids.max", str(pids_max))
                    done.append("pids")
                if done:
                    dirs.append(d)
                    kinds += [f"{c}(v2)" for c in done]
                    for c in done:
                        wanted.pop(c)
                else:
                    d.rmdir()
            except OSError:
                _rmdir(d)
        for ctrl, value in list(wanted.items()):
            if ctrl not in v1_mounts or ctrl not in v1_paths:
                continue
            d = Path(v1_mounts[ctrl]) / v1_paths[ctrl].lstrip("/") / name
            try:
                d.mkdir()
                if ctrl == "memory":
                    _write(d / "memory.limit_in_bytes", str(value))
                    try:
                        _write(d / "memory.memsw.limit_in_bytes", str(value))
                    except OSError:
                        pass
                else:
                    _write(d / "pids.max", str(value))
                dirs.append(d)
                kinds.append(f"{ctrl}(v1)")
            except OSError as e:
                log.info("no %s cgroup for the sandbox: %s", ctrl, e)
                _rmdir(d)
        if not dirs:
            return None
        return cls(dirs, kinds)

    def remove(self, wait_s: float = 2.0) -> None:
        deadline = time.monotonic() + wait_s
        for d in self.dirs:
            while not _rmdir(d) and time.monotonic() < deadline:
                time.sleep(0.02)  # tasks still leaving


def _rmdir(d: Path) -> bool:
    try:
        d.rmdir()
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False
