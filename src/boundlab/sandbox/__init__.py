"""Running model-written code: pre-started bubblewrap workers, one forked process per program.

    from boundlab.sandbox import SandboxPool, FunctionJob
    with SandboxPool(timeout_s=3) as pool:
        r = pool.run(FunctionJob(program, test_code, entry_point="f"))
        r.outcome  # passed | failed | timeout | memory | runtime_error | sandbox_error

The parent's side: `jobs` (settings, jobs, results), `launch` (bubblewrap, the root launcher,
cgroups, the shipped worker script), `worker_process` (one worker as the parent sees it), `pool`
(slots, retries, the stdin/stdout verdicts), `compare`, `seccomp`, `cgroups`. Inside the sandbox:
the `_worker` package (standard library only). How it isolates, and why a pass cannot be faked:
`pool`'s and `_worker`'s docstrings.
"""

from boundlab.sandbox.compare import outputs_match
from boundlab.sandbox.jobs import (
    OUTCOMES,
    FunctionJob,
    RunResult,
    SandboxConfig,
    SandboxUnavailable,
    StdioJob,
)
from boundlab.sandbox.launch import find_bwrap, isolation_problem
from boundlab.sandbox.pool import SandboxPool

__all__ = [
    "OUTCOMES",
    "FunctionJob",
    "RunResult",
    "SandboxConfig",
    "SandboxPool",
    "SandboxUnavailable",
    "StdioJob",
    "find_bwrap",
    "isolation_problem",
    "outputs_match",
]
