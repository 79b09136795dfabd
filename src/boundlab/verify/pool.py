"""A pool of worker processes with a hard deadline per call.

math-verify bounds its own work with `signal.alarm`, which only works in a process's main thread
and only between Python bytecodes: sympy evaluating `9^{9^{9^{9}}}` sits inside one C-level integer
power and never sees the alarm. So every call runs in a worker process's main thread, and the parent
kills any worker that overruns a hard wall-clock deadline and starts a fresh one. The caller gets a
`timeout` result and the pool carries on. For each call it kills, the pool records the CPU time
the worker spent on it (`killed_cpu_s`), so a caller can tell a call that needed more than the
deadline (CPU time near the deadline) from one that was starved by a loaded machine.

Calls travel in batches and their results come back one by one (see `DeadlinePool`): at n = 256
a probe makes a few hundred calls of about a millisecond each, and one pipe round trip per call
(with a /proc read to time it) was most of the verifier's wall time.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Hashable, Iterable, Sequence

# Result handed back for a call that ran past its deadline or whose worker died.
TIMEOUT = ("__timeout__",)
CRASH = ("__crash__",)


_READY = "__ready__"
# Batches per worker a map is cut into, at least, and the smallest piece a group is cut into
# (see DeadlinePool._batches).
_BATCHES_PER_WORKER = 4
_MIN_BATCH = 8
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
    conn.send((_READY, time.process_time()))
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        # A batch of calls, run in order. Each result goes back as soon as it is ready, with the
        # moment it was ready and the CPU time used so far: the next call starts right then, so
        # the parent arms that call's deadline from it, and on a kill it knows the CPU time the
        # killed call spent without reading /proc for every call.
        for jid, arg in batch:
            try:
                res = fn(arg)
            except BaseException as e:  # noqa: BLE001 - report, never die on user input
                res = ("__error__", f"{type(e).__name__}: {e}"[:200])
            try:
                conn.send((jid, res, time.monotonic(), time.process_time()))
            except (BrokenPipeError, OSError):
                return


def _context(preload: Sequence[str]) -> Any:
    """`spawn`; with `preload` (module names), `forkserver` where the platform has it: one clean
    server process per parent imports those modules once, and each worker is forked from it, so
    it starts with them loaded. Workers are never forked from the parent itself (its threads).
    The server is shared by every pool of this process and keeps the preload it started with."""
    if preload and "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(preload))
        return ctx
    return mp.get_context("spawn")


class _Worker:
    def __init__(self, ctx: Any, fn: Callable[[Any], Any], init: Callable[[], None] | None):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, fn, init), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        # Calls sent and not yet answered, in the order the worker runs them; the first is running.
        self.jobs: deque[int] = deque()
        # When the running call started (at the latest), and the worker's CPU seconds then.
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
    functions. Workers are started with `spawn`, or forked from a clean fork server that has
    imported `preload` (`_context`), so the parent's threads (torch, tokenizers) are never forked
    mid-flight. A worker's start-up time never counts against a call's deadline.

    Calls go to a worker in batches (one pipe round trip per batch, not per call), and calls that
    share a `group` key go to the same worker in one batch where they fit (a verifier's calls
    against one gold: the worker parses that gold once). Every call still has its own deadline,
    counted from the moment the call before it in the batch finished (or the batch was sent). A
    call that overruns it is killed with its worker and answered `TIMEOUT`; the calls queued
    behind it go to a fresh worker.
    """

    def __init__(self, fn: Callable[[Any], Any], workers: int = 2, deadline_s: float = 2.0,
                 init: Callable[[], None] | None = None, startup_timeout_s: float = 120.0,
                 preload: Sequence[str] = ()):
        self.fn = fn
        self.init = init
        self.n_workers = max(1, int(workers))
        self.deadline_s = float(deadline_s)
        self.startup_timeout_s = startup_timeout_s
        self._ctx = _context(preload)
        self._workers: list[_Worker] = []
        self.restarts = 0
        # For the last `map`: index of each call killed at its deadline -> the worker's CPU
        # seconds on it (None where unknown).
        self.killed_cpu_s: dict[int, float | None] = {}

    def start(self, wait_ready: bool = False) -> "DeadlinePool":
        """Start the workers now (they also start lazily on the first `map`); with `wait_ready`,
        return once every worker has run `init` (a benchmark's timing then starts on warm
        workers)."""
        while len(self._workers) < self.n_workers:
            self._workers.append(_Worker(self._ctx, self.fn, self.init))
        t0 = time.monotonic()
        while wait_ready and not all(w.ready for w in self._workers):
            left = self.startup_timeout_s - (time.monotonic() - t0)
            if left <= 0:
                raise RuntimeError(f"verifier workers did not start within {self.startup_timeout_s:.0f} s")
            for w in self._workers:
                if not w.ready and w.conn.poll(min(left, 0.1)):
                    try:
                        msg = w.conn.recv()
                    except (EOFError, OSError):
                        self._replace(w)
                        continue
                    w.ready, w.cpu0 = True, msg[1]
        return self

    def _batches(self, n: int, groups: Sequence[Hashable] | None) -> deque[list[int]]:
        """Call indices in batches: each group's calls together (first-seen order), cut into
        pieces of about a quarter of the calls per worker (at least `_MIN_BATCH`), so a large
        group still spreads over the workers and no worker is left with a long tail."""
        size = max(_MIN_BATCH, -(-n // (_BATCHES_PER_WORKER * self.n_workers)))
        if groups is None:
            order: list[list[int]] = [list(range(n))]
        else:
            by: dict[Hashable, list[int]] = {}
            for i, g in enumerate(groups):
                by.setdefault(g, []).append(i)
            order = list(by.values())
        return deque(ids[k:k + size] for ids in order for k in range(0, len(ids), size))

    def map(self, args: Iterable[Any], deadline_s: float | None = None,
            groups: Sequence[Hashable] | None = None) -> list[Any]:
        """Results in order; `deadline_s` overrides the pool's deadline for these calls;
        `groups[i]` (optional) is call i's group key (see the class docstring)."""
        deadline = self.deadline_s if deadline_s is None else float(deadline_s)
        args = list(args)
        if groups is not None and len(groups) != len(args):
            raise ValueError(f"groups has {len(groups)} keys for {len(args)} calls")
        results: list[Any] = [None] * len(args)
        self.killed_cpu_s = {}
        if not args:
            return results
        self.start()
        batches = self._batches(len(args), groups)
        # Calls that were queued behind a call whose worker was killed or died: sent again first.
        requeued: deque[int] = deque()
        remaining = len(args)
        last_progress = time.monotonic()
        sent_at: dict[int, float] = {}

        def lose(w: _Worker, result: Any) -> None:
            """A worker died or is being killed: the call it was running gets `result`, the
            calls queued behind it go to the next free worker, and a fresh worker replaces it."""
            nonlocal remaining
            if w.jobs:
                results[w.jobs.popleft()] = result
                remaining -= 1
                requeued.extend(w.jobs)
                w.jobs.clear()
            self._replace(w)

        def dispatch(w: _Worker) -> None:
            # Keep a worker fed: once it runs the last call it holds, the next batch is already
            # on its way, so it never waits for us between batches.
            while w.ready and len(w.jobs) <= 1 and (requeued or batches):
                if requeued:
                    ids = list(requeued)
                    requeued.clear()
                else:
                    ids = batches.popleft()
                now = time.monotonic()
                try:
                    w.conn.send([(jid, args[jid]) for jid in ids])
                except (BrokenPipeError, OSError):
                    # The worker is gone: the call it was running is a crash; these go again.
                    requeued.extend(ids)
                    lose(w, CRASH)
                    return
                if not w.jobs:
                    w.started = now
                for jid in ids:
                    sent_at[jid] = now
                w.jobs.extend(ids)

        for w in self._workers:
            if w.ready and not w.jobs:
                dispatch(w)
        while remaining:
            now = time.monotonic()
            busy = [w for w in self._workers if w.jobs]
            timeout = min((w.started + deadline for w in busy), default=now + 1.0) - now
            conns = {w.conn: w for w in self._workers}
            ready = wait(list(conns), timeout=max(0.0, timeout))
            for conn in ready:
                w = conns[conn]
                # Every message already there: a result waiting in the pipe must never be taken
                # for a call still running past its deadline.
                while w in self._workers and conn.poll(0):
                    try:
                        msg = conn.recv()
                    except (EOFError, OSError):
                        # The worker died (OOM killer, a segfault in C code...).
                        lose(w, CRASH)
                        break
                    if msg[0] == _READY:
                        w.ready, w.cpu0 = True, msg[1]
                    else:
                        jid, res, t_done, cpu = msg
                        results[jid] = res
                        remaining -= 1
                        w.jobs.popleft()
                        w.cpu0 = cpu
                        if w.jobs:
                            # The next call started when this one finished, or when it reached
                            # the worker if later: never later than either, so its deadline is
                            # never longer than `deadline`.
                            w.started = max(min(t_done, time.monotonic()), sent_at[w.jobs[0]])
                        last_progress = time.monotonic()
                if w in self._workers and w.ready and len(w.jobs) <= 1:
                    dispatch(w)
            now = time.monotonic()
            for w in list(self._workers):
                if w.jobs and now - w.started >= deadline and not w.conn.poll(0):
                    # Read once, here: the worker's CPU time since the call started (the worker
                    # reported its CPU time when the call before it finished).
                    cpu = _cpu_seconds(w.proc.pid)
                    self.killed_cpu_s[w.jobs[0]] = (None if cpu is None or w.cpu0 is None
                                                    else max(0.0, cpu - w.cpu0))
                    lose(w, TIMEOUT)
                    last_progress = now
            if requeued:
                for w in self._workers:
                    if w.ready and not w.jobs:
                        dispatch(w)
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
