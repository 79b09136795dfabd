"""Which confinement layers can be set up here, checked before any model-written code runs.

The layers, each of which must be in force or refused:

    bubblewrap  namespaces, read-only OS, no home (launch.isolation_problem; its opt-out is the
                older `allow_weak_isolation`, which runs the same worker without it)
    seccomp     the deny-list filter, compiled by libseccomp for this architecture (seccomp.py)
    cgroups     a memory and a pids cgroup around each worker; only where the design uses them:
                a probe running as root with bubblewrap (a non-root user's workers rely on
                RLIMIT_NPROC in their own user namespace and RLIMIT_AS per process, which need no
                set-up here)

The rlimits and the dropped capabilities are set in each program before its code loads; a failure
there is a sandbox error for that program (retried), never a run without them.

`missing_layers` names every layer that cannot be set up, with why. The pool refuses to start with
one line naming them unless the user opted out with `allow_weaker` (`sandbox.allow_weaker=true`),
and then says so in the run's log, once, naming each layer it runs without.
"""

from __future__ import annotations

import os

from boundlab.sandbox import seccomp
from boundlab.sandbox.cgroups import WorkerCgroup
from boundlab.sandbox.jobs import SandboxConfig

CGROUP_CONTROLLERS = ("memory", "pids")


def seccomp_problem(cfg: SandboxConfig) -> str | None:
    """Why the seccomp filter cannot be built here, or None (also when `cfg.seccomp` is off: that
    is the caller's explicit choice, not a layer that failed)."""
    if not cfg.seccomp:
        return None
    try:
        seccomp.deny_list_bpf()
    except seccomp.SeccompUnavailable as e:
        return str(e)
    return None


def cgroups_needed(strict: bool) -> bool:
    return strict and os.geteuid() == 0


def cgroups_problem(strict: bool) -> str | None:
    """Why a worker cannot get its memory and pids cgroups, or None (also where none are needed).
    Creates one pair of cgroups and removes it: the same call each worker makes."""
    if not cgroups_needed(strict):
        return None
    try:
        cg = WorkerCgroup.create(memory_bytes=256 << 20, pids_max=16)
    except OSError as e:
        return f"cannot create the workers' cgroups ({e})"
    kinds = cg.kinds if cg is not None else []
    if cg is not None:
        cg.remove()
    lacking = [c for c in CGROUP_CONTROLLERS if not any(k.startswith(c + "(") for k in kinds)]
    if lacking:
        return (f"no writable {' or '.join(lacking)} cgroup controller for the workers (running as root; "
                f"cgroup v1 or a delegated v2 subtree is needed)")
    return None


def missing_layers(cfg: SandboxConfig, strict: bool) -> dict[str, str]:
    """{layer: why it cannot be set up} for the layers besides bubblewrap (see the docstring)."""
    out: dict[str, str] = {}
    why = seccomp_problem(cfg)
    if why:
        out["seccomp"] = why
    why = cgroups_problem(strict)
    if why:
        out["cgroups"] = why
    return out


def refusal(missing: dict[str, str]) -> str:
    """The one line the pool refuses with."""
    parts = "; ".join(f"the {layer} layer cannot be set up: {why}" for layer, why in missing.items())
    return (f"refusing to run model-written code: {parts}. Fix it, or set sandbox.allow_weaker=true "
            f"to run without {' and '.join(missing)} (logged in the run)")
