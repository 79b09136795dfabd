"""Sandbox pieces that need no sandbox: the plain-data codec, output comparison, the BPF."""

from __future__ import annotations

import collections
import math
import struct

import pytest

from boundlab.sandbox import outputs_match
from boundlab.sandbox._worker import _dumps, decode, encode, free_names
from boundlab.sandbox.seccomp import DENIED_SYSCALLS_X86_64, deny_list_bpf


def roundtrip(x):
    return decode(_dumps(encode(x)))


@pytest.mark.parametrize("value", [
    None, True, False, 0, -5, 2**80, -(2**200), 1.5, -0.0, float("inf"), "", "é\ud800", [1, [2]],
    (1, (2, "x")), {"a": 1, 2: [3], (1, 2): None}, {1, 2}, frozenset({"a"}), b"\x00\xff",
    bytearray(b"ab"), 3 + 4j, range(1, 10, 2), [(), {}, set()],
])
def test_codec_roundtrip_exact_types(value):
    out = roundtrip(value)
    assert out == value and type(out) is type(value)


def test_codec_nan_and_containers_of_subclasses():
    assert math.isnan(roundtrip(float("nan")))
    counts = collections.Counter("aab")
    out = roundtrip(counts)
    assert out == {"a": 2, "b": 1} and type(out) is dict
    point = collections.namedtuple("P", "x y")(1, 2)
    assert roundtrip(point) == (1, 2) and type(roundtrip(point)) is tuple
    assert roundtrip(collections.deque([1, 2])) == collections.deque([1, 2])
    assert list(roundtrip(iter([1, 2]))) == [1, 2]
    assert list(roundtrip(x * 2 for x in range(3))) == [0, 2, 4]


def test_codec_strips_subclass_behaviour():
    class Liar(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    out = roundtrip(Liar(3))
    assert type(out) is int and out == 3 and out != 4


def test_codec_refuses_arbitrary_objects():
    class AlwaysEqual:
        def __eq__(self, other):
            return True

    with pytest.raises(TypeError, match="unsupported return type"):
        encode(AlwaysEqual())
    with pytest.raises(TypeError):
        encode([1, object()])
    with pytest.raises(TypeError):
        encode(lambda: 1)


def test_decoder_rejects_unknown_tags_and_garbage():
    for text in ('{"x": 1}', '{"t": [1], "s": [2]}', '{"d": [[[1], 2]]}', "[1,", '{"I": "zz"}'):
        with pytest.raises(Exception):
            decode(text)


def test_free_names_of_test_code():
    test = "import math\nMETA = 1\ndef check(candidate):\n    assert poly(candidate(1), x=2)\n"
    assert free_names(test) == ["poly"]


@pytest.mark.parametrize("actual, expected, tol, ok", [
    ("3\n", "3", None, True),
    ("  1 2  \n\n", "1 2\n", None, True),
    ("1   2", "1 2", None, True),
    ("1.0", "1", None, True),
    ("1.000001", "1", None, False),
    ("1.000001", "1", 1e-5, True),
    ("abc", "abd", None, False),
    ("1\n2", "1\n2\n3", None, False),
    ("nan", "nan", None, True),
    ("inf", "1", 1e-3, False),
    ("", "", None, True),
])
def test_outputs_match(actual, expected, tol, ok):
    assert outputs_match(actual, expected, tol) is ok


def test_seccomp_bpf_is_well_formed():
    bpf = deny_list_bpf("x86_64")
    assert bpf is not None and len(bpf) % 8 == 0
    insns = [struct.unpack("=HBBI", bpf[i:i + 8]) for i in range(0, len(bpf), 8)]
    assert len(insns) < 4096
    for i, (code, jt, jf, _k) in enumerate(insns):
        if code & 0x07 == 0x05:  # a conditional jump lands inside the program
            assert i + 1 + max(jt, jf) < len(insns)
    # default: allow (libseccomp places the bad-architecture kill after it, so it is no longer the
    # last instruction; test_sandbox_layers runs the program on each syscall)
    assert (0x06, 0, 0, 0x7FFF0000) in insns
    checked = {k for code, _jt, _jf, k in insns if code == 0x15}
    assert DENIED_SYSCALLS_X86_64 <= checked
    # Another architecture gets its own filter (the hand-assembled one had none: the layer vanished)
    rv = deny_list_bpf("riscv64")
    assert len(rv) % 8 == 0 and struct.unpack("=HBBI", rv[8:16])[3] == 0xC00000F3  # AUDIT_ARCH_RISCV64


def test_refuses_to_run_code_without_isolation():
    from boundlab.sandbox import SandboxPool, SandboxUnavailable
    from boundlab.verify import build_verifier

    with pytest.raises(SandboxUnavailable, match="bubblewrap.*allow_weak_isolation"):
        SandboxPool(bwrap="/nonexistent/bwrap")
    with pytest.raises(SandboxUnavailable):
        build_verifier("code", bwrap="/nonexistent/bwrap")


def test_weak_isolation_only_when_asked_and_loudly():
    from boundlab.sandbox import FunctionJob, SandboxPool

    with pytest.warns(RuntimeWarning, match="WEAK ISOLATION"):
        pool = SandboxPool(bwrap="/nonexistent/bwrap", allow_weak_isolation=True, workers=1)
    with pool:
        assert pool.isolation == "weak"
        ok = pool.run(FunctionJob("def f(x):\n    return x + 1\n", "assert f(1) == 2", "f"))
        bad = pool.run(FunctionJob("def f(x):\n    return x\n", "assert f(1) == 2", "f"))
    assert (ok.outcome, bad.outcome) == ("passed", "failed")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_code_verifier_options():
    from boundlab.verify import build_verifier

    # Built from its own block (`verify.code`) plus the shared workers.
    v = build_verifier("code", workers=2, allow_weak_isolation=True, bwrap="/nonexistent/bwrap",
                       timeout_s=4.0, memory_mb=512)
    assert v.pool.cfg.timeout_s == 4.0 and v.pool.cfg.memory_mb == 512 and v.pool.cfg.workers == 2
    v.close()
    # The math verifier's keys never reach it (verifier_options): one that does is a caller's bug.
    with pytest.raises(TypeError, match=r"code verifier: unknown option\(s\) \['deadline_s'\]"):
        build_verifier("code", deadline_s=2.0, allow_weak_isolation=True, bwrap="/nonexistent/bwrap")
    # A typo is refused, naming it.
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['timout_s'\]"):
        build_verifier("code", timout_s=3, allow_weak_isolation=True, bwrap="/nonexistent/bwrap")
