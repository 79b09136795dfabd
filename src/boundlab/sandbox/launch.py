"""How a worker starts: where isolation comes from, and the command line that starts one.

Strict mode: bubblewrap with every namespace unshared, the OS and the interpreter's prefix
read-only, a small tmpfs /tmp, /proc, a read-only /dev and an empty environment; nothing of the
home, the run dir or checkpoints is bound in. As root it goes through `_launcher.py`, which joins
the worker's cgroups and drops to an unprivileged uid first. Weak mode (only when asked for) runs
the same worker script without bubblewrap.

The worker script is `_worker/` packed into one `python -I -S -c` text (`worker_script`; the
reason is in `_worker`'s docstring).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from boundlab.sandbox.cgroups import WorkerCgroup
from boundlab.sandbox.jobs import SandboxConfig
from boundlab.sandbox import seccomp
from boundlab.sandbox.layers import cgroups_needed

_HERE = Path(__file__).resolve().parent
# Inside the sandbox the judge and the programs see this uid (inside their user namespaces).
INNER_UID = 1000
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
               "LANG": "C.UTF-8", "USER": "sandbox"}

# The files of `_worker/`, in the order the script loads them: each imports only parts before it;
# `__init__` (which imports two of them for the host's tests) comes last.
WORKER_PARTS = ("codec", "framing", "harness", "confine", "forker", "channel", "judge", "main",
                "__init__")
# Linux refuses an exec whose single argument is longer than this (MAX_ARG_STRLEN).
MAX_SCRIPT_BYTES = 128 << 10

# Runs first in the sandbox: build the package from the texts, then start the judge. Filenames in
# angle brackets keep tracebacks from looking for source files on disk (in a program's /tmp).
_BOOT = """
import sys


def _load(package, parts):
    pkg = type(sys)(package)
    pkg.__path__ = []
    pkg.__package__ = package
    sys.modules[package] = pkg
    for part, text in parts:
        if part == "__init__":
            mod = pkg
        else:
            mod = type(sys)(package + "." + part)
            mod.__package__ = package
            sys.modules[mod.__name__] = mod
            setattr(pkg, part, mod)
        exec(compile(text, "<" + package + "/" + part + ".py>", "exec"), mod.__dict__)


_load("_worker", _PARTS)
sys.modules["_worker.main"].main()
"""


def worker_script() -> str:
    """The program each worker runs: `_worker/`'s files as one script for `python -c`."""
    parts = [(p, (_HERE / "_worker" / f"{p}.py").read_text(encoding="utf-8"))
             for p in WORKER_PARTS]
    script = f"_PARTS = {parts!r}\n" + _BOOT
    size = len(script.encode())
    if size >= MAX_SCRIPT_BYTES:
        raise RuntimeError(f"the sandbox worker script is {size} bytes; one exec argument must "
                           f"stay under {MAX_SCRIPT_BYTES}")
    return script


def find_bwrap(cfg: SandboxConfig | None = None) -> str | None:
    cfg = cfg or SandboxConfig()
    if cfg.bwrap:
        return cfg.bwrap if os.access(cfg.bwrap, os.X_OK) else None
    return shutil.which("bwrap")


_PROBE_CACHE: dict[tuple, str | None] = {}


def isolation_problem(cfg: SandboxConfig | None = None) -> str | None:
    """Why strict (bubblewrap) isolation cannot run here, or None when it can."""
    cfg = cfg or SandboxConfig()
    bwrap = find_bwrap(cfg)
    if bwrap is None:
        return ("bubblewrap (bwrap) is not installed: `apt-get install -y bubblewrap` "
                "(see .ci/system-deps.sh)")
    key = (bwrap, os.geteuid(), cfg.uid)
    if key not in _PROBE_CACHE:
        # this probe starts /bin/true, no worker: it needs neither seccomp nor cgroups (whose
        # absence the pool names itself, boundlab.sandbox.layers)
        plan = _Plan(cfg, strict=True, without=frozenset({"seccomp", "cgroups"}))
        argv = plan.bwrap_args(["/bin/true"], minimal=True)
        try:
            r = subprocess.run(plan.launch_cmd(argv), env=plan.launch_env, capture_output=True,
                               timeout=30)
            _PROBE_CACHE[key] = None if r.returncode == 0 else (
                f"bubblewrap cannot start a sandbox here (exit {r.returncode}): "
                f"{r.stderr.decode(errors='replace').strip()[:500]}")
        except (OSError, subprocess.TimeoutExpired) as e:
            _PROBE_CACHE[key] = f"bubblewrap cannot start a sandbox here: {e}"
    return _PROBE_CACHE[key]


