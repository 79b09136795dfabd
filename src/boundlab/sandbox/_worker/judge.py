"""The judge: runs the dataset's tests against one program and says how the run ended.

Function tasks: the judge asks the program which of the test's free names it defines, binds each
callable to a `Remote`, runs the test code here (never in the program), then `check(entry)`. The
outcome is "passed" only when that code finishes; an exception from a call is the program's
`runtime_error` (or `memory`), a failed assert is `failed`, a channel abort says its own outcome.
Stdin/stdout tasks: the judge feeds stdin from a memfd and returns what the program printed; the
comparison with the expected output happens in the parent, so expected outputs never enter here.
"""

import builtins
import os
import signal
import socket
import sys
import time

from .channel import Abort, Channel, Remote, _remote_exception
from .codec import _dumps, decode
from .framing import recv_msg, send_msg, write_all


def free_names(test_code):
    """The names the test code reads but never binds: what it expects the program to define."""
    import ast  # on first use: at the top it would be loaded into the forker, so every program
    tree = ast.parse(test_code)
    bound, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                bound.add((a.asname or a.name).split(".")[0])
    return sorted(loaded - bound - set(dir(builtins)))


class SetupError(Exception):
    """The forker could not start the program (no model code ran): retried, never a verdict."""


def _cpu_limit(job):
    """The program's RLIMIT_CPU soft limit, seconds: its wall-clock timeout, whole, plus one."""
    return int(float(job["timeout"])) + 1


def _out_of_cpu(ex, job):
    """Whether a SIGKILL came with the CPU time spent (RLIMIT_CPU's hard stop), not from the
    kernel's out-of-memory killer."""
    return ex.get("cpu_s", 0.0) >= _cpu_limit(job) - 0.05


