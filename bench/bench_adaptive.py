"""Adaptive probing (issue 21): samples saved, and the bias of every reported pass@k, measured.

Simulated settings: per-problem rates drawn from a Beta fitted to the paper's Table 2 (Qwen2.5-7B on
MATH500, Yue et al. 2025: base pass@1 34.5% / pass@256 96.2%, GRPO 74.4% / 97.2%) for P = 500
problems, drawn once, so the truth is exact: mean over problems of 1 - (1 - p)^k. Each replicate
samples every problem through the adaptive design (the rule and pass@k code of
boundlab.probe.adaptive and boundlab.probe.estimator) and through the fixed-n design (n = cap), from
the same draws. `max_abs_bias` is the largest |mean over replicates - truth| over k = 1..K,
`bias_se` the replicates' standard error at that k, `ok_every_k` whether |bias| <= epsilon +
3 x se at every k.

The negative control: the naive early stop (sample one at a time, stop a problem at its m-th success,
report pass@1 = c / n on whatever was sampled), whose pass@1 is biased upwards.

`--toy-store STORE` adds the toy world's real probe: a fixed-n probe and an adaptive probe of the
toy model on toy_arith's test split in that store (`python probe.py model=toy task=toy_arith
probe=toy` and the same with `probe.adaptive=true probe.n0=16`): samples of each, the largest
|delta pass@k| between them (different draws), and the adaptive rule replayed on the fixed probe's
own samples (the same draws: the design's own error, no sampling noise).

    python bench/bench_adaptive.py --quick          # simulated settings, under 3 minutes
    python bench/bench_adaptive.py --quick --write  # and docs/bench/adaptive.json (harness shape)

Beside the savings against the full fixed design (n = cap), the fair comparator: a fixed design with
the adaptive run's average budget per problem (`equal_budget_m`), and the RMSE of pass@k at every k
for both (`rmse_at`; the fixed design of m samples cannot report pass@k for k > m).
    python bench/bench_adaptive.py --reps 5000 --toy-store /tmp/store.sqlite
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np

from boundlab.probe.adaptive import AdaptivePlan
from boundlab.probe.estimator import pass_at_k_table

PAPER = {"base": (0.345, 0.962), "grpo": (0.744, 0.972)}  # Table 2, MATH500, (pass@1, pass@256)


def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def beta_for(pass1: float, pass256: float) -> tuple[float, float]:
    """Beta(a, b) with mean pass1 and E[1 - (1 - p)^256] = pass256 (bisection on log a: the
    pass@256 of a fixed-mean Beta rises from pass1 as a -> 0 to 1 as a -> inf)."""
    def at256(a: float) -> float:
        b = a * (1 - pass1) / pass1
        return 1 - math.exp(_lbeta(a, b + 256) - _lbeta(a, b))

    lo, hi = math.log(1e-4), math.log(1e4)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at256(math.exp(mid)) < pass256 else (lo, mid)
    a = math.exp((lo + hi) / 2)
    return a, a * (1 - pass1) / pass1


def simulate(rates: np.ndarray, plan: AdaptivePlan, K: int, reps: int, seed: int,
             naive_m: int) -> dict:
    P, n0, cap = len(rates), plan.n0, plan.cap
    looks = plan.looks()
    thr = np.array([plan.min_certified_c(L, P) if L < cap else cap + 1 for L in looks])
    t0 = pass_at_k_table(n0, min(n0, K))        # k <= n0, from the first n0 samples
    tc = pass_at_k_table(cap, K)                # k <= K, from cap samples
    truth = 1 - (1 - rates[:, None]) ** np.arange(1, K + 1)[None, :]
    truth = truth.mean(axis=0)
    rng = np.random.default_rng(seed)
    ad_est = np.empty((reps, K))
    ad_sum, ad_sq = np.zeros(K), np.zeros(K)
    fx_sum, fx_sq = np.zeros(K), np.zeros(K)
    used = np.empty(reps)
    naive1, naive_used = np.empty(reps), np.empty(reps)
    for r in range(reps):
        # Counts at each look: the first n0, then each doubling's new samples.
        c = np.empty((P, len(looks)), dtype=np.int64)
        c[:, 0] = rng.binomial(n0, rates)
        for j in range(1, len(looks)):
            c[:, j] = c[:, j - 1] + rng.binomial(looks[j] - looks[j - 1], rates)
        hit = c >= thr[None, :]
        first = np.where(hit.any(axis=1), hit.argmax(axis=1), len(looks) - 1)
        cert = hit.any(axis=1)
        used[r] = np.asarray(looks)[first].sum()
        est = np.empty(K)
        est[: min(n0, K)] = t0[c[:, 0]].mean(axis=0)
        if K > n0:
            est[n0:] = np.where(cert[:, None], 1.0, tc[c[:, -1], n0:]).mean(axis=0)
        fixed = tc[c[:, -1]].mean(axis=0)
        ad_est[r] = est
        ad_sum += est
        ad_sq += est ** 2
        fx_sum += fixed
        fx_sq += fixed ** 2
        naive1[r], naive_used[r] = _naive(rates, naive_m, cap, rng)
    ad_bias, ad_se = _bias(ad_sum, ad_sq, reps, truth)
    budget = equal_budget(rates, ad_est, truth, float(used.mean()) / P, K, reps, seed + 7)
    fx_bias, fx_se = _bias(fx_sum, fx_sq, reps, truth)
    j = int(np.argmax(np.abs(ad_bias)))
    nb = float(naive1.mean() - truth[0])
    return {"samples_fixed": P * cap, "samples_adaptive": float(used.mean()),
            "ratio": P * cap / float(used.mean()),
            "max_abs_bias": float(abs(ad_bias[j])), "bias_se": float(ad_se[j]), "at_k": j + 1,
            "ok_every_k": bool(np.all(np.abs(ad_bias) <= plan.epsilon + 3 * ad_se)),
            # k > n0: where a certified problem counts 1 (k <= n0 is a fixed design).
            "max_abs_bias_k_gt_n0": float(np.abs(ad_bias[n0:]).max()) if K > n0 else 0.0,
            "pass@1_bias": float(ad_bias[0]), "pass@1_bias_se": float(ad_se[0]),
            "fixed_max_abs_bias": float(np.abs(fx_bias).max()),
            "fixed_bias_se": float(fx_se[int(np.argmax(np.abs(fx_bias)))]),
            "naive_m": naive_m, "naive_samples": float(naive_used.mean()),
            "naive_pass@1_bias": nb, "naive_pass@1_bias_se": float(naive1.std(ddof=1) / math.sqrt(reps)),
            "truth_pass@1": float(truth[0]), f"truth_pass@{K}": float(truth[-1]),
            "ratio_per_rep": (P * cap / used).tolist(), **budget}


def equal_budget(rates: np.ndarray, ad_est: np.ndarray, truth: np.ndarray, per_problem: float, K: int,
                 reps: int, seed: int) -> dict:
    """The fair comparator (issue 36, item 5): a fixed design with the adaptive run's average budget
    per problem, m = round(average samples per problem), from fresh draws. Root-mean-square error
    of pass@k over the replicates at every k, for both designs; a fixed design of m samples cannot
    estimate pass@k for k > m at all (None there)."""
    m = max(1, int(round(per_problem)))
    top = min(m, K)
    tm = pass_at_k_table(m, top)
    rng = np.random.default_rng(seed)
    sq = np.zeros(top)
    for _ in range(reps):
        est = tm[rng.binomial(m, rates)].mean(axis=0)
        sq += (est - truth[:top]) ** 2
    rmse_fixed = np.sqrt(sq / reps)
    rmse_ad = np.sqrt(((ad_est - truth[None, :]) ** 2).mean(axis=0))
    at = [k for k in (1, 4, 16, 64, 256, 1024) if k <= K]
    return {"equal_budget_m": m,
            "rmse_adaptive": [float(x) for x in rmse_ad],
            "rmse_fixed_equal_budget": [float(x) for x in rmse_fixed] + [None] * (K - top),
            "rmse_at": {str(k): {"adaptive": float(rmse_ad[k - 1]),
                                 "fixed_equal_budget": float(rmse_fixed[k - 1]) if k <= top else None}
                        for k in at}}


def _bias(s: np.ndarray, sq: np.ndarray, reps: int, truth: np.ndarray):
    mean = s / reps
    var = np.maximum(sq / reps - mean ** 2, 0) * reps / (reps - 1)
    return mean - truth, np.sqrt(var / reps)


def _naive(rates: np.ndarray, m: int, cap: int, rng: np.random.Generator) -> tuple[float, float]:
    """One replicate of the naive early stop: one sample at a time, stop at the m-th success (or
    the cap); pass@1 = c / n of what was sampled. Returns (mean pass@1, samples)."""
    p = np.clip(rates, 1e-300, 1.0)
    n = m + rng.negative_binomial(m, p)
    stopped = (rates > 0) & (n <= cap)
    c_cap = rng.binomial(cap, rates)
    # Not stopped: fewer than m successes in cap samples (redraw those rows until that holds).
    bad = ~stopped & (c_cap >= m)
    while bad.any():
        c_cap[bad] = rng.binomial(cap, rates[bad])
        bad = ~stopped & (c_cap >= m)
    c = np.where(stopped, m, c_cap)
    n = np.where(stopped, n, cap)
    return float((c / n).mean()), float(n.sum())


def toy_real(store_path: str, n0: int, epsilon: float, delta: float) -> dict:
    """The toy world's fixed-n and adaptive probes from a store (see the module docstring)."""
    from boundlab.probe import adaptive as A
    from boundlab.probe.estimator import pass_at_k_matrix
    from boundlab.probe.store import Store

    store = Store(store_path, writable=False)
    probes = [p for p in store.list_probes() if p["task_name"] == "toy_arith"
              and p["model_name"] == "toy"]
    fixed = [p for p in probes if "adaptive" not in p["settings"]]
    adapt = [p for p in probes if p["settings"].get("adaptive", {}).get("n0") == n0]
    if not fixed or not adapt:
        raise SystemExit(f"{store_path}: need a fixed-n and an adaptive (n0={n0}) probe of toy on "
                         f"toy_arith (see the module docstring)")
    fk, ak = fixed[-1]["key"], adapt[-1]["key"]
    counts = store.counts(fk)
    ids = [pc.problem_id for pc in counts]
    n = min(pc.n for pc in counts)
    plan = A.AdaptivePlan(n0=n0, cap=n, epsilon=epsilon, delta=delta)
    # Strict pass@k, the toy world's headline.
    fixed_mat = pass_at_k_matrix(np.array([pc.n for pc in store.counts(fk, ids, n_max=n)]),
                                 np.array([pc.c_strict for pc in store.counts(fk, ids, n_max=n)]), n)
    ad_mat = A.matrix(store, ak, ids, plan, strict=True)
    replay = A.matrix(store, fk, ids, plan, strict=True)
    d = replay.mean(0) - fixed_mat.mean(0)
    ad_used = sum(s.n for s in A.states(store, ak, ids, plan))
    replay_used = sum(s.n for s in A.states(store, fk, ids, plan))
    return {"dist": "toy_arith test split (real probe, strict pass@k)", "problems": len(ids),
            "n": n, "n0": n0, "epsilon": epsilon, "samples_fixed": len(ids) * n,
            "samples_adaptive": ad_used, "ratio": len(ids) * n / ad_used,
            "max_abs_delta_passk_vs_fixed": float(np.abs(ad_mat.mean(0) - fixed_mat.mean(0)).max()),
            "replay_samples_adaptive": replay_used,
            # k <= n0 reads n0 samples per problem instead of n: unbiased, noisier (sampling noise
            # only); k > n0 is where certification could err (at most epsilon per problem).
            "replay_max_abs_delta_passk_k_le_n0": float(np.abs(d[:n0]).max()),
            "replay_max_abs_delta_passk_k_gt_n0": float(np.abs(d[n0:]).max()),
            "fixed_pass@1": float(fixed_mat[:, 0].mean()), f"fixed_pass@{n}": float(fixed_mat[:, -1].mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2000 replicates (the issue's minimum)")
    ap.add_argument("--reps", type=int, default=5000)
    ap.add_argument("--problems", type=int, default=500)
    ap.add_argument("--n0", type=int, default=64)
    ap.add_argument("--cap", type=int, default=1024)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--epsilon", type=float, default=1e-3)
    ap.add_argument("--delta", type=float, default=0.01)
    ap.add_argument("--naive-m", type=int, default=1, help="the naive early stop's m")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--toy-store", help="a store with the toy world's fixed and adaptive probes")
    ap.add_argument("--toy-n0", type=int, default=16)
    ap.add_argument("--write", action="store_true", help="also write docs/bench/adaptive.json (harness shape)")
    args = ap.parse_args()
    reps = 2000 if args.quick else args.reps
    plan = AdaptivePlan(n0=args.n0, cap=args.cap, epsilon=args.epsilon, delta=args.delta)
    runs = []
    for name, (p1, p256) in PAPER.items():
        t = time.time()
        a, b = beta_for(p1, p256)
        rates = np.random.default_rng(args.seed).beta(a, b, size=args.problems)
        res = simulate(rates, plan, args.k, reps, args.seed + 1, args.naive_m)
        runs.append({"dist": f"{name}: Beta({a:.4f}, {b:.4f}) matched to Table 2 "
                             f"(pass@1 {p1}, pass@256 {p256})", "problems": args.problems,
                     "K": args.k, "n0": args.n0, "cap": args.cap, "epsilon": args.epsilon,
                     "delta": args.delta, "reps": reps, **res, "seconds": round(time.time() - t, 1)})
    if args.toy_store:
        runs.append(toy_real(args.toy_store, args.toy_n0, args.epsilon, args.delta))
    if args.write:
        write_figures(runs, args)
    for r in runs:  # the per-replicate and per-k arrays go to the JSON file, not the console
        r.pop("ratio_per_rep", None)
        if args.write:
            r.pop("rmse_adaptive", None)
            r.pop("rmse_fixed_equal_budget", None)
    print(json.dumps({"bench": "adaptive", "runs": runs}, indent=1))


def write_figures(runs: list, args) -> None:
    """docs/bench/adaptive.json in the harness's shape: `adaptive_ratio_base|grpo` (samples saved
    against the full fixed design, spread over the replicates); each run's RMSE at k of both designs
    (one number each over the replicates, not a spread) sits in its `runs` entry."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from harness import spread, write

    figures = {}
    for r in runs:
        if "ratio_per_rep" not in r:
            continue
        name = r["dist"].split(":")[0]
        figures[f"adaptive_ratio_{name}"] = spread(r["ratio_per_rep"])
    load = os.getloadavg()
    write("adaptive", {"figures": figures, "load": {**spread(load), "unit": "1-minute load average"},
                       "runs": [{k: v for k, v in r.items() if k != "ratio_per_rep"} for r in runs]})


if __name__ == "__main__":
    main()
