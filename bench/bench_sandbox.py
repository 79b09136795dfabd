"""Sandbox throughput: trivial programs per second through the pool, isolation on.

Three loads, each on already-started workers (start-up is timed separately):
  function  a one-line function and one assert (the HumanEval path: load, RPC call, judge)
  stdio     a one-line stdin/stdout program, one case (the competitive path)
  humaneval the 164 canonical solutions with their real tests

    python bench/bench_sandbox.py [--n 1000] [--workers 2] [--timeout 3]

Prints one JSON object. Programs are all distinct, so nothing is de-duplicated away.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from boundlab.sandbox import FunctionJob, SandboxPool, StdioJob
from boundlab.tasks.code import humaneval_problems


def timed(pool: SandboxPool, jobs: list) -> dict:
    t0 = time.perf_counter()
    results = pool.map(jobs)
    dt = time.perf_counter() - t0
    outcomes: dict[str, int] = {}
    for r in results:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    return {"programs": len(jobs), "seconds": round(dt, 3),
            "programs_per_s": round(len(jobs) / dt, 1), "outcomes": outcomes}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=3.0)
    args = ap.parse_args()

    t0 = time.perf_counter()
    pool = SandboxPool(workers=args.workers, timeout_s=args.timeout)
    n_workers = pool.n_workers
    pool.map([FunctionJob("def f():\n    return 1\n", "assert f() == 1", "f")] * n_workers * 2)
    startup = time.perf_counter() - t0
    try:
        function = timed(pool, [
            FunctionJob(f"def f(x):\n    return x + {i}\n", f"assert f(1) == {i + 1}", "f")
            for i in range(args.n)])
        stdio = timed(pool, [
            StdioJob(f"print(int(input()) + {i})\n", [("1\n", f"{i + 1}\n")])
            for i in range(args.n)])
        probs = humaneval_problems()
        humaneval = timed(pool, [
            FunctionJob(p.question + p.meta["canonical_solution"], p.meta["test"],
                        p.meta["entry_point"]) for p in probs])
        cgroups = pool.cgroups
    finally:
        pool.close()
    print(json.dumps({
        "bench": "sandbox",
        "isolation": pool.isolation,
        "workers": n_workers,
        "cpus": os.cpu_count(),
        "cgroups": cgroups,
        "startup_s": round(startup, 3),
        "function": function,
        "stdio": stdio,
        "humaneval_canonical": humaneval,
        "programs_per_s": function["programs_per_s"],
        "stats": dict(pool.stats),
    }, indent=2))


if __name__ == "__main__":
    main()
