"""The program each sandbox worker runs. Standard library only: it is started as
`python -I -S -c <this file's text>` inside bubblewrap, where the package is not visible.

Processes inside one worker's sandbox (all one unprivileged uid, no capabilities):

    judge    talks to the parent (stdin/stdout at start), runs the dataset's test code, never runs
             model code
     └ forker   forked at start-up, before any job: its memory never holds a test or an
                expected output
        └ setup    per program: a new user namespace, then new pid, mount and ipc namespaces
           └ program  pid 1 of its own pid namespace; private tmpfs /tmp and fresh /proc; rlimits;
                      capabilities dropped; seccomp deny-list; then the model's code

Why the split. Model code may read all of its own memory, so it is forked from the forker, whose
memory has only ever seen programs and stdin. Tests run in the judge: the program only answers
"call f(args)" requests, with plain data encoded as tagged JSON that the judge decodes strictly,
so an object whose `__eq__` is always True, rebound builtins or a patched harness cannot pass a
test. The judge and forker are non-dumpable and live outside the program's pid namespace, so the
program can neither signal nor ptrace them; it holds no fd of theirs except its own RPC socket.
When the program's pid-1 dies, the kernel kills everything left in its namespace (sleepers,
double-forked daemons), and its tmpfs goes with its mount namespace.

Verdicts: "passed" comes only from the judge finishing the tests. A program's exit code, its
output and its RPC replies are data; none of them can say "passed".
"""

import builtins
import ctypes
import errno
import fcntl
import json
import os
import select
import signal
import socket
import struct
import sys
import time

# ----------------------------------------------------------------------------------------------
# Constants

_HDR = struct.Struct(">I")
MAX_RPC_BYTES = 32 << 20  # one RPC message from the program
MAX_ITER_ITEMS = 1_000_000  # iterators returned by a program are materialised up to this
STDERR_KEEP = 4096

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_SECCOMP = 4, 24, 22
PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 38, 36
SECCOMP_MODE_FILTER = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]
_libc.unshare.argtypes = [ctypes.c_int]


def _check(ret, what):
    if ret != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def _prctl(option, arg2=0, arg3=0):
    return _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3),
                       ctypes.c_ulong(0), ctypes.c_ulong(0))


# ----------------------------------------------------------------------------------------------
# Plain-data codec. Tagged JSON: every JSON object is a one-key tag, so nothing is ambiguous.
# The program side converts what it returns (subclasses of builtin containers become the builtin;
# anything else is refused); the judge side builds only builtin values, never calls user code.

_SAFE_INT = 1 << 53


def encode(x, depth=0):
    if depth > 200:
        raise ValueError("value nested too deeply")
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is float:
        return x
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        x = int.__index__(x)
        return x if -_SAFE_INT < x < _SAFE_INT else {"I": hex(x)}
    if isinstance(x, float):
        return float.__float__(x)
    if isinstance(x, str):
        return str.__str__(x)
    d = depth + 1
    if isinstance(x, (bytes, bytearray)):
        return {"ba" if isinstance(x, bytearray) else "b": bytes(x).hex()}
    if isinstance(x, complex):
        return {"c": [complex.__complex__(x).real, complex.__complex__(x).imag]}
    if isinstance(x, list):
        return [encode(v, d) for v in list.__iter__(x)]
    if isinstance(x, tuple):
        return {"t": [encode(v, d) for v in tuple.__iter__(x)]}
    if isinstance(x, dict):
        return {"d": [[encode(k, d), encode(v, d)] for k, v in dict.items(x)]}
    if isinstance(x, frozenset):
        return {"f": [encode(v, d) for v in frozenset.__iter__(x)]}
    if isinstance(x, set):
        return {"s": [encode(v, d) for v in set.__iter__(x)]}
    if isinstance(x, range):
        return {"r": [x.start, x.stop, x.step]}
    mod = getattr(t, "__module__", "")
    if mod == "collections" and t.__name__ == "deque":
        return {"q": [encode(v, d) for v in x]}
    if hasattr(t, "__next__") and hasattr(t, "__iter__"):
        items = []
        for v in x:
            if len(items) >= MAX_ITER_ITEMS:
                raise ValueError("returned iterator is too long")
            items.append(encode(v, d))
        return {"it": items}
    raise TypeError(f"unsupported return type {t.__module__}.{t.__qualname__}")


_LIST_TAGS = {"t", "d", "s", "f", "q", "it", "c", "r"}
_STR_TAGS = {"I", "b", "ba"}


