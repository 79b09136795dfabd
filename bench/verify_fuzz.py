"""The parent's closed-form rules (`boundlab/verify/closed_form.py`) against math-verify, at scale.

    python bench/verify_fuzz.py [--golds 3000] [--seed 1] [--e2e-answers 20] [--skip-e2e]

Two checks, one JSON object:
- `differential`: random closed-form expressions (and near misses the grammar must refuse) with
  the answers a model might give against each: our value against math-verify's parse of every
  accepted expression, math-verify's verdict for an identical answer, and every pair the parent
  decides (`fast_verdict`) against a plain math-verify call (`boundlab.verify.fuzz.differential`).
- `end_to_end`: MATH500's 500 golds and the trap golds (`fuzz.TRAP_GOLDS`: symbols, tuples, sets,
  relations, units, near misses) against their variants and random expressions, boxed, through
  `MathVerifier.score_many` (profiles, pool and all) against one plain math-verify call per pair.
The expected result is no mismatch anywhere.
"""

from __future__ import annotations

import argparse
import json

import boundlab.builtins  # noqa: F401 - the task registry
from boundlab.tasks import TASKS
from boundlab.verify.fuzz import TRAP_GOLDS, differential, end_to_end


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--golds", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--e2e-answers", type=int, default=20)
    ap.add_argument("--skip-e2e", action="store_true")
    a = ap.parse_args()
    out = {"benchmark": "verify_fuzz", "seed": a.seed}
    d = differential(a.golds, a.seed, progress=True)
    out["differential"] = {**{k: v for k, v in d.items() if not isinstance(v, list)},
                           **{f"{k}_n": len(v) for k, v in d.items() if isinstance(v, list)},
                           "first_mismatches": (d["value_mismatch"] + d["self_wrong"]
                                                + d["verdict_mismatch"])[:20]}
    if not a.skip_e2e:
        golds = [p.answer for p in TASKS.get("math500")(None).problems] + TRAP_GOLDS
        out["end_to_end"] = end_to_end(golds, a.e2e_answers, a.seed)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
