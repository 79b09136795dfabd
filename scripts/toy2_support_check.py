"""Are the problems a trained model solves and the base's probe missed inside the base's support at
larger k? Samples the shipped toy2 base on the named test problems at n samples each (default
2048; one torch thread) and prints strict and answer-only counts per problem as JSON.

    python scripts/toy2_support_check.py 0024,0032,0036 [--n 2048] [--seed 7] [--out FILE]

Problem ids are `tw2-test-<id>`, <id> being the problem's index in toy2's test split (the default
probe slice's ids among them). Problem <id> is sampled with seed `--seed` + <id>, so its count does
not depend on which other ids are asked for. The JSON records the base's weights' sha256.
"""
import argparse
import json
import time
from pathlib import Path

import torch

from boundlab.worlds.toyworld2 import audit as A
from boundlab.worlds.toyworld2.paths import base_model_dir
from boundlab.worlds.toyworld2.task import toy2_problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("ids", help="comma-separated test ids, e.g. 0024,0032")
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ids = {f"tw2-test-{i}" for i in args.ids.split(",")}
    problems = [(i, p) for i, p in enumerate(toy2_problems("test")) if p.problem_id in ids]
    missing = ids - {p.problem_id for _, p in problems}
    if missing:
        raise SystemExit(f"not in the toy2 test split: {', '.join(sorted(missing))}")
    model, tok = A._load(base_model_dir())
    t0, out = time.time(), {}
    for i, p in problems:
        vs = A._verdicts(model, tok, [p], args.n, args.seed + i)[0]
        out[p.problem_id] = {"tier": p.meta["tier"], "n": args.n, "strict": sum(v.strict for v in vs),
                             "answer": sum(v.correct for v in vs)}
        print(p.problem_id, out[p.problem_id], flush=True)
    res = {"base": "toyworld2's shipped base", "base_sha256": A.weights_sha256(base_model_dir()),
           "seed": args.seed, "seconds": round(time.time() - t0, 1), "problems": out}
    print(json.dumps(res))
    if args.out:
        args.out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
