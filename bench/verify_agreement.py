"""Official-solution agreement of the math verifier on MATH500 and GSM8K (boundlab.verify.agreement).

    python bench/verify_agreement.py [--k 5] [--seed 0] [--workers 2] [--tasks math500 gsm8k minerva olympiadbench amc23]

`--k 0` pairs every problem with every other one (all pairs; slow: MATH500 alone is 249,500).
OlympiadBench and AMC23 (in the default list) are checked with their official answer boxed
(measured: 675/675 and 40/40 right; 2025/2025 and 120/120 other golds wrong at --k 3).
`--tasks minerva` works too (its gold is its solution's last box; measured: 272/272 solutions
correct, 1360/1360 sampled cross golds wrong, 82 s).
Prints one JSON object: per task the counts, every solution judged wrong and every cross pair
judged right, and the wall time.
"""

from __future__ import annotations

import argparse
import json
import time

import boundlab.builtins  # noqa: F401 - the task and verifier registries
from boundlab.verify import build_verifier
from boundlab.verify.agreement import TASKS_WITH_GOLD_ONLY, TASKS_WITH_SOLUTIONS, run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS_WITH_SOLUTIONS + TASKS_WITH_GOLD_ONLY))
    a = ap.parse_args()
    v = build_verifier("math", workers=a.workers)
    out = {}
    try:
        for name in a.tasks:
            t0 = time.perf_counter()
            out[name] = run(v, name, a.k or None, a.seed)
            out[name]["wall_s"] = round(time.perf_counter() - t0, 1)
        out["math_verify_calls"] = v.calls
    finally:
        v.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
