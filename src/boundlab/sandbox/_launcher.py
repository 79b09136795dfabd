"""Started as root (`python -I -S -c <this file> <json>`): give bubblewrap an unprivileged uid.

Model code must not run under the probe's uid, and RLIMIT_NPROC does nothing for uid 0. So when
the probe runs as root, each worker's bubblewrap runs as a separate unprivileged uid. That uid
cannot traverse a root-only home (pyenv's interpreter lives under /root, mode 700), so this
launcher first enters a private mount namespace (host mounts are untouched), bind-mounts the
interpreter's prefix onto a fresh tmpfs that the uid can reach, drops to the uid, and execs
bwrap, which re-binds it read-only at its real path inside the sandbox.
"""

import ctypes
import json
import os
import sys

MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
CLONE_NEWNS = 0x00020000


def _check(ret, what):
    if ret != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def main():
    cfg = json.loads(sys.argv[1])
    # Join the worker's memory/pids cgroups before anything forks; everything inside inherits them.
    for procs in cfg.get("cgroup_procs", []):
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    # The judge and forker should outlive an out-of-memory kill; each program raises its own
    # score to the maximum (which needs no privilege), so it is the one the kernel picks.
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write(str(cfg.get("oom_score_adj", 0)))
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                           ctypes.c_char_p]
    _check(libc.unshare(CLONE_NEWNS), "unshare(mount)")
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    # Open the sources (in this namespace) before the stage tmpfs may cover them (an
    # interpreter under /tmp).
    srcs = [os.open(src, os.O_PATH | os.O_DIRECTORY) for src in cfg["binds"]]
    stage = cfg["stage"]  # e.g. /tmp: a tmpfs over it, visible only in this namespace
    _check(libc.mount(b"tmpfs", stage.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                      b"mode=0755,size=1m"), "tmpfs stage")
    for i, fd in enumerate(srcs):
        dst = os.path.join(stage, f"b{i}")
        os.mkdir(dst, 0o755)
        _check(libc.mount(f"/proc/self/fd/{fd}".encode(), dst.encode(), None, MS_BIND | MS_REC,
                          None), f"bind {cfg['binds'][i]}")
        os.close(fd)
    uid, gid = cfg["uid"], cfg["gid"]
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    os.chdir("/")
    os.execve(cfg["bwrap"], [cfg["bwrap"]] + cfg["argv"], cfg["env"])


if __name__ == "__main__":
    main()