def _decode_tag(obj):
    if len(obj) != 1:
        raise ValueError("bad tagged value")
    (tag, v), = obj.items()
    if (tag in _LIST_TAGS and type(v) is not list) or (tag in _STR_TAGS and type(v) is not str):
        raise ValueError(f"bad payload for tag {tag!r}")
    if tag == "t":
        return tuple(v)
    if tag == "d":
        return {k: val for k, val in v}
    if tag == "s":
        return set(v)
    if tag == "f":
        return frozenset(v)
    if tag == "I":
        return int(v, 16)
    if tag == "b":
        return bytes.fromhex(v)
    if tag == "ba":
        return bytearray.fromhex(v)
    if tag == "c":
        return complex(float(v[0]), float(v[1]))
    if tag == "r":
        return range(int(v[0]), int(v[1]), int(v[2]))
    if tag == "q":
        import collections
        return collections.deque(v)
    if tag == "it":
        return iter(v)
    raise ValueError(f"unknown tag {tag!r}")


def _hook(obj):
    # json builds inner values first, so tuples/sets arrive here already decoded.
    return _decode_tag(obj)


def decode(text):
    return json.loads(text, object_hook=_hook)


def _dumps(obj):
    return json.dumps(obj, separators=(",", ":"))


# ----------------------------------------------------------------------------------------------
# Framing helpers

def _write_all(fd, data):
    mv = memoryview(data)
    while mv:
        n = os.write(fd, mv)
        mv = mv[n:]


def _read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def send_frame(fd, obj):
    data = _dumps(obj).encode()
    _write_all(fd, _HDR.pack(len(data)) + data)


def recv_frame(fd):
    hdr = _read_exact(fd, 4)
    if hdr is None:
        return None
    (n,) = _HDR.unpack(hdr)
    body = _read_exact(fd, n)
    return None if body is None else json.loads(body)


def send_msg(sock, obj, fds=()):
    data = _dumps(obj).encode()
    hdr = _HDR.pack(len(data))
    if fds:
        socket.send_fds(sock, [hdr], list(fds))
    else:
        sock.sendall(hdr)
    sock.sendall(data)


def recv_msg(sock):
    """(obj, fds) from a stream socket; (None, []) on EOF."""
    hdr, fds, _flags, _addr = socket.recv_fds(sock, 4, 8)
    if not hdr:
        return None, fds
    while len(hdr) < 4:
        more = sock.recv(4 - len(hdr))
        if not more:
            return None, fds
        hdr += more
    (n,) = _HDR.unpack(hdr)
    body = bytearray()
    while len(body) < n:
        chunk = sock.recv(min(n - len(body), 1 << 20))
        if not chunk:
            return None, fds
        body += chunk
    return json.loads(body), fds


# ----------------------------------------------------------------------------------------------
# Inside the program process: the harness that loads the model's code and answers calls.

def _describe(e):
    """One line: the error and where it happened (for setup failures)."""
    import traceback
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at line {tb[-1].lineno} ({tb[-1].name})" if tb else ""
    return f"{e!r}{where}"[:500]


def _exc_info(e):
    return {"exc": type(e).__name__, "msg": str(e)[:300]}


def _fresh_module(name):
    import types
    mod = types.ModuleType(name)
    mod.__dict__["__builtins__"] = builtins
    sys.modules[name] = mod
    return mod.__dict__


def harness_function(program):
    """Serve RPC on fd 3: load the program, then answer names/call requests until EOF."""
    rpc = 3
    g = _fresh_module("__boundlab_program__")
    try:
        exec(compile(program, "<program>", "exec"), g)
        loaded = None
    except BaseException as e:  # noqa: BLE001 - SystemExit, KeyboardInterrupt: all are failures
        loaded = _exc_info(e)
    while True:
        req = recv_frame(rpc)
        if req is None:
            os._exit(0)
        if loaded is not None:
            reply = dict(loaded, phase="load")
        elif req.get("op") == "names":
            out = {}
            for n in req["names"]:
                if n not in g:
                    continue
                v = g[n]
                if isinstance(v, type(sys)):
                    out[n] = {"k": "module", "name": getattr(v, "__name__", "")}
                elif callable(v):
                    out[n] = {"k": "call"}
                else:
                    try:
                        out[n] = {"k": "value", "v": encode(v)}
                    except Exception:  # noqa: BLE001
                        pass
            reply = {"ok": out}
        else:
            try:
                args = decode(req["args"])
                kwargs = decode(req["kwargs"])
                result = g[req["name"]](*args, **kwargs)
            except BaseException as e:  # noqa: BLE001
                reply = _exc_info(e)
            else:
                try:
                    reply = {"ok": _dumps(encode(result))}
                except BaseException as e:  # noqa: BLE001 - not plain data: the result fails
                    reply = {"bad": f"cannot return it: {str(e)[:250]}"}
        try:
            send_frame(rpc, reply)
        except Exception:  # noqa: BLE001 - e.g. the reply does not encode
            send_frame(rpc, {"bad": "reply could not be sent"})


