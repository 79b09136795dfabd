"""Verification benchmark: our math verifier vs one plain math-verify call per answer.

Answers come with realistic duplication: at n samples per problem, a model repeats a handful of
answers (the gold in a few equivalent forms, common wrong answers, and a tail of one-offs). Both
sides see the same extracted answers; verdicts must be identical.

The completions around the answers differ (`--texts varied`, the default): each one's working holds
a number of its own, as real samples are almost never byte-identical, so neither side gains from
caching whole texts (math-verify 0.9 caches its last 20 parses; we could cache extractions). The
answer distribution is the same either way. `--texts identical` gives the old texts, the same for
every sample of an answer.

    python bench/bench_verify.py [--scenario trained|mixed|weak|all] [--problems 40] [--n 256]
                                 [--warmup 40] [--floor]

`--problems 500` (with `--warmup 0`) is the whole of MATH500 at n = 256, 128,000 answers per mix:
what one full probe verifies, with what fresh workers pay the first time they meet an answer shape
spread over all of it.

Both sides start warm the same way, outside the timing: math-verify imported and `WARMUP_SHAPES`
parsed (`_worker_init`), here for plain and in our workers' fork server (`math_preload`) for ours;
`ours_worker_startup_seconds` is the wall time until our workers are ready (in the first mix, it
includes starting the fork server, once per process).

Both sides are timed in wall clock and in CPU seconds (ours: the parent's and the workers'; on a
loaded machine the CPU ratio moves less). `--floor` also times math-verify alone on the calls ours
makes (distinct pairs it cannot decide itself, and one profile per gold it profiles), in one warm
process: `speedup_cpu_bound` = plain CPU / that, the most ours can gain on one core while it makes
these calls.

Prints one JSON object (with `--scenario all`, one per answer mix under "scenarios").
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import time

from math_verify.parser import parse_latex_cached

import boundlab.builtins  # noqa: F401 - the task and verifier registries
from boundlab.tasks import build_task
from boundlab.tasks.base import Problem
from boundlab.verify.extract import extract_math_answer
from boundlab.verify.math import MathVerifier
from boundlab.verify.math_worker import _worker_init, plain_math_verify
from boundlab.verify.pool import _cpu_seconds


def candidate_answers(gold: str, rng: random.Random) -> list[str]:
    forms = [gold, gold.replace("\\frac", "\\dfrac"), f"{gold} "]
    try:
        v = int(gold)
        forms += [str(v) + ".0", f"{v}.00"]
        wrong = [str(v + d) for d in (1, -1, 2, 10, -3)] + [str(v * 2), str(-v)]
    except ValueError:
        wrong = [f"{gold}+1", f"2{gold}", f"-{gold}", "0", "1", "\\frac{1}{2}", "\\sqrt{2}"]
    tail = [str(rng.randint(0, 999)) for _ in range(30)]
    return forms + wrong + tail


# Zipf exponents of the answer distribution: "trained" is a model that has mostly converged on
# an answer (most problems repeat a few answers), "weak" one that scatters.
SCENARIOS = {"trained": 2.5, "mixed": 1.6, "weak": 1.1}


# A typical unboxed completion: some working, then the answer stated in prose (read by
# math-verify's extraction over the tail, which the boxed format never reaches).
_WORKING = ("We expand the expression and collect terms; substituting $x = 3$ gives $2x + 1 = 7$, "
            "and checking the boundary cases leaves one candidate. ") * 8


def make_items(problems: list[Problem], n: int, zipf: float, seed: int = 0, fmt: str = "boxed",
               texts: str = "varied"):
    rng = random.Random(seed)
    # The varying part has its own generator, so the answers drawn are the same for both `texts`.
    noise = random.Random(seed + 1)

    def mark() -> str:
        return "" if texts == "identical" else f" {noise.randint(0, 10**6)}"

    items = []
    for p in problems:
        cands = candidate_answers(p.answer, rng)
        # Zipf-like weights: the first few answers carry most of the mass.
        weights = [1.0 / (i + 1) ** zipf for i in range(len(cands))]
        if fmt == "boxed":
            comps = [f"Step by step{mark()}... so the result is \\boxed{{{a}}}."
                     for a in rng.choices(cands, weights=weights, k=n)]
        else:
            comps = [("" if texts == "identical" else f"Case{mark()}. ")
                     + f"{_WORKING}\nTherefore, the answer is ${a}$."
                     for a in rng.choices(cands, weights=weights, k=n)]
        items.append((p, comps))
    return items


def math_verify_floor(calls: list[tuple]) -> float:
    """CPU seconds of the math-verify calls our verifier made (pairs and gold profiles, as its
    workers got them; retries left out), run here, one after another, in this process (already
    warm from the plain side: the cheapest these checks get). However its pool spreads them,
    our verifier spends at least this much CPU on math-verify."""
    from boundlab.verify.math_worker import _PARSED, _worker_check

    _PARSED.clear()
    parse_latex_cached.cache_clear()
    c = time.process_time()
    for arg in calls:
        _worker_check(arg)
    return time.process_time() - c


def run(scenario: str, args: argparse.Namespace, problems: list[Problem]) -> dict:
    items = make_items(problems[:args.problems], args.n, SCENARIOS[scenario], fmt=args.format,
                       texts=args.texts)
    # Other problems, the same mix: both sides check them before the timing (see --warmup).
    warm = make_items(problems[args.problems:], args.n, SCENARIOS[scenario], seed=1,
                      fmt=args.format, texts=args.texts)
    total = sum(len(c) for _, c in items)
    distinct = sum(len({extract_math_answer(x) for x in c}) for _, c in items)

    # Plain: extract, then one math-verify call (parse gold, parse answer, verify) per answer.
    # math-verify's own parse cache starts empty for each mix.
    parse_latex_cached.cache_clear()
    # Import and warm up outside the timing, exactly as each of our workers has when it starts
    # (`_worker_init`: math-verify imported, `WARMUP_SHAPES` parsed, no parse kept).
    _worker_init()
    parse_latex_cached.cache_clear()
    for p, comps in warm:
        for c in comps:
            plain_math_verify(p.answer, extract_math_answer(c) or "")
    # Each side's timing starts from an empty collector (as `timeit` does it): a full collection
    # walks the whole process (here, the plain side's sympy objects), and which side's window it
    # happens to land in would otherwise be chance (0.07 s, as much as our whole parent's time).
    gc.collect()
    c = time.process_time()
    t = time.perf_counter()
    plain = [[plain_math_verify(p.answer, extract_math_answer(c) or "") for c in comps]
             for p, comps in items]
    plain_s = time.perf_counter() - t
    plain_cpu = time.process_time() - c

    v = MathVerifier(workers=args.workers)
    t = time.perf_counter()
    v.pool.start(wait_ready=True)
    v.pool.map([("1", "1")] * args.workers)  # workers up and warm
    startup_s = time.perf_counter() - t
    v.score_many(warm)
    v._cache.clear()  # no verdict carries over from the warm-up
    v.calls = 0
    pids = [w.proc.pid for w in v.pool._workers]
    # What ours sends to math-verify (for --floor): the calls of each map, retries left out.
    sent: list[tuple] = []
    pool_map = v.pool.map

    def recording_map(args, *a, **kw):
        args = list(args)
        sent.extend(x for x in args if len(x) == 2)
        return pool_map(args, *a, **kw)

    v.pool.map = recording_map
    workers_cpu0 = sum(_cpu_seconds(pid) or 0.0 for pid in pids)
    gc.collect()
    c = time.process_time()
    t = time.perf_counter()
    ours_v = v.score_many(items)
    ours_s = time.perf_counter() - t
    parent_cpu = time.process_time() - c
    # Workers replaced during the run (a kill) would drop out of this sum: the bench checks none was.
    replaced = [w.proc.pid for w in v.pool._workers] != pids
    ours_cpu = parent_cpu + sum(_cpu_seconds(pid) or 0.0 for pid in pids) - workers_cpu0
    v.close()
    ours = [[x.correct for x in row] for row in ours_v]

    mismatches = sum(a != b for ra, rb in zip(plain, ours) for a, b in zip(ra, rb))
    floor = (len(sent), math_verify_floor(sent)) if args.floor else None
    return {
        "scenario": scenario, "zipf_exponent": SCENARIOS[scenario],
        "problems": len(items), "warmup_problems": len(warm), "samples_per_problem": args.n, "answers": total,
        "distinct_answers_per_problem": round(distinct / len(items), 2),
        "math_verify_calls_ours": v.calls,
        "plain_seconds": round(plain_s, 3), "plain_answers_per_s": round(total / plain_s, 1),
        "ours_seconds": round(ours_s, 3), "ours_answers_per_s": round(total / ours_s, 1),
        "ours_worker_startup_seconds": round(startup_s, 3),
        "ours_worker_start_method": v.pool._ctx.get_start_method(),
        "speedup": round(plain_s / ours_s, 1),
        # CPU seconds (ours: the parent's and the workers'), which a loaded machine moves less
        # than wall time; /proc counts whole clock ticks (10 ms).
        "plain_cpu_seconds": round(plain_cpu, 3),
        "ours_cpu_seconds": round(ours_cpu, 3), "ours_parent_cpu_seconds": round(parent_cpu, 3),
        "speedup_cpu": round(plain_cpu / ours_cpu, 1), "workers_replaced": replaced,
        "speedup_including_startup": round(plain_s / (ours_s + startup_s), 1),
        "verdicts_identical": mismatches == 0, "mismatches": mismatches,
        **({} if floor is None else {
            "floor_calls": floor[0], "floor_cpu_seconds": round(floor[1], 3),
            "speedup_cpu_bound": round(plain_cpu / floor[1], 1) if floor[1] else None}),
        "correct_fraction": round(sum(map(sum, ours)) / total, 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=40)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scenario", choices=sorted(SCENARIOS) + ["all"], default="mixed")
    ap.add_argument("--format", choices=["boxed", "prose"], default="boxed",
                    help="answers in a box, or stated in prose after some working")
    ap.add_argument("--texts", choices=["varied", "identical"], default="varied",
                    help="a number of its own in each completion's working, or the same text for "
                         "every sample of an answer")
    ap.add_argument("--warmup", type=int, default=0,
                    help="this many other problems (same mix) checked by both sides before the "
                         "timing: a probe's verifier lives on, so its workers are warm; 0 times "
                         "fresh ones (forked warm, but meeting every gold and answer shape for the "
                         "first time)")
    ap.add_argument("--floor", action="store_true",
                    help="also time math-verify alone on the distinct pairs ours checks (see "
                         "math_verify_floor): what bounds the speed-up")
    args = ap.parse_args()

    cfg = type("C", (), {"name": "math500", "template": None, "chat": None, "system": None,
                         "verifier": None, "limit": args.problems + args.warmup})()
    problems = build_task(cfg).problems
    head = {"benchmark": "verify", "format": args.format, "texts": args.texts}
    if args.scenario != "all":
        print(json.dumps({**head, **run(args.scenario, args, problems)}, indent=2))
        return
    runs = [run(s, args, problems) for s in SCENARIOS]
    print(json.dumps({**head, "scenarios": runs,
                      "min_speedup": min(r["speedup"] for r in runs),
                      "min_speedup_cpu": min(r["speedup_cpu"] for r in runs),
                      "verdicts_identical": all(r["verdicts_identical"] for r in runs)}, indent=2))


if __name__ == "__main__":
    main()
