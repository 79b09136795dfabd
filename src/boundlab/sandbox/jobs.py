"""What a caller hands the sandbox and gets back: settings, jobs, results, outcomes.

A function job's verdict is the judge's (inside the sandbox); a stdin/stdout job's verdict is
decided in the parent (`pool`), one case at a time, so expected outputs never enter the sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from boundlab.errors import UserError

OUTCOMES = ("passed", "failed", "timeout", "memory", "runtime_error", "sandbox_error")


class SandboxUnavailable(UserError, RuntimeError):
    """No isolation we trust is available, and weak isolation was not asked for (a user error:
    the entry points print its one line and exit 2)."""


@dataclass
class SandboxConfig:
    # Wall-clock seconds per program run (a function task's whole test run; one stdio case).
    timeout_s: float = 3.0
    # Address-space limit per program (RLIMIT_AS), MiB.
    memory_mb: int = 1024
    # Worker processes (sandboxes); None: one per CPU core.
    workers: int | None = None
    # Run without bubblewrap when it is missing (namespaces only if the kernel allows them
    # unprivileged, the file system stays visible). Off by default; warns loudly when used.
    allow_weak_isolation: bool = False
    # Run model-written code even when a confinement layer besides bubblewrap (seccomp; the
    # cgroups, as root) cannot be set up here. Off: such a pool refuses to start, naming the layer.
    # On: it runs without that layer and logs it. See boundlab.sandbox.layers.
    allow_weaker: bool = False
    # Extra attempts for a program whose run hit a sandbox error or lost its worker.
    retries: int = 2
    # Largest stdout a stdin/stdout program may print (bytes); beyond it the run fails.
    output_limit_bytes: int = 8 << 20
    # Private tmpfs working dir per program: size (MiB) and inode count.
    tmpfs_mb: int = 64
    tmpfs_inodes: int = 4096
    # Largest file a program may write (RLIMIT_FSIZE), MiB.
    fsize_mb: int = 16
    # Processes + threads per program (RLIMIT_NPROC, counted in the program's own user namespace).
    nproc: int = 32
    # Open files per program (RLIMIT_NOFILE).
    nofile: int = 256
    # Host uid/gid the sandboxes run as when the probe runs as root (must not be 0).
    uid: int = 61234
    gid: int = 61234
    # Paths; None: found on PATH / this interpreter.
    bwrap: str | None = None
    python: str | None = None
    # Let programs import the interpreter's site-packages (read-only). Off: standard library only.
    site_packages: bool = False
    # Install the seccomp deny-list in each program (libseccomp, for this machine's architecture).
    seccomp: bool = True
    # Seconds a worker may take to start and pass its self-test.
    startup_timeout_s: float = 60.0


@dataclass
class RunResult:
    outcome: str
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


@dataclass
class FunctionJob:
    """Run `program`, then the test code (with `check(<entry_point>)` when it defines check)."""

    program: str
    test: str
    entry_point: str | None = None
    timeout_s: float | None = None


@dataclass
class StdioJob:
    """Run `program` once per case with the case's input on stdin; compare stdout here."""

    program: str
    cases: Sequence[tuple[str, str]]
    timeout_s: float | None = None
    float_tol: float | None = None
    # Trusted programs only (a benchmark's canonical solution): no comparison; a run that exits 0
    # on every case passes, with each case's stdout in `info["stdout"]` (expected outputs unused).
    capture: bool = False

