"""The problems an arm loses at k, for the base's symmetric top-up (issue 40).

A large adaptive probe stops a problem early once it certifies pass@k >= 1 - epsilon for every
k > n0 (`boundlab.probe.adaptive`): the base, which solves most problems, holds only n0 or 2 n0
samples on many. A problem an arm *loses* at k = 256 (the base solves it within its first 256
samples, the arm in none of its first 256) is exactly where "does the arm catch up at larger k?" is
asked, and the arm's own probe runs it to the cap (it cannot certify with 0 successes); so the base
must be sampled to the cap there too, or the comparison at 4096 rests on one side's samples. This
module names those problems; the script then probes the base on them at a fixed n (a probe of its
own, `task.problems_from=FILE`):

    python -m boundlab.report.focus --store S --base toy2_base --arms toy2_settled_grpo_s0,... \\
        --k 256 --out OUT/large/focus_ids.txt

Counts are the strict ones (a right answer on the canonical trace) where the verifier checks
traces, as the report's coverage section counts them, over each problem's first k samples. Each
name is resolved as report.py resolves it (`inputs.find_probe`), so the set is computed from the
probes the report then reads. A problem either side has fewer than k samples of is refused (its
probe is not finished): a focus set computed from an unfinished probe would silently miss problems.
The file is written atomically, one id a line, sorted; rewriting it with the same set changes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from boundlab.config import ConfigError
from boundlab.errors import StoreError, UserError
from boundlab.probe.store import ProblemCounts, Store
from boundlab.report.inputs import find_probe
from boundlab.rundir.io import atomic_write_text


def _solved(pc: ProblemCounts) -> bool:
    return (pc.c if pc.c_strict is None else pc.c_strict) > 0


def lost_at(store: Store, base: str, arms: Sequence[str], k: int) -> dict[str, list[str]]:
    """For each arm (model name or key), the problems it loses at k against `base`, sorted.
    Only problems both probes hold are compared (a probe on fewer problems is a smaller slice)."""
    base_counts = {pc.problem_id: pc for pc in store.counts(find_probe(store, base)["key"], n_max=k)}
    short = sorted(pid for pid, pc in base_counts.items() if pc.n < k)
    if short:
        raise StoreError(f"the base {base!r} has fewer than {k} samples on {len(short)} problem(s), e.g. "
                         f"{short[0]}: finish its probe first")
    out: dict[str, list[str]] = {}
    for arm in arms:
        counts = {pc.problem_id: pc for pc in store.counts(find_probe(store, arm)["key"], n_max=k)}
        short = sorted(pid for pid, pc in counts.items() if pc.n < k)
        if short:
            raise StoreError(f"{arm!r} has fewer than {k} samples on {len(short)} problem(s), e.g. {short[0]}: "
                             f"finish its probe first")
        out[arm] = sorted(pid for pid, pc in counts.items()
                          if pid in base_counts and _solved(base_counts[pid]) and not _solved(pc))
    return out


def write_ids(path: Path, ids: Sequence[str]) -> bool:
    """Write `ids` (one a line) to `path` atomically; False when it already holds exactly them."""
    text = "".join(f"{i}\n" for i in ids)
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    return True


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m boundlab.report.focus",
                                 description="The problems any arm loses at k (see the module docstring).")
    ap.add_argument("--store", required=True)
    ap.add_argument("--base", required=True, help="the base probe: model name or key")
    ap.add_argument("--arms", required=True, help="comma-separated model names or keys")
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--out", required=True, help="the ids file (one problem id a line)")
    args = ap.parse_args(argv)
    try:
        if not Path(args.store).is_file():
            raise StoreError(f"store {args.store} does not exist")
        store = Store(args.store, writable=False)
        try:
            lost = lost_at(store, args.base, [a for a in args.arms.split(",") if a], args.k)
        finally:
            store.close()
    except (UserError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    union = sorted({pid for ids in lost.values() for pid in ids})
    changed = write_ids(Path(args.out), union)
    print(json.dumps({"out": args.out, "problems": len(union), "written": changed,
                      "lost_per_arm": {a: len(v) for a, v in lost.items()}}, indent=1))
    return 0


__all__ = ["lost_at", "main", "write_ids"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
