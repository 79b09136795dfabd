"""A seccomp deny-list, as a classic BPF program built here (no libseccomp needed).

Why a deny-list and not an allow-list: namespaces, a separate unprivileged uid, no capabilities
and rlimits already contain a program; seccomp only removes kernel surface a Python program never
needs (ptrace, new namespaces, mount, keyrings, bpf, io_uring, ...). An allow-list would have to
track every syscall CPython and glibc may make, and break on the next upgrade.

Only x86_64 has a table; on other architectures `deny_list_bpf()` returns None and the sandbox
runs without this layer (it says so in the worker's hello, `info["seccomp"]`).
"""

from __future__ import annotations

import errno
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E

# BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000


def _ret_errno(e: int) -> int:
    return 0x00050000 | (e & 0xFFFF)


# x86_64 syscall numbers -> errno returned.
_X86_64_DENY = {
    101: errno.EPERM,  # ptrace
    310: errno.EPERM,  # process_vm_readv
    311: errno.EPERM,  # process_vm_writev
    312: errno.EPERM,  # kcmp
    438: errno.EPERM,  # pidfd_getfd
    165: errno.EPERM,  # mount
    166: errno.EPERM,  # umount2
    155: errno.EPERM,  # pivot_root
    161: errno.EPERM,  # chroot
    428: errno.EPERM,  # open_tree
    429: errno.EPERM,  # move_mount
    430: errno.EPERM,  # fsopen
    431: errno.EPERM,  # fsconfig
    432: errno.EPERM,  # fsmount
    433: errno.EPERM,  # fspick
    442: errno.EPERM,  # mount_setattr
    272: errno.EPERM,  # unshare
    308: errno.EPERM,  # setns
    435: errno.ENOSYS,  # clone3: flags live in memory BPF cannot read; glibc falls back to clone
    167: errno.EPERM,  # swapon
    168: errno.EPERM,  # swapoff
    169: errno.EPERM,  # reboot
    170: errno.EPERM,  # sethostname
    171: errno.EPERM,  # setdomainname
    175: errno.EPERM,  # init_module
    176: errno.EPERM,  # delete_module
    313: errno.EPERM,  # finit_module
    246: errno.EPERM,  # kexec_load
    320: errno.EPERM,  # kexec_file_load
    163: errno.EPERM,  # acct
    179: errno.EPERM,  # quotactl
    248: errno.EPERM,  # add_key
    249: errno.EPERM,  # request_key
    250: errno.EPERM,  # keyctl
    321: errno.EPERM,  # bpf
    298: errno.EPERM,  # perf_event_open
    323: errno.EPERM,  # userfaultfd
    303: errno.EPERM,  # name_to_handle_at
    304: errno.EPERM,  # open_by_handle_at
    103: errno.EPERM,  # syslog
    135: errno.EPERM,  # personality
    425: errno.EPERM,  # io_uring_setup
    426: errno.EPERM,  # io_uring_enter
    427: errno.EPERM,  # io_uring_register
    172: errno.EPERM,  # iopl
    173: errno.EPERM,  # ioperm
    134: errno.EPERM,  # uselib
    153: errno.EPERM,  # vhangup
    212: errno.EPERM,  # lookup_dcookie
    300: errno.EPERM,  # fanotify_init
    256: errno.EPERM,  # migrate_pages
    279: errno.EPERM,  # move_pages
}
_X86_64_CLONE = 56
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
CLONE_NS_FLAGS = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
                  | 0x40000000)


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def deny_list_bpf(machine: str | None = None) -> bytes | None:
    """The filter as raw `struct sock_filter[]` bytes, or None where we have no table."""
    machine = machine or platform.machine()
    if machine not in ("x86_64", "amd64", "AMD64"):
        return None
    prog: list[bytes] = []
    # Wrong ABI (i386 via int 0x80, x32): kill. Numbers differ there, so the table would not hold.
    prog.append(_insn(_LD_W_ABS, 0, 0, 4))  # seccomp_data.arch
    prog.append(_insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64))
    prog.append(_insn(_RET_K, 0, 0, RET_KILL_PROCESS))
    prog.append(_insn(_LD_W_ABS, 0, 0, 0))  # seccomp_data.nr
    prog.append(_insn(_JGE_K, 0, 1, 0x40000000))  # x32 syscalls
    prog.append(_insn(_RET_K, 0, 0, RET_KILL_PROCESS))
    # clone with any namespace flag -> EPERM (flags: low 32 bits of args[0], offset 16)
    prog.append(_insn(_JEQ_K, 0, 3, _X86_64_CLONE))
    prog.append(_insn(_LD_W_ABS, 0, 0, 16))
    prog.append(_insn(_JSET_K, 0, 1, CLONE_NS_FLAGS))
    prog.append(_insn(_RET_K, 0, 0, _ret_errno(errno.EPERM)))
    # after the clone block the accumulator may hold args[0]: reload nr
    prog.append(_insn(_LD_W_ABS, 0, 0, 0))
    for nr, err in sorted(_X86_64_DENY.items()):
        prog.append(_insn(_JEQ_K, 0, 1, nr))
        prog.append(_insn(_RET_K, 0, 0, _ret_errno(err)))
    prog.append(_insn(_RET_K, 0, 0, RET_ALLOW))
    return b"".join(prog)


DENIED_SYSCALLS_X86_64 = frozenset(_X86_64_DENY)
