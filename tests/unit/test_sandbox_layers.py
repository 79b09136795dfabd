"""Confinement is real or refused: the libseccomp filter, run on each syscall (by a small classic-BPF
interpreter here, and by the kernel in a forked child), and the pool's refusal when a layer cannot be
set up (a missing libseccomp or cgroup controller, simulated), with the explicit opt-out."""

import ctypes
import errno
import os
import struct
import warnings

import pytest

from boundlab.sandbox import SandboxPool, SandboxUnavailable, layers, seccomp
from boundlab.sandbox.jobs import FunctionJob, SandboxConfig

ALLOW, KILL = 0x7FFF0000, 0x80000000
EPERM, ENOSYS = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7, "riscv64": 0xC00000F3}
# (syscall numbers from each kernel's unistd tables, written out so the test does not ask libseccomp)
NR = {"x86_64": {"read": 0, "getpid": 39, "ptrace": 101, "unshare": 272, "mount": 165, "bpf": 321,
                 "clone": 56, "clone3": 435, "io_uring_setup": 425, "iopl": 172},
      "aarch64": {"read": 63, "getpid": 172, "ptrace": 117, "unshare": 97, "mount": 40, "bpf": 280,
                  "clone": 220, "clone3": 435, "io_uring_setup": 425},
      "riscv64": {"read": 63, "getpid": 172, "ptrace": 117, "unshare": 97, "mount": 40, "bpf": 280,
                  "clone": 220, "clone3": 435, "io_uring_setup": 425}}
CLONE_NEWUSER, CLONE_NEWNET, THREAD_FLAGS = 0x10000000, 0x40000000, 0x003D0F00


