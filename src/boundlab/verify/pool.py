"""A pool of worker processes with a hard deadline per call.

math-verify bounds its own work with `signal.alarm`, which only works in a process's main thread
and only between Python bytecodes: sympy evaluating `9^{9^{9^{9}}}` sits inside one C-level integer
power and never sees the alarm. So every call runs in a worker process's main thread, and the parent
kills any worker that overruns a hard wall-clock deadline and starts a fresh one. The caller gets a
`timeout` result and the pool carries on. For each call it kills, the pool records the CPU time
the worker spent on it (`killed_cpu_s`), so a caller can tell a call that needed more than the
deadline (CPU time near the deadline) from one that was starved by a loaded machine.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterable

# Result handed back for a call that ran past its deadline or whose worker died.
TIMEOUT = ("__timeout__",)
CRASH = ("__crash__",)


_READY = "__ready__"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc); None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return None


def _worker_main(conn: Connection, fn: Callable[[Any], Any], init: Callable[[], None] | None) -> None:
    if init is not None:
        init()  # heavy imports happen before the first deadline starts ticking
    conn.send(_READY)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        jid, arg = job
        try:
            res = fn(arg)
        except BaseException as e:  # noqa: BLE001 - report, never die on user input
            res = ("__error__", f"{type(e).__name__}: {e}"[:200])
        try:
            conn.send((jid, res))
        except (BrokenPipeError, OSError):
            return


class _Worker:
    def __init__(self, ctx: Any, fn: Callable[[Any], Any], init: Callable[[], None] | None):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, fn, init), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.job: int | None = None
        self.started = 0.0
        self.cpu0: float | None = None

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.join(timeout=5)
        except Exception:  # noqa: BLE001
            pass
        self.conn.close()


class DeadlinePool:
    """Run `fn(arg)` for many args across `workers` processes, each call bounded by `deadline_s`.

    `fn` (and `init`, run once per worker before it takes work) must be picklable top-level
    functions. Workers are started with `spawn`, so the parent's threads (torch, tokenizers) are
    never forked mid-flight. A worker's start-up time never counts against a call's deadline.
    """

    def __init__(self, fn: Callable[[Any], Any], workers: int = 2, deadline_s: float = 2.0,
                 init: Callable[[], None] | None = None, startup_timeout_s: float = 120.0):
        self.fn = fn
        self.init = init
        self.n_workers = max(1, int(workers))
        self.deadline_s = float(deadline_s)
        self.startup_timeout_s = startup_timeout_s
        self._ctx = mp.get_context("spawn")
        self._workers: list[_Worker] = []
        self.restarts = 0
        # For the last `map`: index of each call killed at its deadline -> the worker's CPU
        # seconds on it (None where unknown).
        self.killed_cpu_s: dict[int, float | None] = {}

    def start(self) -> "DeadlinePool":
        """Start the workers now (they also start lazily on the first `map`)."""
        while len(self._workers) < self.n_workers:
            self._workers.append(_Worker(self._ctx, self.fn, self.init))
        return self

    def map(self, args: Iterable[Any], deadline_s: float | None = None) -> list[Any]:
        """Results in order; `deadline_s` overrides the pool's deadline for these calls."""
        deadline = self.deadline_s if deadline_s is None else float(deadline_s)
        args = list(args)
        results: list[Any] = [None] * len(args)
        self.killed_cpu_s = {}
        if not args:
            return results
        self.start()
        pending = deque(range(len(args)))
        remaining = len(args)
        last_progress = time.monotonic()

        def dispatch(w: _Worker) -> None:
            nonlocal remaining
            while pending:
                jid = pending.popleft()
                try:
                    w.conn.send((jid, args[jid]))
                except (BrokenPipeError, OSError):
                    results[jid] = CRASH
                    remaining -= 1
                    w = self._replace(w)
                    return
                w.job, w.started = jid, time.monotonic()
                w.cpu0 = _cpu_seconds(w.proc.pid)
                return

        for w in self._workers:
            if w.ready and w.job is None:
                dispatch(w)
        while remaining:
            now = time.monotonic()
            busy = [w for w in self._workers if w.job is not None]
            timeout = min((w.started + deadline for w in busy), default=now + 1.0) - now
            conns = {w.conn: w for w in self._workers}
            ready = wait(list(conns), timeout=max(0.0, timeout))
            for conn in ready:
                w = conns[conn]
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    # The worker died (OOM killer, a segfault in C code...).
                    if w.job is not None:
                        results[w.job] = CRASH
                        remaining -= 1
                    self._replace(w)
                    continue
                if msg == _READY:
                    w.ready = True
                else:
                    jid, res = msg
                    results[jid] = res
                    remaining -= 1
                    w.job = None
                    last_progress = time.monotonic()
                if w.job is None:
                    dispatch(w)
            now = time.monotonic()
            for w in list(self._workers):
                if w.job is not None and now - w.started >= deadline:
                    cpu = _cpu_seconds(w.proc.pid)
                    self.killed_cpu_s[w.job] = (None if cpu is None or w.cpu0 is None
                                                else cpu - w.cpu0)
                    results[w.job] = TIMEOUT
                    remaining -= 1
                    self._replace(w)
                    last_progress = now
            if not any(w.ready for w in self._workers) and now - last_progress > self.startup_timeout_s:
                raise RuntimeError(f"verifier workers did not start within {self.startup_timeout_s:.0f} s")
        return results

    def _replace(self, w: _Worker) -> _Worker:
        w.kill()
        self.restarts += 1
        nw = _Worker(self._ctx, self.fn, self.init)
        self._workers[self._workers.index(w)] = nw
        return nw

    def close(self) -> None:
        for w in self._workers:
            try:
                w.conn.send(None)
            except Exception:  # noqa: BLE001
                pass
        for w in self._workers:
            w.proc.join(timeout=1)
            if w.proc.is_alive():
                w.kill()
            else:
                w.conn.close()
        self._workers = []

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            for w in self._workers:
                if w.proc.is_alive():
                    w.proc.kill()
        except Exception:  # noqa: BLE001
            pass