class Judge:
    def __init__(self, cfg):
        self.cfg = cfg
        self.sock = None

    # -- forker protocol
    def spawn(self, kind, job, fds):
        """Have the forker start `job`'s program on `fds` (closed here); SetupError if it can't."""
        msg = {"op": "spawn", "kind": kind, "program": job["program"], "timeout": job["timeout"],
               "limits": self._limits(job)}
        send_msg(self.sock, msg, fds)
        for fd in fds:
            os.close(fd)
        self.sock.settimeout(30.0)
        try:
            msg, _ = recv_msg(self.sock)
        finally:
            self.sock.settimeout(None)
        if msg is None:
            raise RuntimeError("forker is gone")
        if not msg.get("ok"):
            raise SetupError(msg.get("error", "setup failed"))

    def finish(self, kill, wait_s):
        """Kill (or wait up to wait_s for) the program; return the forker's exit report."""
        if kill:
            send_msg(self.sock, {"op": "kill"})
        self.sock.settimeout(max(0.0, wait_s) + 5.0)
        try:
            while True:
                msg, extra = recv_msg(self.sock)
                for x in extra:
                    os.close(x)
                if msg is None:
                    raise RuntimeError("forker is gone")
                if msg.get("op") == "exited":
                    return msg
        except socket.timeout:
            if kill:
                raise RuntimeError("forker did not report the program's exit") from None
            return self.finish(True, 0.0)
        finally:
            self.sock.settimeout(None)

    def _limits(self, job):
        lim = dict(self.cfg["limits"])
        lim.update(job.get("limits") or {})
        lim["cpu_s"] = _cpu_limit(job)
        return lim

    # -- jobs
    def run_function(self, job):
        test = job["test"]
        entry = job.get("entry_point")
        try:
            names = free_names(test)
        except SyntaxError as e:
            return {"outcome": "sandbox_error", "retry": False,
                    "info": {"reason": f"test code does not parse: {e}"}}
        if entry and entry not in names:
            names.append(entry)
        a, b = socket.socketpair()
        er, ew = os.pipe()
        try:
            self.spawn("function", job, [b.detach(), ew])
        except SetupError as e:
            a.close()
            os.close(er)
            return {"outcome": "sandbox_error", "retry": True, "info": {"reason": str(e)[:500]}}
        t0 = time.monotonic()
        chan = Channel(a.fileno(), er, t0 + float(job["timeout"]))
        outcome, reason, error = "passed", None, None
        try:
            reply = chan.exchange({"op": "names", "names": names})
            if "ok" not in reply:
                raise _remote_exception(reply) if "exc" in reply else Abort("failed", "bad reply")
            ns = {"__name__": "__boundlab_test__", "__builtins__": builtins}
            avail = reply["ok"] if isinstance(reply["ok"], dict) else {}
            for n, d in avail.items():
                if n not in names or not isinstance(d, dict):
                    continue
                kind = d.get("k")
                if kind == "call":
                    ns[n] = Remote(chan, n)
                elif kind == "value":
                    try:
                        ns[n] = decode(_dumps(d.get("v")))
                    except Exception:  # noqa: BLE001
                        pass
                elif kind == "module" and n in getattr(sys, "stdlib_module_names", ()):
                    import importlib
                    ns[n] = importlib.import_module(n)
            if entry and entry not in ns:
                raise Abort("failed", f"the program does not define {entry!r}")
            exec(compile(test, "<test>", "exec"), ns)
            if "check" in ns and entry:
                ns["check"](ns[entry])
            if chan.fatal:
                raise Abort(*chan.fatal)
        except Abort as e:
            outcome, reason = e.outcome, e.reason
        except BaseException as e:  # noqa: BLE001
            remote = getattr(e, "boundlab_remote", None)
            error = f"{remote or type(e).__name__}: {str(e)[:300]}"
            if chan.fatal:
                outcome, reason = chan.fatal
            elif remote == "MemoryError":
                outcome = "memory"
            elif remote is not None:
                outcome = "runtime_error"
            elif isinstance(e, TimeoutError):
                # The test code's own per-input time limit (EvalPlus, LiveCodeBench functional):
                # a call that returned, but later than the limit its benchmark allows.
                outcome = "timeout"
            else:
                outcome = "failed"  # an assert (or the test's own code) failed on the result
        elapsed = time.monotonic() - t0
        exit_info = self.finish(kill=True, wait_s=0.0)
        a.close()
        os.close(er)
        if outcome == "gone":
            outcome, reason = self._classify_exit(exit_info, job)
        info = {"elapsed_s": round(elapsed, 4)}
        if reason:
            info["reason"] = reason
        if error:
            info["error"] = error
        if chan.stderr and outcome != "passed":
            info["stderr"] = chan.stderr[-1000:].decode(errors="replace")
        return {"outcome": outcome, "info": info}

    def _classify_exit(self, ex, job):
        code = ex.get("code", 0)
        if ex.get("timed_out"):
            return "timeout", "wall-clock limit"
        if code == -signal.SIGXCPU:
            return "timeout", "cpu limit"
        if code == -signal.SIGKILL and not ex.get("killed"):
            if _out_of_cpu(ex, job):
                return "timeout", "cpu limit"
            return "memory", "killed (out of memory)"
        if code < 0:
            return "runtime_error", f"killed by signal {signal.Signals(-code).name}"
        return "runtime_error", f"exited with code {code} before the tests finished"

    def run_stdio(self, job):
        memfd = os.memfd_create("stdin")
        data = job["stdin"].encode("utf-8", "surrogateescape")
        write_all(memfd, data)
        os.lseek(memfd, 0, os.SEEK_SET)
        outr, outw = os.pipe()
        er, ew = os.pipe()
        try:
            self.spawn("stdio", job, [memfd, outw, ew])
        except SetupError as e:
            os.close(outr)
            os.close(er)
            return {"status": "sandbox_error", "retry": True, "info": {"reason": str(e)[:500]}}
        t0 = time.monotonic()
        chan = Channel(None, er, t0 + float(job["timeout"]), out_fd=outr,
                       out_limit=int(job.get("output_limit", self.cfg["output_limit"])))
        state = chan.pump_outputs()
        left = chan.deadline - time.monotonic()
        if state == "eof":
            ex = self.finish(kill=False, wait_s=left)
        else:
            ex = self.finish(kill=True, wait_s=0.0)
        elapsed = time.monotonic() - t0
        os.close(outr)
        os.close(er)
        code = ex.get("code", 0)
        if state == "timeout" or ex.get("timed_out") or (ex.get("killed") and state == "eof"):
            status = "timeout"
        elif state == "output_limit":
            status = "output_limit"
        elif code == -signal.SIGXCPU:
            status = "timeout"
        elif code == -signal.SIGKILL:
            status = "timeout" if _out_of_cpu(ex, job) else "memory"
        else:
            status = "exited"
        return {"status": status, "code": code, "elapsed_s": round(elapsed, 4),
                "stdout": chan.stdout.decode("utf-8", "replace"),
                "stderr": chan.stderr.decode("utf-8", "replace")}
