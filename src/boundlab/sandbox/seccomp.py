"""A seccomp deny-list, compiled by libseccomp for this machine's architecture.

Why a deny-list and not an allow-list: namespaces, a separate unprivileged uid, no capabilities
and rlimits already contain a program; seccomp only removes kernel surface a Python program never
needs (ptrace, new namespaces, mount, keyrings, bpf, io_uring, ...). An allow-list would have to
track every syscall CPython and glibc may make, and break on the next upgrade.

The policy is written by syscall *name*; libseccomp (Debian's libseccomp2, the C library, loaded
here through ctypes so any Python can use it) turns each name into that architecture's number
and emits the classic BPF program, with the architecture check in front: a syscall made through
another ABI of the same CPU (i386's int 0x80 on x86_64, x32) kills the process, since the numbers
would not match. The program is built in the parent and handed to the worker as bytes, so the
sandbox itself stays standard-library only. Where libseccomp is missing or does not know the
architecture, `deny_list_bpf` raises `SeccompUnavailable` naming why; the pool then refuses to run
model-written code (see `layers`), never runs without the layer silently.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
import tempfile
from functools import lru_cache

RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
AUDIT_ARCH_X86_64 = 0xC000003E


class SeccompUnavailable(RuntimeError):
    """The seccomp filter cannot be built here (why is in the message)."""


def _ret_errno(e: int) -> int:
    return 0x00050000 | (e & 0xFFFF)


# Syscall name -> errno returned. A name the architecture does not have (iopl on arm64) is skipped:
# there is nothing to deny.
DENY: dict[str, int] = {
    **dict.fromkeys(("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"),
                    errno.EPERM),
    **dict.fromkeys(("mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
                     "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"), errno.EPERM),
    "unshare": errno.EPERM,
    "setns": errno.EPERM,
    "clone3": errno.ENOSYS,  # flags live in memory BPF cannot read; glibc falls back to clone
    **dict.fromkeys(("swapon", "swapoff", "reboot", "sethostname", "setdomainname", "init_module",
                     "delete_module", "finit_module", "kexec_load", "kexec_file_load", "acct",
                     "quotactl"), errno.EPERM),
    **dict.fromkeys(("add_key", "request_key", "keyctl", "bpf", "perf_event_open", "userfaultfd",
                     "name_to_handle_at", "open_by_handle_at", "syslog", "personality"), errno.EPERM),
    **dict.fromkeys(("io_uring_setup", "io_uring_enter", "io_uring_register"), errno.EPERM),
    **dict.fromkeys(("iopl", "ioperm", "uselib", "vhangup", "lookup_dcookie", "fanotify_init",
                     "migrate_pages", "move_pages"), errno.EPERM),
}
# clone (and clone2 on ia64) with any of these flags in its first argument -> EPERM:
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
CLONE_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)

# The old hand-assembled table's x86_64 numbers, kept so a test can check libseccomp's filter
# denies at least what that one did.
DENIED_SYSCALLS_X86_64 = frozenset({
    101, 310, 311, 312, 438, 165, 166, 155, 161, 428, 429, 430, 431, 432, 433, 442, 272, 308, 435,
    167, 168, 169, 170, 171, 175, 176, 313, 246, 320, 163, 179, 248, 249, 250, 321, 298, 323, 303,
    304, 103, 135, 425, 426, 427, 172, 173, 134, 153, 212, 300, 256, 279})

# libseccomp's constants (seccomp.h, stable ABI since 2.x)
_SCMP_FLTATR_ACT_BADARCH = 2
_SCMP_CMP_MASKED_EQ = 7
_NR_SCMP_ERROR = -1


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


@lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as e:
        raise SeccompUnavailable(f"libseccomp is not installed ({e}): apt-get install -y libseccomp2 "
                                 "(see scripts/install-system-deps.sh)") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_arch_native.restype = ctypes.c_uint32
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_arch_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_arch_remove.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _ok(rc: int, what: str) -> None:
    if rc < 0:
        raise SeccompUnavailable(f"libseccomp: {what} failed: {os.strerror(-rc)}")


# `uname -m` / platform.machine() spellings that libseccomp names otherwise
_UNAME_TO_SCMP = {"amd64": "x86_64", "AMD64": "x86_64", "arm64": "aarch64", "i386": "x86", "i686": "x86",
                  "armv7l": "arm", "armv6l": "arm"}


def arch_token(machine: str | None = None) -> int:
    """libseccomp's token (the kernel's AUDIT_ARCH_* value) for `machine` (a libseccomp arch name:
    x86_64, aarch64, riscv64, ...), or this machine's when None."""
    lib = _lib()
    if machine is None:
        # A libseccomp built without this machine's architecture answers 0: refused, never a
        # filter for some other architecture (which would kill every worker) or none at all.
        tok = lib.seccomp_arch_native()
        if not tok:
            raise SeccompUnavailable(f"libseccomp does not know this machine's architecture "
                                     f"({platform.machine() or 'unknown'})")
        return tok
    tok = lib.seccomp_arch_resolve_name(_UNAME_TO_SCMP.get(machine, machine).encode())
    if not tok:
        raise SeccompUnavailable(f"libseccomp does not know the architecture {machine!r}")
    return tok


@lru_cache(maxsize=8)
def deny_list_bpf(machine: str | None = None) -> bytes:
    """The filter as raw `struct sock_filter[]` bytes for `machine` (default: this one). Raises
    SeccompUnavailable when libseccomp is missing or cannot build it."""
    lib = _lib()
    arch = arch_token(machine)
    ctx = lib.seccomp_init(RET_ALLOW)
    if not ctx:
        raise SeccompUnavailable("libseccomp: seccomp_init failed")
    try:
        native = lib.seccomp_arch_native()
        if arch != native:  # a filter for another machine (tests); the context starts with native
            _ok(lib.seccomp_arch_add(ctx, arch), f"adding architecture {machine}")
            _ok(lib.seccomp_arch_remove(ctx, native), "removing the native architecture")
        _ok(lib.seccomp_attr_set(ctx, _SCMP_FLTATR_ACT_BADARCH, RET_KILL_PROCESS), "setting the bad-arch action")
        # A rule names its syscall by the *native* number (a negative pseudo-number for a syscall
        # the native architecture lacks); libseccomp translates it by name for the filter's
        # architecture and skips it where that architecture has no such syscall.
        for name, err in DENY.items():
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr == _NR_SCMP_ERROR:
                continue  # a name libseccomp does not know at all
            _ok(lib.seccomp_rule_add_array(ctx, _ret_errno(err), nr, 0, None), f"denying {name}")
        for name in ("clone", "clone2"):
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr == _NR_SCMP_ERROR:
                continue
            for flag in CLONE_NS_FLAGS:  # one rule a flag: (args[0] & flag) == flag
                cmp = _ArgCmp(0, _SCMP_CMP_MASKED_EQ, flag, flag)
                _ok(lib.seccomp_rule_add_array(ctx, _ret_errno(errno.EPERM), nr, 1, ctypes.byref(cmp)),
                    f"denying {name} with namespace flags")
        with tempfile.TemporaryFile() as f:
            _ok(lib.seccomp_export_bpf(ctx, f.fileno()), "exporting the BPF program")
            f.seek(0)
            bpf = f.read()
    finally:
        lib.seccomp_release(ctx)
    if not bpf or len(bpf) % 8:
        raise SeccompUnavailable(f"libseccomp exported a BPF program of {len(bpf)} bytes")
    return bpf