def harness_stdio(program):
    """Run the program as __main__ with fds 0/1/2 as its stdin/stdout/stderr."""
    import traceback
    g = _fresh_module("__main__")
    g["__file__"] = "/tmp/main.py"
    code = 0
    try:
        exec(compile(program, "main.py", "exec"), g)
    except SystemExit as e:
        c = e.code
        code = 0 if c is None else (c if isinstance(c, int) else 1)
        if not isinstance(c, (int, type(None))):
            try:
                print(c, file=sys.stderr)
            except Exception:  # noqa: BLE001
                pass
    except BaseException:  # noqa: BLE001
        try:
            traceback.print_exc()
        except Exception:  # noqa: BLE001
            pass
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            code = code or 1
    os._exit(code & 0xFF)


# ----------------------------------------------------------------------------------------------
# Program setup (runs in the fresh namespaces, before any model code)

class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_SECCOMP = {"buf": None, "prog": None}


def _prepare_seccomp(hexbpf):
    if not hexbpf:
        return
    raw = bytes.fromhex(hexbpf)
    buf = ctypes.create_string_buffer(raw, len(raw))
    _SECCOMP["buf"] = buf
    _SECCOMP["prog"] = _SockFprog(len(raw) // 8, ctypes.addressof(buf))


def _drop_caps():
    for cap in range(64):
        if _prctl(PR_CAPBSET_DROP, cap) != 0:
            if ctypes.get_errno() == errno.EINVAL:
                break  # past the last capability the kernel knows
            if ctypes.get_errno() == errno.EPERM:
                break  # weak mode without a user namespace: nothing to drop
    hdr = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(hdr), ctypes.byref(data)), "capset")


def _set_limits(lim, use_ns):
    import resource
    mb = 1 << 20
    cpu = int(lim["cpu_s"])
    pairs = [
        (resource.RLIMIT_AS, lim["memory_mb"] * mb, lim["memory_mb"] * mb),
        (resource.RLIMIT_CPU, cpu, cpu + 1),  # SIGXCPU at the soft limit, SIGKILL a second later
        (resource.RLIMIT_FSIZE, lim["fsize_mb"] * mb, lim["fsize_mb"] * mb),
        (resource.RLIMIT_NOFILE, lim["nofile"], lim["nofile"]),
        # Counted per user namespace: with our own namespace, this program's processes only.
        # Without one (weak mode) it would count every process of the user, so it is skipped.
        (resource.RLIMIT_NPROC, lim["nproc"], lim["nproc"]) if use_ns else None,
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_MEMLOCK, 0, 0),
        (resource.RLIMIT_MSGQUEUE, 0, 0),
    ]
    for which, soft, hard in filter(None, pairs):
        cur_soft, cur_hard = resource.getrlimit(which)
        if cur_hard != resource.RLIM_INFINITY:
            hard = min(hard, cur_hard)
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))


def _place_fds(mapping, keep_fd):
    """dup2 each {target: source} without clobbering; close every other fd but keep_fd.

    Returns keep_fd's new number."""
    high = {t: fcntl.fcntl(src, fcntl.F_DUPFD, 10) for t, src in mapping.items()}
    keep = fcntl.fcntl(keep_fd, fcntl.F_DUPFD, 10)
    for target, fd in high.items():
        os.dup2(fd, target)
    lo = 0
    for fd in sorted(set(mapping) | {keep}):
        if lo < fd:
            os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, 1 << 20)
    return keep


