"""The judge's end of one program: its RPC socket and its stderr/stdout pipes, under a deadline.

`Channel.exchange` sends one request and waits for the reply while draining the program's stderr;
anything that is not a well-formed reply in time (garbage, an oversized frame, a closed socket,
the deadline) aborts the test run with an outcome, never a pass. `Remote` is how the test code sees
one of the program's callables: arguments out as plain data, plain data (or an exception named
after a builtin one) back.
"""

import builtins
import json
import os
import select
import time

from .codec import _dumps, decode, encode
from .framing import HDR

MAX_RPC_BYTES = 32 << 20  # one RPC message from the program
STDERR_KEEP = 4096


class Abort(BaseException):
    """Stops the test code; a BaseException so that `except Exception` in a test cannot eat it."""

    def __init__(self, outcome, reason):
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason


class Channel:
    """The judge's end of one program's RPC socket, plus its captured stderr/stdout pipes."""

    def __init__(self, rpc_fd, err_fd, deadline, out_fd=None, out_limit=0):
        self.rpc = rpc_fd
        self.err = err_fd
        self.out = out_fd
        self.deadline = deadline
        self.inbuf = bytearray()
        self.stderr = bytearray()
        self.stdout = bytearray()
        self.out_limit = out_limit
        self.out_over = False
        self.fatal = None
        for fd in (rpc_fd, err_fd, out_fd):
            if fd is not None:
                os.set_blocking(fd, False)

    def _drain(self, fd):
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            return False
        if fd == self.err:
            if len(self.stderr) < STDERR_KEEP:
                self.stderr += data[: STDERR_KEEP - len(self.stderr)]
        else:
            if len(self.stdout) + len(data) > self.out_limit:
                self.out_over = True
                return False
            self.stdout += data
        return True

    def _fail(self, outcome, reason):
        self.fatal = (outcome, reason)
        raise Abort(outcome, reason)

    def exchange(self, obj):
        if self.fatal:
            raise Abort(*self.fatal)
        body = _dumps(obj).encode()
        out = memoryview(HDR.pack(len(body)) + body)
        poller = select.poll()
        err_open = self.err is not None
        if err_open:
            poller.register(self.err, select.POLLIN)
        while True:
            reply = self._parse()
            if reply is not None:
                return reply
            left = self.deadline - time.monotonic()
            if left <= 0:
                self._fail("timeout", "wall-clock limit")
            poller.register(self.rpc, select.POLLIN | (select.POLLOUT if out else 0))
            for fd, ev in poller.poll(max(1, int(left * 1000))):
                if fd == self.err:
                    if not self._drain(fd):
                        poller.unregister(fd)
                    continue
                if ev & select.POLLOUT and out:
                    try:
                        n = os.write(self.rpc, out[: 1 << 16])
                        out = out[n:]
                    except BlockingIOError:
                        pass
                    except OSError:
                        self._fail("gone", "program closed its channel")
                if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    try:
                        data = os.read(self.rpc, 1 << 20)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        self._fail("gone", "program closed its channel")
                    self.inbuf += data

    def _parse(self):
        if len(self.inbuf) < 4:
            return None
        (n,) = HDR.unpack(self.inbuf[:4])
        if n > MAX_RPC_BYTES:
            self._fail("failed", "garbage on the RPC channel")
        if len(self.inbuf) < 4 + n:
            return None
        body = bytes(self.inbuf[4: 4 + n])
        del self.inbuf[: 4 + n]
        try:
            reply = json.loads(body)
        except Exception:  # noqa: BLE001
            self._fail("failed", "garbage on the RPC channel")
        if not isinstance(reply, dict):
            self._fail("failed", "garbage on the RPC channel")
        return reply

    def pump_outputs(self):
        """stdio programs: read stdout/stderr until both close, the cap, or the deadline."""
        poller = select.poll()
        open_fds = {self.out, self.err}
        for fd in open_fds:
            poller.register(fd, select.POLLIN)
        while open_fds:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            for fd, _ev in poller.poll(max(1, int(left * 1000))):
                if not self._drain(fd):
                    if fd == self.out and self.out_over:
                        return "output_limit"
                    poller.unregister(fd)
                    open_fds.discard(fd)
        return "eof"


class Remote:
    """A program-side callable as seen by the tests: arguments out, plain data back."""

    def __init__(self, chan, name):
        self._chan = chan
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        try:
            a = _dumps(encode(list(args)))
            k = _dumps(encode(dict(kwargs)))
        except (TypeError, ValueError) as e:
            raise Abort("sandbox_error", f"test passes an argument that is not plain data: {e}")
        reply = self._chan.exchange({"op": "call", "name": self.__name__, "args": a, "kwargs": k})
        if "ok" in reply:
            try:
                return decode(reply["ok"])
            except Exception as e:  # noqa: BLE001
                self._chan._fail("failed", f"undecodable result: {str(e)[:200]}")
        if "bad" in reply:
            self._chan._fail("failed", str(reply["bad"])[:300])
        raise _remote_exception(reply)


class RemoteError(Exception):
    pass


def _remote_exception(reply):
    name = str(reply.get("exc", "Exception"))[:100]
    msg = str(reply.get("msg", ""))[:300]
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RemoteError
    try:
        exc = cls(msg)
    except Exception:  # noqa: BLE001
        exc = RemoteError(msg)
    exc.boundlab_remote = name
    return exc