def run_bpf(prog: bytes, nr: int, arch: int, args=(0, 0, 0, 0, 0, 0)) -> int:
    """What the kernel would return for `struct seccomp_data` {nr, arch, ip=0, args}: the classic BPF
    subset libseccomp emits (ld abs, jeq/jge/jgt/jset k, ja, and k, ret k)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *args)
    insns = [struct.unpack("=HBBI", prog[i:i + 8]) for i in range(0, len(prog), 8)]
    pc, acc = 0, 0
    for _ in range(len(insns) + 1):
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # ld w abs
            acc = struct.unpack_from("=I", data, k)[0]
        elif code == 0x54:  # alu and k
            acc &= k
        elif code == 0x06:  # ret k
            return k
        elif code == 0x05:  # ja
            pc += k
        elif code in (0x15, 0x25, 0x35, 0x45):  # jeq, jgt, jge, jset
            hit = {0x15: acc == k, 0x25: acc > k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += jt if hit else jf
        else:
            raise AssertionError(f"opcode {code:#x} at {pc} not expected from libseccomp")
        pc += 1
    raise AssertionError("the program did not return")


@pytest.mark.parametrize("machine", sorted(NR))
def test_filter_denies_the_old_policy_on_each_architecture(machine):
    prog, arch, nr = seccomp.deny_list_bpf(machine), ARCH[machine], NR[machine]
    for name in ("ptrace", "unshare", "mount", "bpf", "io_uring_setup", "iopl"):
        if name in nr:
            assert run_bpf(prog, nr[name], arch) == EPERM, name
    assert run_bpf(prog, nr["clone3"], arch) == ENOSYS  # glibc falls back to clone
    for flag in (CLONE_NEWUSER, CLONE_NEWNET):
        assert run_bpf(prog, nr["clone"], arch, (flag | THREAD_FLAGS, 0, 0, 0, 0, 0)) == EPERM
    assert run_bpf(prog, nr["clone"], arch, (THREAD_FLAGS, 0, 0, 0, 0, 0)) == ALLOW  # threads still start
    assert run_bpf(prog, nr["read"], arch) == ALLOW and run_bpf(prog, nr["getpid"], arch) == ALLOW
    other = next(a for m, a in ARCH.items() if m != machine)
    assert run_bpf(prog, nr["read"], other) == KILL  # another ABI's numbers would not match: killed


def test_x86_64_filter_kills_x32_calls_and_covers_the_old_table():
    prog = seccomp.deny_list_bpf("x86_64")
    assert run_bpf(prog, 0x40000000 | 0, ARCH["x86_64"]) == KILL  # x32 read
    for nr in seccomp.DENIED_SYSCALLS_X86_64:  # every number the hand-assembled filter denied
        assert run_bpf(prog, nr, ARCH["x86_64"]) in (EPERM, ENOSYS), nr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_the_kernel_enforces_the_filter_on_this_machine():
    prog = seccomp.deny_list_bpf()  # this machine's architecture, whatever it is
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child installs the filter and reports what each call returned
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            buf = ctypes.create_string_buffer(prog, len(prog))

            class Fprog(ctypes.Structure):
                _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

            fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
            libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
            ok = libc.prctl(22, 2, ctypes.byref(fp), 0, 0)  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
            out = [ok]
            for call in (lambda: libc.unshare(CLONE_NEWUSER), lambda: libc.ptrace(0, 0, 0, 0)):
                rc = call()
                out.append(ctypes.get_errno() if rc == -1 else 0)
            out.append(int(os.getpid() > 0))
            os.write(w, repr(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 200).decode()
    os.waitpid(pid, 0)
    assert got == repr([0, errno.EPERM, errno.EPERM, 1])


def _no_libseccomp(machine=None):
    raise seccomp.SeccompUnavailable("libseccomp is not installed (libseccomp.so.2: cannot open shared object file)")


@pytest.mark.filterwarnings("ignore:.*WEAK ISOLATION")
def test_a_missing_seccomp_layer_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(seccomp, "deny_list_bpf", _no_libseccomp)
    with pytest.raises(SandboxUnavailable) as e:
        SandboxPool(bwrap="/nonexistent/bwrap", allow_weak_isolation=True, workers=1)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("refusing to run model-written code: the seccomp layer")
    assert "libseccomp is not installed" in msg and "sandbox.allow_weaker=true" in msg
    from boundlab.verify import build_verifier

    with pytest.raises(SandboxUnavailable, match="the seccomp layer cannot be set up"):
        build_verifier("code", allow_weak_isolation=True, bwrap="/nonexistent/bwrap")


@pytest.mark.filterwarnings("ignore:.*WEAK ISOLATION")
def test_a_missing_seccomp_layer_is_refused_with_bubblewrap_too(monkeypatch):
    from boundlab.sandbox import isolation_problem

    if isolation_problem() is not None:
        pytest.skip(f"bubblewrap cannot run here: {isolation_problem()}")
    monkeypatch.setattr(seccomp, "deny_list_bpf", _no_libseccomp)
    monkeypatch.setattr("boundlab.sandbox.launch._PROBE_CACHE", {})  # bubblewrap's own probe runs again
    with pytest.raises(SandboxUnavailable, match="^refusing to run model-written code: the seccomp layer"):
        SandboxPool(workers=1)


def test_the_opt_out_runs_without_the_layer_and_says_so(monkeypatch, caplog):
    monkeypatch.setattr(seccomp, "deny_list_bpf", _no_libseccomp)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pool = SandboxPool(bwrap="/nonexistent/bwrap", allow_weak_isolation=True, allow_weaker=True, workers=1)
    said = [str(x.message) for x in w if "WITHOUT SECCOMP" in str(x.message)]
    assert len(said) == 1 and "(sandbox.allow_weaker=true)" in said[0] and "libseccomp is not installed" in said[0]
    assert any("WITHOUT SECCOMP" in r.getMessage() for r in caplog.records)  # in the run's log too
    with pool:
        assert pool.layers["seccomp"] is False and pool.plan.judge_cfg["seccomp_bpf"] is None
        ok = pool.run(FunctionJob("def f(x):\n    return x + 1\n", "assert f(1) == 2", "f"))
        hello = pool._slots[0].worker.hello
    assert ok.outcome == "passed" and hello["seccomp"] is False


def test_the_filter_is_in_force_without_the_opt_out():
    with pytest.warns(RuntimeWarning, match="WEAK ISOLATION"):
        pool = SandboxPool(bwrap="/nonexistent/bwrap", allow_weak_isolation=True, workers=1)
    with pool:
        assert pool.layers["seccomp"] is True
        assert bytes.fromhex(pool.plan.judge_cfg["seccomp_bpf"]) == seccomp.deny_list_bpf()
        ok = pool.run(FunctionJob("def f(x):\n    return x + 1\n", "assert f(1) == 2", "f"))
        hello = pool._slots[0].worker.hello
    assert ok.outcome == "passed" and hello["seccomp"] is True


def test_missing_cgroups_as_root_are_refused_unless_opted_out(monkeypatch):
    monkeypatch.setattr(layers.os, "geteuid", lambda: 0)
    monkeypatch.setattr(layers.WorkerCgroup, "create", classmethod(lambda cls, **kw: None))
    why = layers.cgroups_problem(strict=True)
    assert why and "memory or pids cgroup controller" in why
    assert layers.cgroups_problem(strict=False) is None  # weak mode puts no worker in a cgroup
    missing = layers.missing_layers(SandboxConfig(), strict=True)
    assert list(missing) == ["cgroups"]
    line = layers.refusal(missing)
    assert "\n" not in line and "the cgroups layer cannot be set up" in line
    monkeypatch.setattr(layers.os, "geteuid", lambda: 1000)
    assert layers.cgroups_problem(strict=True) is None  # not part of a non-root user's design


@pytest.mark.filterwarnings("ignore:.*WEAK ISOLATION")
def test_the_refusal_reaches_the_user_as_one_line_and_exit_2(monkeypatch, capsys):
    from boundlab.cli import friendly_errors

    monkeypatch.setattr(seccomp, "deny_list_bpf", _no_libseccomp)
    entry = friendly_errors(lambda: SandboxPool(bwrap="/nonexistent/bwrap", allow_weak_isolation=True, workers=1))
    with pytest.raises(SystemExit) as e:
        entry()
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: refusing to run model-written code: the seccomp layer cannot be set up")


class _LibseccompWithoutThisArch:
    """The real libseccomp, but built without this machine's architecture (an old libseccomp on a
    newer CPU): it answers 0 for the native architecture, as libseccomp does for one it lacks."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def seccomp_arch_native(self):
        return 0


