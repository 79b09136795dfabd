"""Measure a toy model: sample every test problem n times and report what the world promises.

    python -m boundlab.worlds.toyworld.measure                       # the shipped base and teacher
    python -m boundlab.worlds.toyworld.measure --model path/to/dir --n 256 --out result.json

Sampling is T=1.0, top_p=1, no top-k, batched across problems with left padding, one torch thread by
default: by the compact decoder (`boundlab.sampling.compact`) where it applies, else `generate`. Reported per model: pass@1 (overall/easy/hard, plain
and strict), the share of each strategy among hard and easy samples, the rate of the correct
precedence-aware trace on hard problems, pass@k for k = 1, 2, 4, ..., n with the unbiased estimator
1 - C(n-c, k)/C(n, k), and how many problems have c > 0.

This is a self-contained check of the toy world, not the probe (`boundlab.probe`), which stores
per-problem results and draws the curves.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace

import torch

from boundlab.worlds.toyworld.paths import base_model_dir, teacher_model_dir
from boundlab.worlds.toyworld.world import STRATEGIES
from boundlab.worlds.common.measure import pass_at_k, sample

__all__ = ["pass_at_k", "sample", "summarize"]


def _ks(n: int) -> list[int]:
    ks, k = [], 1
    while k < n:
        ks.append(k)
        k *= 2
    return ks + [n]


def summarize(problems, verdicts: list[list], n: int) -> dict:
    from boundlab.worlds.toyworld.verifier import strategy_rates

    groups = {"overall": lambda p: True, "easy": lambda p: not p.meta["hard"],
              "hard": lambda p: p.meta["hard"]}
    res: dict = {"n": n, "problems": len(problems)}
    for g, keep in groups.items():
        idx = [i for i, p in enumerate(problems) if keep(p)]
        cs = [sum(v.correct for v in verdicts[i]) for i in idx]
        ss = [sum(bool(v.strict) for v in verdicts[i]) for i in idx]
        flat = [v for i in idx for v in verdicts[i]]
        rates = strategy_rates(flat)
        orders = [v.info.get("order") for v in flat]
        res[g] = {
            "problems": len(idx),
            "pass@1": sum(cs) / (n * len(idx)),
            "strict_pass@1": sum(ss) / (n * len(idx)),
            "strategy": {s: round(rates[s], 4) for s in STRATEGIES},
            "precedence_order": round(orders.count("precedence") / len(orders), 4),
            "solved(c>0)": sum(c > 0 for c in cs),
            "strict_solved(c>0)": sum(s > 0 for s in ss),
            "pass@k": {k: round(sum(pass_at_k(n, c, k) for c in cs) / len(idx), 4)
                       for k in _ks(n)},
            "strict_pass@k": {k: round(sum(pass_at_k(n, s, k) for s in ss) / len(idx), 4)
                              for k in _ks(n)},
        }
        res[g]["pass@1"] = round(res[g]["pass@1"], 4)
        res[g]["strict_pass@1"] = round(res[g]["strict_pass@1"], 4)
    by_ops: dict[str, list[int]] = {}
    for p, vs in zip(problems, verdicts):
        by_ops.setdefault(p.meta["ops"], []).append(sum(v.correct for v in vs))
    res["pass@1_by_ops"] = {o: round(sum(cs) / (n * len(cs)), 4) for o, cs in sorted(by_ops.items())}
    return res


def measure(model_dir: Path, n: int = 64, split: str = "test", limit: int | None = None,
            seed: int = 0, rows_per_batch: int = 512, examples: int = 0) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import boundlab.worlds.toyworld.task  # noqa: F401 - registers toy_arith (run as a script, no builtins)
    import boundlab.worlds.toyworld.verifier  # noqa: F401 - registers the toy verifier
    from boundlab.tasks import build_task
    from boundlab.probe.context import open_verifier

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    task = build_task(SimpleNamespace(name="toy_arith", split=split))
    if limit:
        task = task.with_problems(task.problems[:limit])
    prompts = [task.render(p) for p in task.problems]
    t0 = time.time()
    completions = sample(model, tokenizer, prompts, n, rows_per_batch=rows_per_batch, seed=seed)
    secs = time.time() - t0
    verifier = open_verifier(task.verifier)
    verdicts = [verifier.score(p, cs) for p, cs in zip(task.problems, completions)]
    res = {"model": _shown(model_dir), "split": split, "temperature": 1.0, "top_p": 1.0,
           "seed": seed, "sampling_seconds": round(secs, 1)}
    res.update(summarize(task.problems, verdicts, n))
    if examples:
        hard = [(p, cs) for p, cs in zip(task.problems, completions) if p.meta["hard"]]
        res["examples_hard"] = {p.question: cs[:examples] for p, cs in hard[:3]}
    return res


def _shown(path: Path) -> str:
    """The shipped models by their place in the package, not this machine's absolute path."""
    path = Path(path).resolve()
    root = base_model_dir().parent.parent
    return f"boundlab/worlds/toyworld/{path.relative_to(root)}" if path.is_relative_to(root) else str(path)


def _print(name: str, r: dict) -> None:
    print(f"== {name}: {r['model']} (n={r['n']}, {r['problems']} problems, "
          f"sampling {r['sampling_seconds']}s)")
    for g in ("overall", "easy", "hard"):
        x = r[g]
        print(f"  {g:7s} ({x['problems']:3d}) pass@1 {x['pass@1']:.3f} strict {x['strict_pass@1']:.3f}"
              f"  pass@{r['n']} {x['pass@k'][r['n']]:.3f} strict {x['strict_pass@k'][r['n']]:.3f}"
              f"  c>0: {x['solved(c>0)']} (strict {x['strict_solved(c>0)']})")
    print("  hard strategies:", r["hard"]["strategy"], "precedence order:",
          r["hard"]["precedence_order"])
    print("  easy strategies:", r["easy"]["strategy"])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", type=Path, action="append",
                    help="model folder (repeatable; default: the shipped base and teacher)")
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rows-per-batch", type=int, default=512)
    ap.add_argument("--examples", type=int, default=0, help="keep a few hard samples in the JSON")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    models = args.model or [base_model_dir(), teacher_model_dir()]
    results = {}
    for m in models:
        r = measure(m, n=args.n, split=args.split, limit=args.limit, seed=args.seed,
                    rows_per_batch=args.rows_per_batch, examples=args.examples)
        results[Path(m).name] = r
        _print(Path(m).name, r)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
