"""Between the forker and the model's code: the setup process and the program's own set-up.

    setup_main    forked by the forker per program: a new user namespace, then new pid, mount and
                  ipc namespaces; forks the program (pid 1 there), reports its pid, exits
    program_main  private tmpfs /tmp and fresh /proc, fds placed, empty environment, rlimits,
                  no new privileges, capabilities dropped, seccomp deny-list; says "R" on its
                  status pipe; only then loads the model's code (`harness`)

Everything before "R" is ours; a failure there is reported as "E<error>" and becomes a
sandbox error (retried by the pool), never a verdict on the model. Weak mode (no bubblewrap, and
the kernel refuses the user namespace) carries on without namespaces; strict mode fails instead.
"""

import ctypes
import errno
import fcntl
import os
import signal
import sys

from .harness import harness_function, harness_stdio

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


def _describe(e):
    """One line: the error and where it happened (for setup failures)."""
    import traceback
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at line {tb[-1].lineno} ({tb[-1].name})" if tb else ""
    return f"{e!r}{where}"[:500]


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