def program_main(job, fds, status_w, cfg, use_ns):
    """The program process. Set up, tell the forker "R", then run the model's code."""
    try:
        os.setsid()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        lim = job["limits"]
        if use_ns:
            _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount private /")
            opts = f"size={lim['tmpfs_mb']}m,nr_inodes={lim['tmpfs_inodes']},mode=0700"
            _check(_libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, opts.encode()),
                   "mount tmpfs /tmp")
            _check(_libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
                   "mount /proc")
            os.chdir("/tmp")
        else:
            os.chdir(job["workdir"])
        devnull = os.open("/dev/null", os.O_RDWR)
        if job["kind"] == "function":
            mapping = {0: devnull, 1: devnull, 2: fds[1], 3: fds[0]}
        else:
            mapping = {0: fds[0], 1: fds[1], 2: fds[2]}
        status_w = _place_fds(mapping, status_w)
        sys.stdin = sys.__stdin__ = open(0, "r", closefd=False, encoding="utf-8",
                                         errors="surrogateescape")
        sys.stdout = sys.__stdout__ = open(1, "w", closefd=False, encoding="utf-8",
                                           errors="backslashreplace")
        sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, closefd=False, encoding="utf-8",
                                           errors="backslashreplace")
        os.environ.clear()
        os.environ.update(cfg["env"])
        try:  # if memory runs out, the kernel kills the program, not the judge or the forker
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        _set_limits(lim, use_ns)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        if use_ns:
            _drop_caps()
        if _SECCOMP["prog"] is not None:
            _check(_libc.prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER),
                               ctypes.byref(_SECCOMP["prog"]), ctypes.c_ulong(0),
                               ctypes.c_ulong(0)), "seccomp")
        os.write(status_w, b"R")
        os.close(status_w)
    except BaseException as e:  # noqa: BLE001
        try:
            os.write(status_w, b"E" + _describe(e).encode())
        finally:
            os._exit(111)
    # From here on, nothing this process says is trusted.
    if job["kind"] == "function":
        harness_function(job["program"])
    else:
        harness_stdio(job["program"])
    os._exit(0)


def setup_main(job, fds, report_w, status_w, cfg):
    """Between forker and program: enter fresh namespaces, fork pid 1, report its pid, exit."""
    use_ns = True
    try:
        uid, gid = os.getuid(), os.getgid()
        # The judge and forker are non-dumpable, which makes /proc/self/uid_map root-owned; this
        # short-lived process (and the program after it) need not be.
        _prctl(PR_SET_DUMPABLE, 1)
        try:
            _check(_libc.unshare(CLONE_NEWUSER), "unshare(user)")
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                               ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
            _check(_libc.unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC), "unshare(pid,mnt,ipc)")
        except OSError:
            if cfg["strict"]:
                raise
            use_ns = False  # weak mode: carry on without namespaces
        pid = os.fork()
        if pid == 0:
            os.close(report_w)
            program_main(job, fds, status_w, cfg, use_ns)
        os.write(report_w, f"P{pid}\n".encode())
    except BaseException as e:  # noqa: BLE001
        try:
            os.write(report_w, b"E" + _describe(e).encode())
        except OSError:
            pass
    os._exit(0)


# ----------------------------------------------------------------------------------------------
# Forker: spawns programs, enforces the wall clock, reaps, reports exit status to the judge.

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


# ----------------------------------------------------------------------------------------------
# Judge

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
        out = memoryview(_HDR.pack(len(body)) + body)
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
        (n,) = _HDR.unpack(self.inbuf[:4])
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


def free_names(test_code):
    import ast
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


class Judge:
    def __init__(self, cfg):
        self.cfg = cfg
        self.sock = None

    # -- forker protocol
    def spawn(self, job, fds):
        send_msg(self.sock, job, fds)
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
        lim["cpu_s"] = int(float(job["timeout"])) + 1
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
        spawn = {"op": "spawn", "kind": "function", "program": job["program"],
                 "timeout": job["timeout"], "limits": self._limits(job)}
        try:
            self.spawn(spawn, [b.detach(), ew])
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
            cpu_limit = int(float(job["timeout"])) + 1
            if ex.get("cpu_s", 0.0) >= cpu_limit - 0.05:
                return "timeout", "cpu limit"
            return "memory", "killed (out of memory)"
        if code < 0:
            return "runtime_error", f"killed by signal {signal.Signals(-code).name}"
        return "runtime_error", f"exited with code {code} before the tests finished"

    def run_stdio(self, job):
        memfd = os.memfd_create("stdin")
        data = job["stdin"].encode("utf-8", "surrogateescape")
        _write_all(memfd, data)
        os.lseek(memfd, 0, os.SEEK_SET)
        outr, outw = os.pipe()
        er, ew = os.pipe()
        spawn = {"op": "spawn", "kind": "stdio", "program": job["program"],
                 "timeout": job["timeout"], "limits": self._limits(job)}
        try:
            self.spawn(spawn, [memfd, outw, ew])
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
            cpu_limit = int(float(job["timeout"])) + 1
            status = "timeout" if ex.get("cpu_s", 0.0) >= cpu_limit - 0.05 else "memory"
        else:
            status = "exited"
        return {"status": status, "code": code, "elapsed_s": round(elapsed, 4),
                "stdout": chan.stdout.decode("utf-8", "replace"),
                "stderr": chan.stderr.decode("utf-8", "replace")}


class SetupError(Exception):
    pass


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


if __name__ == "__main__":
    main()
