"""Seed-level intervals from a report's shipped per-problem counts (issue 40): each arm's Δpass@k
against the base, hierarchical over seeds then problems, overall and per toy2 tier, each cell
labelled gain / loss / unresolved / no effect resolved (one problem = 1/N of the tier).

    python scripts/pilot_seed_intervals.py [docs/toy2_paper/problems.csv] [--k 1 256] [--iters 10000]
        [--arm grpo=0_grpo_s0,1_grpo_s1,2_grpo_s2 ...] [--json FILE]

Without --arm, arms are grouped from the column names as the report groups run dirs (`0_grpo_s0`,
`1_grpo_s1`, `2_grpo_s2` -> grpo). --iters 0: the exact bootstrap distribution (tiny tables only).
Tiers come from toy2's test split (`--no-tiers` for all problems only).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import boundlab.builtins  # noqa: F401 - registers the toy2 task (its tiers)
from boundlab.cli import friendly_errors
from boundlab.errors import UserError
from boundlab.report import pilot_intervals as PI


@friendly_errors
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("csv", nargs="?", type=Path, default=Path("docs/toy2_paper/problems.csv"))
    ap.add_argument("--k", type=int, nargs="+", default=None, help="k values (default: 1 and the smallest n)")
    ap.add_argument("--iters", type=int, default=10_000)
    ap.add_argument("--ci", type=float, default=0.95)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arm", action="append", default=None, help="name=model,model,... (repeatable)")
    ap.add_argument("--no-tiers", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if args.iters < 0:
        raise UserError(f"--iters must be >= 0 (0 = exact), got {args.iters}")
    ids, base, models = PI.read_problems_csv(args.csv)
    groups = None
    if args.arm:
        groups = {}
        for spec in args.arm:
            name, _, cols = spec.partition("=")
            if not name or not cols:
                raise UserError(f"--arm takes name=model,model,...; got {spec!r}")
            groups[name] = cols.split(",")
    arms = PI.group_arms(list(models), groups)
    nmin = int(min([base[0].min(), *(models[m][0].min() for ms in arms.values() for m in ms)]))
    ks = args.k or [1, nmin]
    tiers = None if args.no_tiers else PI.toy2_tiers(ids)
    cells = PI.seed_cells(ids, base, models, arms, tiers, ks, iters=args.iters or None, ci=args.ci,
                          seed=args.seed)
    how = "exact" if not args.iters else f"{args.iters:,} resamples"
    print(f"{args.csv}: {len(ids)} problems, {len(arms)} arm(s), {args.ci:.0%} hierarchical intervals ({how})")
    head = f"{'arm':<22}{'seeds':>5}  {'tier':<5}{'N':>4}"
    for k in ks:
        head += f"  {'Δpass@' + str(k) + ' [lo, hi]':<27}{'label':<19}"
    print(head)
    out = []
    for c in cells:
        h = c.result
        line = f"{c.arm:<22}{h.seeds:>5}  {c.tier:<5}{c.problems:>4}"
        for j, k in enumerate(ks):
            line += f"  {h.delta[j]:+.3f} [{h.lo[j]:+.3f}, {h.hi[j]:+.3f}]     {c.labels[j]:<19}"
        print(line + ("  single seed" if h.single_seed else ""))
        out.append({"arm": c.arm, "models": list(c.seeds), "tier": c.tier, "problems": c.problems,
                    "single_seed": h.single_seed, "resamples": h.iters,
                    **{f"pass@{k}": {"delta": float(h.delta[j]), "lo": float(h.lo[j]), "hi": float(h.hi[j]),
                                     "label": c.labels[j]} for j, k in enumerate(ks)}})
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
