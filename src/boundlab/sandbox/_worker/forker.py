"""The forker: spawns each program, enforces its wall clock, reaps it, reports how it ended.

Forked by the judge at start-up, before any job, so its memory (which every program inherits)
never holds a test or an expected output. Per "spawn" from the judge (with the program's fds):
fork a setup process (`confine.setup_main`), wait for the program's pid and its "R", then watch
the program until it exits, the judge says "kill", the judge goes away, or the wall clock plus a
second runs out; then SIGKILL it through a pidfd and send "exited" with its status and CPU time.
"""

import os
import select
import signal
import time

from .confine import PR_SET_CHILD_SUBREAPER, _prctl, setup_main
from .framing import recv_msg, send_msg


def _read_until_eof(fd, limit, deadline, stop=None):
    """Read until EOF, `limit` bytes, the deadline, or (when given) the byte `stop`."""
    buf = bytearray()
    while len(buf) < limit and not (stop and buf.endswith(stop)):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            break
        chunk = os.read(fd, limit - len(buf))
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


def forker_main(sock, cfg):
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    import gc
    gc.collect()
    gc.freeze()  # fewer copy-on-write faults in each forked program
    while True:
        msg, fds = recv_msg(sock)
        if msg is None:
            os._exit(0)
        if msg.get("op") != "spawn":
            for fd in fds:
                os.close(fd)
            continue  # a late "kill" for a program already reaped
        _spawn_and_watch(sock, msg, fds, cfg)


def _spawn_and_watch(sock, job, fds, cfg):
    report_r, report_w = os.pipe()
    status_r, status_w = os.pipe()
    workdir = None
    if not cfg["strict"]:
        import tempfile
        workdir = job["workdir"] = tempfile.mkdtemp(prefix="bl-prog-")
    pid = os.fork()
    if pid == 0:
        sock.close()
        os.close(report_r)
        os.close(status_r)
        setup_main(job, fds, report_w, status_w, cfg)
    for fd in fds + [report_w, status_w]:
        os.close(fd)
    deadline = time.monotonic() + 20.0
    # "P<pid>\n" from the setup process, or "E<error>" then EOF
    report = _read_until_eof(report_r, 1000, deadline, b"\n").decode(errors="replace").strip()
    os.close(report_r)
    os.waitpid(pid, 0)
    gpid = None
    if report.startswith("P"):
        gpid = int(report[1:])
        status = _read_until_eof(status_r, 1, deadline)  # "R" once set up; EOF or "E" otherwise
        if status != b"R":
            err = status + _read_until_eof(status_r, 1000, time.monotonic() + 1)
            _kill_reap(gpid)
            report = "E" + (err[1:].decode(errors="replace") if err else "program setup died")
    os.close(status_r)
    if not report.startswith("P"):
        _cleanup_workdir(workdir)
        send_msg(sock, {"op": "spawned", "ok": False, "error": report[1:] or "setup failed"})
        return
    send_msg(sock, {"op": "spawned", "ok": True})
    pidfd = os.pidfd_open(gpid)
    limit = time.monotonic() + float(job["timeout"]) + 1.0
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    timed_out = killed = False
    judge_gone = False
    while True:
        left = limit - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        events = poller.poll(max(1, int(left * 1000)))
        done = False
        for fd, _ev in events:
            if fd == pidfd:
                done = True
            else:
                msg, extra = recv_msg(sock)
                for x in extra:
                    os.close(x)
                if msg is None:
                    judge_gone = True
                    done = True
                elif msg.get("op") == "kill":
                    killed = True
                    done = True
        if done:
            break
    if timed_out or killed or judge_gone:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    _, st, ru = os.wait4(gpid, 0)
    os.close(pidfd)
    while True:  # anything else reparented to us (weak mode without a pid namespace)
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    _cleanup_workdir(workdir)
    if judge_gone:
        os._exit(0)
    send_msg(sock, {"op": "exited", "code": os.waitstatus_to_exitcode(st),
                    "timed_out": timed_out, "killed": killed,
                    "cpu_s": ru.ru_utime + ru.ru_stime})


def _kill_reap(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass


def _cleanup_workdir(workdir):
    if workdir:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)  # fd-based: does not follow planted symlinks
