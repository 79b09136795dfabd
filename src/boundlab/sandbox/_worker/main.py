"""The judge process's start: fork the forker, pass a self-test, then serve the parent's jobs.

The parent's pipes move off fds 0/1 at once, so nothing the test code prints can corrupt them.
Before the fork the judge makes itself non-dumpable (the forker inherits that), loads the modules
most programs import (`_preload`, so each forked program gets them free) and prepares the seccomp
filter; after it, the forker holds neither the parent's pipes nor anything a job brings. The
"hello" goes out only after one program has started and passed in the configured isolation.
"""

import json
import os
import signal
import socket
import sys

from .confine import PR_SET_DUMPABLE, _prctl, _prepare_seccomp
from .forker import forker_main
from .framing import recv_frame, send_frame
from .judge import Judge


def _preload():
    # Modules most programs import; loaded once in the forker, so each program gets them free.
    for name in ("typing", "re", "math", "collections", "itertools", "functools", "heapq",
                 "bisect", "string", "random", "copy", "operator", "fractions", "decimal",
                 "statistics", "datetime", "hashlib", "io", "array", "dataclasses", "enum",
                 "numbers", "types", "textwrap", "traceback", "resource", "fcntl", "tempfile",
                 "shutil", "collections.abc", "cmath", "string"):
        try:
            __import__(name)
        except ImportError:
            pass


def main():
    cfg = json.loads(sys.argv[1])
    os.umask(0o077)
    _prctl(PR_SET_DUMPABLE, 0)  # no ptrace, no /proc/<pid>/mem or fd of judge/forker
    # The parent's channel moves off fds 0/1, so nothing the test code prints can corrupt it.
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    sys.stdin = open(os.devnull)
    sys.stdout = open(os.devnull, "w")
    _preload()
    _prepare_seccomp(cfg.get("seccomp_bpf"))
    judge_sock, forker_sock = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        # The forker never holds the parent's channel or the judge's socket.
        judge_sock.close()
        os.close(proto_in)
        os.close(proto_out)
        forker_main(forker_sock, cfg)
        os._exit(0)
    forker_sock.close()
    judge = Judge(cfg)
    judge.sock = judge_sock
    for sig in (signal.SIGINT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    # Self-test: one program must start in the configured isolation before we say hello.
    hello = {"op": "hello", "pid": os.getpid(), "uid": os.getuid(),
             "seccomp": bool(cfg.get("seccomp_bpf"))}
    try:
        r = judge.run_function({"program": "def f():\n    return 1\n", "test": "assert f() == 1",
                                "entry_point": "f", "timeout": 5.0})
        hello["ok"] = r["outcome"] == "passed"
        hello["selftest"] = r
    except Exception as e:  # noqa: BLE001
        hello["ok"] = False
        hello["selftest"] = repr(e)
    send_frame(proto_out, hello)
    while True:
        job = recv_frame(proto_in)
        if job is None or job.get("op") == "exit":
            os._exit(0)
        try:
            if job["op"] == "function":
                res = judge.run_function(job)
            elif job["op"] == "stdio":
                res = judge.run_stdio(job)
            elif job["op"] == "ping":
                res = {"op": "pong"}
            else:
                res = {"outcome": "sandbox_error", "retry": False,
                       "info": {"reason": f"unknown op {job.get('op')!r}"}}
        except Exception as e:  # noqa: BLE001 - a judge bug or a dead forker: the worker is done
            send_frame(proto_out, {"outcome": "sandbox_error", "status": "sandbox_error",
                                   "retry": True, "fatal": True,
                                   "info": {"reason": f"judge error: {e!r}"[:500]}})
            os._exit(3)
        send_frame(proto_out, res)
