"""The parent's side of the sandbox: a pool of pre-started bubblewrap workers.

Each worker is one bubblewrap sandbox (its own user, pid, mount, network, ipc, uts and cgroup
namespaces; read-only OS; no home, run dir or checkpoints in view; an empty environment) running
`_worker.py`, which forks one process per program (see its docstring). A slot thread per worker
feeds it jobs from a shared queue, so the probe submits thousands of programs and collects
futures.

Verdicts. Function tasks: the worker's judge runs the tests and returns the outcome. Stdin/stdout
tasks: the worker returns what the program printed, and the comparison with the expected output
happens here; expected outputs never enter the sandbox.

Failures. A worker that dies or hangs is killed and replaced, and the job is retried on the new
one; a `sandbox_error` (the sandbox could not start the program) is retried too. When every
attempt lost its worker while this very program ran, the program is blamed (`runtime_error` if
the worker died, `timeout` if it hung); a sandbox error that survives all retries is returned
as `sandbox_error`, never as a failure of the model.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from boundlab.sandbox.cgroups import WorkerCgroup
from boundlab.sandbox.compare import outputs_match
from boundlab.sandbox.seccomp import deny_list_bpf

log = logging.getLogger(__name__)

OUTCOMES = ("passed", "failed", "timeout", "memory", "runtime_error", "sandbox_error")

_HDR = struct.Struct(">I")
_HERE = Path(__file__).resolve().parent
# Inside the sandbox the judge and the programs see this uid (inside their user namespaces).
INNER_UID = 1000
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
               "LANG": "C.UTF-8", "USER": "sandbox"}


class SandboxUnavailable(RuntimeError):
    """No isolation we trust is available, and weak isolation was not asked for."""


class _StartError(RuntimeError):
    pass


class _WorkerLost(RuntimeError):
    def __init__(self, kind: str, detail: str = ""):
        super().__init__(f"worker {kind}: {detail}")
        self.kind = kind  # "died" or "hung"


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
    # Install the seccomp deny-list in each program (x86_64).
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


# ------------------------------------------------------------------------------------------------
# Where isolation comes from


def find_bwrap(cfg: SandboxConfig | None = None) -> str | None:
    cfg = cfg or SandboxConfig()
    if cfg.bwrap:
        return cfg.bwrap if os.access(cfg.bwrap, os.X_OK) else None
    return shutil.which("bwrap")


_PROBE_CACHE: dict[tuple, str | None] = {}


def isolation_problem(cfg: SandboxConfig | None = None) -> str | None:
    """Why strict (bubblewrap) isolation cannot run here, or None when it can."""
    cfg = cfg or SandboxConfig()
    bwrap = find_bwrap(cfg)
    if bwrap is None:
        return ("bubblewrap (bwrap) is not installed: `apt-get install -y bubblewrap` "
                "(see .ci/system-deps.sh)")
    key = (bwrap, os.geteuid(), cfg.uid)
    if key not in _PROBE_CACHE:
        plan = _Plan(cfg, strict=True)
        argv = plan.bwrap_args(["/bin/true"], minimal=True)
        try:
            r = subprocess.run(plan.launch_cmd(argv), env=plan.launch_env, capture_output=True,
                               timeout=30)
            _PROBE_CACHE[key] = None if r.returncode == 0 else (
                f"bubblewrap cannot start a sandbox here (exit {r.returncode}): "
                f"{r.stderr.decode(errors='replace').strip()[:500]}")
        except (OSError, subprocess.TimeoutExpired) as e:
            _PROBE_CACHE[key] = f"bubblewrap cannot start a sandbox here: {e}"
    return _PROBE_CACHE[key]


class _Plan:
    """How to start one worker: the command line, environment and judge config."""

    def __init__(self, cfg: SandboxConfig, strict: bool):
        self.cfg = cfg
        self.strict = strict
        self.bwrap = find_bwrap(cfg) if strict else None
        self.as_root = os.geteuid() == 0
        if self.as_root and strict and cfg.uid == 0:
            raise ValueError("sandbox uid must not be 0")
        self.python, self.prefix = _interpreter(cfg.python)
        self.launch_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        self.worker_source = (_HERE / "_worker.py").read_text(encoding="utf-8")
        bpf = deny_list_bpf() if cfg.seccomp else None
        self.judge_cfg = {
            "strict": strict,
            "env": dict(SANDBOX_ENV),
            "output_limit": cfg.output_limit_bytes,
            "seccomp_bpf": bpf.hex() if bpf else None,
            "limits": {"memory_mb": cfg.memory_mb, "fsize_mb": cfg.fsize_mb, "nofile": cfg.nofile,
                       "nproc": cfg.nproc, "tmpfs_mb": cfg.tmpfs_mb,
                       "tmpfs_inodes": cfg.tmpfs_inodes},
        }

    def _python_argv(self) -> list[str]:
        flags = ["-I"] if self.cfg.site_packages else ["-I", "-S"]
        return [self.python, *flags, "-c", self.worker_source, json.dumps(self.judge_cfg)]

    def bwrap_args(self, command: list[str], minimal: bool = False) -> list[str]:
        a = ["--unshare-all", "--die-with-parent", "--new-session",
             "--uid", str(INNER_UID), "--gid", str(INNER_UID), "--hostname", "sandbox",
             "--ro-bind", "/usr", "/usr"]
        for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(d):
                a += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                a += ["--ro-bind", d, d]
        for f in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
                  "/etc/alternatives"):
            a += ["--ro-bind-try", f, f]
        if not minimal and not _under(self.prefix, "/usr"):
            src = "/tmp/b0" if self.as_root else self.prefix
            a += ["--ro-bind", src, self.prefix]
        a += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
        a += ["--size", str(16 << 20), "--tmpfs", "/tmp", "--remount-ro", "/", "--clearenv"]
        for k, v in SANDBOX_ENV.items():
            a += ["--setenv", k, v]
        a += ["--chdir", "/tmp", "--"] + command
        return a

    def launch_cmd(self, bwrap_argv: list[str], cgroup_procs: Sequence[str] = ()) -> list[str]:
        """Root: through the launcher (cgroups, private mount ns, staged interpreter, setuid)."""
        if not self.as_root:
            return [self.bwrap, *bwrap_argv]
        binds = [] if _under(self.prefix, "/usr") else [self.prefix]
        spec = {"stage": "/tmp", "binds": binds, "uid": self.cfg.uid, "gid": self.cfg.gid,
                "bwrap": os.path.realpath(self.bwrap), "argv": bwrap_argv,
                "env": self.launch_env, "cgroup_procs": list(cgroup_procs),
                "oom_score_adj": -900}
        src = (_HERE / "_launcher.py").read_text(encoding="utf-8")
        return [sys.executable, "-I", "-S", "-c", src, json.dumps(spec)]

    def worker_cmd(self, cgroup: WorkerCgroup | None = None) -> list[str]:
        if not self.strict:
            return self._python_argv()
        procs = cgroup.procs_files if cgroup else ()
        return self.launch_cmd(self.bwrap_args(self._python_argv()), procs)

    def make_cgroup(self) -> WorkerCgroup | None:
        """Memory and pids cgroups around one worker (root with bwrap only; else None)."""
        if not (self.strict and self.as_root):
            return None
        cfg = self.cfg
        # one program (its processes and its tmpfs) plus the judge, the forker and bwrap
        memory = (cfg.memory_mb + cfg.tmpfs_mb + 256) << 20
        return WorkerCgroup.create(memory_bytes=memory, pids_max=cfg.nproc + 16)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _interpreter(python: str | None) -> tuple[str, str]:
    """(interpreter path, the prefix holding its standard library)."""
    if python is None:
        return os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix)
    out = subprocess.run([python, "-I", "-S", "-c",
                          "import os,sys;print(os.path.realpath(sys.executable));"
                          "print(os.path.realpath(sys.base_prefix))"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return out[0], out[1]


# ------------------------------------------------------------------------------------------------
# One worker process


class _Worker:
    def __init__(self, plan: _Plan):
        self.plan = plan
        self.stderr = tempfile.TemporaryFile()
        self.cgroup = plan.make_cgroup()
        try:
            self.proc = subprocess.Popen(plan.worker_cmd(self.cgroup), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.stderr,
                                         env=plan.launch_env if plan.strict else dict(SANDBOX_ENV),
                                         bufsize=0, start_new_session=True, close_fds=True)
        except OSError as e:
            self._remove_cgroup()
            raise _StartError(f"cannot start the sandbox worker: {e}") from None
        self.hello: dict[str, Any] = {}
        try:
            hello = self._read(plan.cfg.startup_timeout_s)
        except _WorkerLost as e:
            self.kill()
            raise _StartError(f"sandbox worker did not start ({e}); stderr: {self._stderr()}")
        if not hello.get("ok"):
            self.kill()
            raise _StartError(f"sandbox worker failed its self-test: {hello.get('selftest')}; "
                              f"stderr: {self._stderr()}")
        self.hello = hello

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _stderr(self) -> str:
        try:
            self.stderr.seek(0)
            return self.stderr.read()[-2000:].decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""

    def _read(self, timeout: float) -> dict[str, Any]:
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = bytearray()
        need = 4
        while len(buf) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _WorkerLost("hung", f"no answer within {timeout:.1f}s")
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise _WorkerLost("died", f"exit status {self.proc.poll()}")
            buf += chunk
            if need == 4 and len(buf) >= 4:
                need = 4 + _HDR.unpack(buf[:4])[0]
        return json.loads(bytes(buf[4:need]))

    def request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        data = json.dumps(msg).encode()
        try:
            self.proc.stdin.write(_HDR.pack(len(data)) + data)
        except (BrokenPipeError, OSError) as e:
            raise _WorkerLost("died", str(e)) from None
        return self._read(timeout)

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            log.error("sandbox worker %s did not die", self.proc.pid)
        self._close_files()
        self._remove_cgroup()

    def _remove_cgroup(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None

    def close(self) -> None:
        try:
            self.request({"op": "exit"}, 0.01)
        except _WorkerLost:
            pass
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=3)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def _close_files(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self.stderr):
            try:
                f.close()
            except (OSError, AttributeError):
                pass


# ------------------------------------------------------------------------------------------------
# The pool


class SandboxPool:
    """Run programs in pre-started sandbox workers. Thread-safe; `submit` returns a Future."""

    def __init__(self, cfg: SandboxConfig | None = None, **overrides: Any):
        cfg = cfg or SandboxConfig()
        if overrides:
            cfg = SandboxConfig(**{**asdict(cfg), **overrides})
        self.cfg = cfg
        problem = isolation_problem(cfg)
        if problem is None:
            self.isolation = "bwrap"
        elif cfg.allow_weak_isolation:
            self.isolation = "weak"
            msg = ("!!! SANDBOX RUNNING WITH WEAK ISOLATION: " + problem + ". Model-written code "
                   "will run without bubblewrap: it can read (and write) this user's files"
                   + (", as root, with no process-count limit" if os.geteuid() == 0 else "")
                   + ". Install bubblewrap for real isolation. !!!")
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            log.warning(msg)
        else:
            raise SandboxUnavailable(
                "refusing to run model-written code: " + problem + ". Install bubblewrap, or "
                "pass allow_weak_isolation=True to run with much weaker isolation (not for "
                "untrusted models).")
        self.plan = _Plan(cfg, strict=self.isolation == "bwrap")
        self.n_workers = max(1, int(cfg.workers or os.cpu_count() or 1))
        self._q: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._slots: list[_Slot] = []
        self._closed = False
        self._ever_started = False
        self.stats = _Stats(workers_started=0, workers_lost=0, retries=0)
        _LIVE.add(self)

    # -- public API
    def submit(self, job: FunctionJob | StdioJob) -> Future:
        fut: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("sandbox pool is closed")
            if not self._threads:
                self._start_threads()
        self._q.put((job, fut))
        return fut

    def run(self, job: FunctionJob | StdioJob) -> RunResult:
        return self.submit(job).result()

    def map(self, jobs: Sequence[FunctionJob | StdioJob]) -> list[RunResult]:
        futs = [self.submit(j) for j in jobs]
        return [f.result() for f in futs]

    @property
    def cgroups(self) -> list[str]:
        """The cgroup controllers around the workers (empty: per-process limits only)."""
        for s in self._slots:
            if s.worker is not None and s.worker.cgroup is not None:
                return list(s.worker.cgroup.kinds)
        return []

    def worker_pids(self) -> list[int]:
        """Pids of the live workers (the bwrap processes)."""
        return [w.pid for w in (s.worker for s in self._slots)
                if w is not None and w.proc.poll() is None]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for _ in self._threads:
            self._q.put(None)
        for t in self._threads:
            t.join(timeout=30)
        _LIVE.discard(self)

    def __enter__(self) -> "SandboxPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals
    def _start_threads(self) -> None:
        for i in range(self.n_workers):
            slot = _Slot(self, i)
            # The thread that starts a worker must outlive it: bwrap --die-with-parent follows
            # the *thread* that forked it. So each slot thread starts and owns its worker.
            t = threading.Thread(target=slot.main, name=f"sandbox-slot-{i}", daemon=True)
            self._slots.append(slot)
            self._threads.append(t)
            t.start()


class _Stats(dict):
    """Counters shared by the slot threads."""

    def __init__(self, **kw: int):
        super().__init__(**kw)
        self._lock = threading.Lock()

    def bump(self, key: str) -> None:
        with self._lock:
            self[key] += 1


_LIVE: "weakref.WeakSet[SandboxPool]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:  # pragma: no cover - interpreter exit
    for pool in list(_LIVE):
        try:
            pool.close()
        except Exception:  # noqa: BLE001
            pass


class _Slot:
    def __init__(self, pool: SandboxPool, index: int):
        self.pool = pool
        self.index = index
        self.worker: _Worker | None = None

    def main(self) -> None:
        try:
            while True:
                try:
                    item = self.pool._q.get(timeout=0.5)
                except queue.Empty:
                    self.heal()
                    continue
                if item is None:
                    break
                job, fut = item
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    fut.set_result(self.execute(job))
                except BaseException as e:  # noqa: BLE001 - hand it to the caller
                    fut.set_exception(e)
        finally:
            if self.worker is not None:
                self.worker.close()
                self.worker = None

    # -- worker lifecycle
    def ensure_worker(self) -> _Worker:
        if self.worker is not None and self.worker.proc.poll() is not None:
            self.discard()
        if self.worker is None:
            try:
                self.worker = _Worker(self.pool.plan)
            except _StartError as e:
                if not self.pool._ever_started:
                    raise SandboxUnavailable(str(e)) from None
                raise
            self.pool._ever_started = True
            self.pool.stats.bump("workers_started")
        return self.worker

    def heal(self) -> None:
        """While idle: replace a worker that died (killed from outside, out of memory...)."""
        if self.worker is not None and self.worker.proc.poll() is not None:
            self.discard()
            try:
                self.ensure_worker()
            except Exception as e:  # noqa: BLE001 - the next job retries and reports it
                log.warning("could not replace a dead sandbox worker: %s", e)

    def discard(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.worker = None
            self.pool.stats.bump("workers_lost")

    def request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One judge request with retries. Returns the reply, or a synthetic one."""
        cfg = self.pool.cfg
        # The judge answers within the program's time limit plus its own work; past this the
        # worker is considered hung.
        watchdog = timeout * 2 + 10.0
        attempts = cfg.retries + 1
        lost: list[str] = []
        last: dict[str, Any] | None = None
        for attempt in range(attempts):
            if attempt:
                self.pool.stats.bump("retries")
            try:
                worker = self.ensure_worker()
            except _StartError as e:
                last = {"outcome": "sandbox_error", "status": "sandbox_error",
                        "info": {"reason": str(e)[:500]}}
                continue
            try:
                reply = worker.request(msg, watchdog)
            except _WorkerLost as e:
                self.discard()
                lost.append(e.kind)
                last = {"outcome": "sandbox_error", "status": "sandbox_error",
                        "info": {"reason": f"worker {e.kind}"}}
                continue
            if reply.get("fatal"):
                self.discard()
            if "sandbox_error" in (reply.get("outcome"), reply.get("status")):
                last = reply
                if reply.get("retry", True):
                    continue
            return reply
        if len(lost) == attempts:
            # Every attempt lost its worker while running this program: the program did it.
            outcome = "timeout" if all(k == "hung" for k in lost) else "runtime_error"
            return {"outcome": outcome, "status": outcome,
                    "info": {"reason": f"worker {'/'.join(lost)} while running the program"}}
        return last or {"outcome": "sandbox_error", "status": "sandbox_error", "info": {}}

    def execute(self, job: FunctionJob | StdioJob) -> RunResult:
        cfg = self.pool.cfg
        timeout = float(job.timeout_s or cfg.timeout_s)
        if isinstance(job, FunctionJob):
            reply = self.request({"op": "function", "program": job.program, "test": job.test,
                                  "entry_point": job.entry_point, "timeout": timeout}, timeout)
            outcome = reply.get("outcome", "sandbox_error")
            if outcome not in OUTCOMES:
                outcome = "sandbox_error"
            return RunResult(outcome, dict(reply.get("info") or {}))
        return self._execute_stdio(job, timeout)

    def _execute_stdio(self, job: StdioJob, timeout: float) -> RunResult:
        n = len(job.cases)
        if n == 0:
            return RunResult("sandbox_error", {"reason": "no test cases"})
        for i, (stdin, expected) in enumerate(job.cases):
            reply = self.request({"op": "stdio", "program": job.program, "stdin": stdin,
                                  "timeout": timeout}, timeout)
            status = reply.get("status", "sandbox_error")
            info: dict[str, Any] = {"case": i, "cases": n}
            if "elapsed_s" in reply:
                info["elapsed_s"] = reply["elapsed_s"]
            if status in ("sandbox_error", "timeout", "runtime_error", "memory") and \
                    "code" not in reply:
                info.update(reply.get("info") or {})
                return RunResult(status, info)
            stderr = str(reply.get("stderr", ""))
            code = reply.get("code", 0)
            if status == "exited" and code == 0:
                if outputs_match(str(reply.get("stdout", "")), expected, job.float_tol):
                    continue
                info["reason"] = "wrong output"
                return RunResult("failed", info)
            if stderr:
                info["stderr"] = stderr[-1000:]
            if status == "output_limit":
                info["reason"] = "output limit exceeded"
                return RunResult("failed", info)
            if status in ("timeout", "memory"):
                return RunResult(status, info)
            if "MemoryError" in stderr[-300:]:
                return RunResult("memory", info)
            info["reason"] = f"exit code {code}"
            return RunResult("runtime_error", info)
        return RunResult("passed", {"cases": n})