class _Plan:
    """How to start one worker: the command line, environment and judge config."""

    def __init__(self, cfg: SandboxConfig, strict: bool, without: frozenset[str] = frozenset()):
        """`without`: the layers the pool runs without (opted out by `allow_weaker`)."""
        self.cfg = cfg
        self.without = without
        self.strict = strict
        self.bwrap = find_bwrap(cfg) if strict else None
        self.as_root = os.geteuid() == 0
        if self.as_root and strict and cfg.uid == 0:
            raise ValueError("sandbox uid must not be 0")
        self.python, self.prefix = _interpreter(cfg.python)
        self.launch_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        self.worker_source = worker_script()
        bpf = seccomp.deny_list_bpf() if cfg.seccomp and "seccomp" not in without else None
        self.judge_cfg = {
            "strict": strict,
            "env": dict(SANDBOX_ENV),
            "output_limit": cfg.output_limit_bytes,
            "seccomp_bpf": bpf.hex() if bpf else None,
            "limits": {"memory_mb": cfg.memory_mb, "fsize_mb": cfg.fsize_mb, "nofile": cfg.nofile,
                       "nproc": cfg.nproc, "tmpfs_mb": cfg.tmpfs_mb,
                       "tmpfs_inodes": cfg.tmpfs_inodes},
        }

    def _python_argv(self) -> list[str]:
        flags = ["-I"] if self.cfg.site_packages else ["-I", "-S"]
        return [self.python, *flags, "-c", self.worker_source, json.dumps(self.judge_cfg)]

    def bwrap_args(self, command: list[str], minimal: bool = False) -> list[str]:
        a = ["--unshare-all", "--die-with-parent", "--new-session",
             "--uid", str(INNER_UID), "--gid", str(INNER_UID), "--hostname", "sandbox",
             "--ro-bind", "/usr", "/usr"]
        for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(d):
                a += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                a += ["--ro-bind", d, d]
        for f in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
                  "/etc/alternatives"):
            a += ["--ro-bind-try", f, f]
        if not minimal and not _under(self.prefix, "/usr"):
            src = "/tmp/b0" if self.as_root else self.prefix
            a += ["--ro-bind", src, self.prefix]
        a += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
        a += ["--size", str(16 << 20), "--tmpfs", "/tmp", "--remount-ro", "/", "--clearenv"]
        for k, v in SANDBOX_ENV.items():
            a += ["--setenv", k, v]
        a += ["--chdir", "/tmp", "--"] + command
        return a

    def launch_cmd(self, bwrap_argv: list[str], cgroup_procs: Sequence[str] = ()) -> list[str]:
        """Root: through the launcher (cgroups, private mount ns, staged interpreter, setuid)."""
        if not self.as_root:
            return [self.bwrap, *bwrap_argv]
        binds = [] if _under(self.prefix, "/usr") else [self.prefix]
        spec = {"stage": "/tmp", "binds": binds, "uid": self.cfg.uid, "gid": self.cfg.gid,
                "bwrap": os.path.realpath(self.bwrap), "argv": bwrap_argv,
                "env": self.launch_env, "cgroup_procs": list(cgroup_procs),
                "oom_score_adj": -900}
        src = (_HERE / "_launcher.py").read_text(encoding="utf-8")
        return [sys.executable, "-I", "-S", "-c", src, json.dumps(spec)]

    def worker_cmd(self, cgroup: WorkerCgroup | None = None) -> list[str]:
        if not self.strict:
            return self._python_argv()
        procs = cgroup.procs_files if cgroup else ()
        return self.launch_cmd(self.bwrap_args(self._python_argv()), procs)

    def make_cgroup(self) -> WorkerCgroup | None:
        """Memory and pids cgroups around one worker (root with bwrap only; else None)."""
        if not (self.strict and self.as_root):
            return None
        cfg = self.cfg
        # one program (its processes and its tmpfs) plus the judge, the forker and bwrap
        memory = (cfg.memory_mb + cfg.tmpfs_mb + 256) << 20
        cg = WorkerCgroup.create(memory_bytes=memory, pids_max=cfg.nproc + 16)
        if cg is None and cgroups_needed(self.strict) and "cgroups" not in self.without:
            # the pool checked they could be made; never start a worker without them
            raise RuntimeError("the workers' memory and pids cgroups could not be created")
        return cg


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _interpreter(python: str | None) -> tuple[str, str]:
    """(interpreter path, the prefix holding its standard library)."""
    if python is None:
        return os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix)
    out = subprocess.run([python, "-I", "-S", "-c",
                          "import os,sys;print(os.path.realpath(sys.executable));"
                          "print(os.path.realpath(sys.base_prefix))"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return out[0], out[1]
