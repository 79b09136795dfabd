"""Imported once by the math verifier's fork server, so that every worker is forked warm.

`MathVerifier` starts its workers from a `forkserver` (where the platform has one): a clean process,
started once per parent process, that imports this module and then forks each worker on request.
Importing it imports math-verify and sympy and parses `WARMUP_SHAPES` (`math_worker._worker_init`), so a
worker starts in milliseconds with that work done, instead of about half a second of imports and a
first parse of each answer shape; a worker replaced after a deadline kill is as quick. The parent
itself (torch threads and all) is never forked.
"""

try:
    from boundlab.verify.math_worker import _worker_init

    _worker_init()
except Exception:  # noqa: BLE001 - the fork server must come up; each worker then warms itself
    pass