@pytest.fixture
def foreign_machine(monkeypatch):
    """This process on a non-x86_64 machine whose libseccomp does not know its architecture."""
    real = seccomp._lib()
    monkeypatch.setattr(seccomp, "_lib", lambda: _LibseccompWithoutThisArch(real))
    monkeypatch.setattr(seccomp.platform, "machine", lambda: "loongarch64")
    seccomp.deny_list_bpf.cache_clear()
    yield
    seccomp.deny_list_bpf.cache_clear()


@pytest.mark.filterwarnings("ignore:.*WEAK ISOLATION")
def test_an_architecture_libseccomp_lacks_is_refused_naming_the_layer(foreign_machine):
    with pytest.raises(seccomp.SeccompUnavailable, match=r"^libseccomp does not know this machine's "
                                                         r"architecture \(loongarch64\)$"):
        seccomp.deny_list_bpf()
    with pytest.raises(SandboxUnavailable) as e:
        SandboxPool(bwrap="/nonexistent/bwrap", allow_weak_isolation=True, workers=1)
    assert str(e.value) == (
        "refusing to run model-written code: the seccomp layer cannot be set up: libseccomp does not know "
        "this machine's architecture (loongarch64). Fix it, or set sandbox.allow_weaker=true to run without "
        "seccomp (logged in the run)")


@pytest.mark.filterwarnings("ignore:.*WEAK ISOLATION")
def test_an_architecture_libseccomp_lacks_runs_only_when_opted_out(foreign_machine):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pool = SandboxPool(bwrap="/nonexistent/bwrap", allow_weak_isolation=True, allow_weaker=True, workers=1)
    said = [str(x.message) for x in w if "WITHOUT SECCOMP" in str(x.message)]
    assert len(said) == 1 and "loongarch64" in said[0]
    with pool:
        assert pool.layers["seccomp"] is False and pool.plan.judge_cfg["seccomp_bpf"] is None


# (little-endian only: libseccomp cannot hold a big-endian architecture such as s390x beside this
# machine's native one in one context, so a big-endian filter can only be built on such a machine)
@pytest.mark.parametrize("machine", ["aarch64", "arm64", "riscv64", "ppc64le"])
def test_a_non_x86_64_machine_libseccomp_knows_gets_its_own_filter(machine):
    # The filter is built for the named architecture, never x86_64's numbers (the old hand-assembled
    # filter's failure): its architecture check names that architecture's token.
    prog = seccomp.deny_list_bpf(machine)
    assert prog and seccomp.arch_token(machine) != seccomp.AUDIT_ARCH_X86_64
    assert struct.pack("=I", seccomp.arch_token(machine)) in prog
    assert struct.pack("=I", seccomp.AUDIT_ARCH_X86_64) not in prog
