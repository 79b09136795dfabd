"""The entropy recording's cost to sampling (sampler.hf.entropy), on the toy2 base, both engines.

One process, the same batch (`--problems` x `--n` rows, one call), sampled with the recording on
and off in alternating order, `--reps` times each; CPU seconds of this process (time.process_time),
so other jobs on the machine move the numbers less than wall time would. Prints one JSON object:
per engine the minimum and median CPU seconds on and off and the overhead of the minima.
The samples themselves are the same either way (tests/unit/test_entropy.py).

    python bench/bench_entropy_cost.py --problems 16 --n 16 --reps 6
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from types import SimpleNamespace


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=16)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--max-new-tokens", type=int, default=108)
    ap.add_argument("--temperature", type=float, default=1.0)
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import boundlab.builtins  # noqa: F401 - the task registry
    from boundlab.sampling.base import GenSettings
    from boundlab.sampling.hf import HFSampler
    from boundlab.tasks import build_task
    from boundlab.worlds.toyworld2.paths import base_model_dir

    torch.set_num_threads(1)
    d = base_model_dir()
    model, tok = AutoModelForCausalLM.from_pretrained(d).eval(), AutoTokenizer.from_pretrained(d)
    task = build_task(SimpleNamespace(name="toy2", split="test", template=None,
                                      chat=False, system=None, verifier=None, path=None))
    task = task.with_problems(task.problems[: args.problems]) if args.problems else task  # probe.limit's cut
    req = [(task.render(p), args.n) for p in task.problems]
    rows = sum(c for _, c in req)
    s = GenSettings(args.temperature, 1.0, args.max_new_tokens)
    out: dict = {"benchmark": "entropy_cost", "rows": rows, "reps": args.reps,
                 "temperature": args.temperature, "max_new_tokens": args.max_new_tokens}
    for engine in ("auto", "generate"):
        samplers = {on: HFSampler(model, tok, batch_size=rows, engine=engine, entropy=on)
                    for on in (True, False)}
        secs: dict[bool, list[float]] = {True: [], False: []}
        for rep in range(args.reps):
            for on in ((True, False) if rep % 2 == 0 else (False, True)):
                t = time.process_time()
                samplers[on].generate(req, s, seed=rep)
                secs[on].append(time.process_time() - t)
        lo_on, lo_off = min(secs[True]), min(secs[False])
        out["compact" if engine == "auto" else "generate"] = {
            "cpu_s_min_on": round(lo_on, 3), "cpu_s_min_off": round(lo_off, 3),
            "cpu_s_median_on": round(statistics.median(secs[True]), 3),
            "cpu_s_median_off": round(statistics.median(secs[False]), 3),
            "overhead_of_minima": round(lo_on / lo_off - 1, 4)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
