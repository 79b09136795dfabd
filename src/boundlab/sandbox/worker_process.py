"""One sandbox worker as the parent sees it: a process that says hello, then answers frames.

Start: spawn the worker's command (`launch._Plan`), then wait for its "hello", which comes only
after a program has started and passed in the configured isolation; no hello in time, or a failed
self-test, and the start fails. Each request is one frame out and one frame back, read with a
watchdog: no reply in time is a hung worker, EOF a dead one (`_WorkerLost`); the pool decides
what that means for the job.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import tempfile
import time
from typing import Any

from boundlab.sandbox._worker.framing import HDR
from boundlab.sandbox.launch import SANDBOX_ENV, _Plan

log = logging.getLogger(__name__)


class _StartError(RuntimeError):
    pass


class _WorkerLost(RuntimeError):
    def __init__(self, kind: str, detail: str = ""):
        super().__init__(f"worker {kind}: {detail}")
        self.kind = kind  # "died" or "hung"


class _Worker:
    def __init__(self, plan: _Plan):
        self.plan = plan
        self.stderr = tempfile.TemporaryFile()
        try:
            self.cgroup = plan.make_cgroup()
        except RuntimeError as e:  # a layer the pool promised: a start error, never run without it
            raise _StartError(str(e)) from None
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
                need = 4 + HDR.unpack(buf[:4])[0]
        return json.loads(bytes(buf[4:need]))

    def request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        data = json.dumps(msg).encode()
        try:
            self.proc.stdin.write(HDR.pack(len(data)) + data)
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
