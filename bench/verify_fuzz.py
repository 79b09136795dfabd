"""The parent's closed-form rules (`boundlab/verify/closed_form.py`) against math-verify, at scale.

    python bench/verify_fuzz.py [--golds 3000] [--poly-golds 1500] [--seed 1] [--e2e-answers 20]
                                [--skip-e2e]

Four checks, one JSON object:
- `differential`: random closed-form expressions (and near misses the grammar must refuse) with
  the answers a model might give against each: our value against math-verify's parse of every
  accepted expression, math-verify's verdict for an identical answer, and every pair the parent
  decides (`fast_verdict`) against a plain math-verify call (`bench/verify_fuzz_lib.py: differential`).
- `differential_polynomials`: the same for polynomials, lists and equations (`6 - 5i`, `p - q`,
  `1, -2`, `x = 5`) and their near misses (`bench/verify_fuzz_lib.py: differential_polynomials`).
- `same_parse`: MATH500's golds and the trap golds, each rewritten as a model might (`\\dfrac`,
  `\\left(`, `\\!`, units): math-verify returns `parse_text` as its string, and strings with the
  same `parse_text` parse alike (`bench/verify_fuzz_lib.py: same_parse_check`).
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
from verify_fuzz_lib import (TRAP_GOLDS, differential, differential_polynomials,
                                  end_to_end, same_parse_check)


def summary(d: dict, mismatches: tuple[str, ...]) -> dict:
    """A check's counts and scalars, each list as its length, and the first 20 mismatches."""
    return {**{k: v for k, v in d.items() if not isinstance(v, list)},
            **{f"{k}_n": len(v) for k, v in d.items() if isinstance(v, list)},
            "first_mismatches": [m for k in mismatches for m in d[k]][:20]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--golds", type=int, default=3000)
    ap.add_argument("--poly-golds", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--e2e-answers", type=int, default=20)
    ap.add_argument("--skip-e2e", action="store_true")
    a = ap.parse_args()
    out = {"benchmark": "verify_fuzz", "seed": a.seed}
    for name, check, n in (("differential", differential, a.golds),
                           ("differential_polynomials", differential_polynomials,
                            a.poly_golds)):
        out[name] = summary(check(n, a.seed, progress=True),
                            ("value_mismatch", "self_wrong", "verdict_mismatch"))
    golds = [p.answer for p in TASKS.get("math500")(None).problems] + TRAP_GOLDS
    out["same_parse"] = summary(same_parse_check(golds), ("text_mismatch", "parse_mismatch"))
    if not a.skip_e2e:
        out["end_to_end"] = end_to_end(golds, a.e2e_answers, a.seed)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
