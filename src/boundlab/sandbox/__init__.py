"""Running model-written code: pre-started bubblewrap workers, one forked process per program.

    from boundlab.sandbox import SandboxPool, FunctionJob
    with SandboxPool(timeout_s=3) as pool:
        r = pool.run(FunctionJob(program, test_code, entry_point="f"))
        r.outcome  # passed | failed | timeout | memory | runtime_error | sandbox_error

How it isolates, and why a pass cannot be faked: see `pool.py` (the parent side) and
`_worker.py` (inside the sandbox).
"""

from boundlab.sandbox.compare import outputs_match
from boundlab.sandbox.pool import (
    OUTCOMES,
    FunctionJob,
    RunResult,
    SandboxConfig,
    SandboxPool,
    SandboxUnavailable,
    StdioJob,
    find_bwrap,
    isolation_problem,
)

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
