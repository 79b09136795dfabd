"""The parent's side of the sandbox: a pool of pre-started bubblewrap workers.

Each worker is one bubblewrap sandbox (its own user, pid, mount, network, ipc, uts and cgroup
namespaces; read-only OS; no home, run dir or checkpoints in view; an empty environment) running
the `_worker` package, which forks one process per program (see its docstring; how a worker is
started is in `launch`, how it is spoken to in `worker_process`). A slot thread per worker feeds
it jobs from a shared queue, so the probe submits thousands of programs and collects futures.

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
import logging
import os
import queue
import threading
import warnings
import weakref
from concurrent.futures import Future
from dataclasses import asdict
from typing import Any, Sequence

from boundlab.sandbox.compare import outputs_match
from boundlab.sandbox.jobs import (
    OUTCOMES,
    FunctionJob,
    RunResult,
    SandboxConfig,
    SandboxUnavailable,
    StdioJob,
)
from boundlab.sandbox.launch import _Plan, isolation_problem
from boundlab.sandbox.layers import missing_layers, refusal
from boundlab.sandbox.worker_process import _StartError, _Worker, _WorkerLost

log = logging.getLogger(__name__)


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
        strict = self.isolation == "bwrap"
        # Every other layer is in force or refused (boundlab.sandbox.layers); `without` names the
        # ones the user opted out of, for the run's record.
        missing = missing_layers(cfg, strict)
        if missing and not cfg.allow_weaker:
            raise SandboxUnavailable(refusal(missing))
        self.without = frozenset(missing)
        if missing:
            msg = ("!!! SANDBOX RUNNING WITHOUT " + " AND ".join(m.upper() for m in missing)
                   + " (sandbox.allow_weaker=true): "
                   + "; ".join(f"{k}: {v}" for k, v in missing.items()) + " !!!")
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            log.warning(msg)
        self.plan = _Plan(cfg, strict=strict, without=self.without)
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
    def layers(self) -> dict[str, bool]:
        """Each confinement layer and whether this pool's workers run with it."""
        return {"bubblewrap": self.isolation == "bwrap",
                "seccomp": bool(self.plan.judge_cfg["seccomp_bpf"]),
                "cgroups": self.isolation == "bwrap" and os.geteuid() == 0 and "cgroups" not in self.without}

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
        captured: list[str] = []
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
                if job.capture:
                    captured.append(str(reply.get("stdout", "")))
                    continue
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
        return RunResult("passed", {"cases": n, **({"stdout": captured} if job.capture else {})})

