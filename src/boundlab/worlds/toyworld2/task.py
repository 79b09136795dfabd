"""The `toy2` task: the second-edition toy world's stratified test split or its RL-train pool.

Problem ids are stable (`tw2-test-0000`, `tw2-train-0000`); the test split is ordered round-robin
across tiers, so `limit` keeps it close to stratified. `task.toy2.tiers` keeps only the listed tiers and
`task.toy2.per_tier` the first N of each, in split order (the default run probes a slice of the key
tiers). `split=train` ignores those and builds the RL training set from `task.toy2.train_mix`
(tier -> share; `DEFAULT_TRAIN_MIX` when null). `meta` carries `tier`, `family`, `operands` and
`cells` (the decisions on the correct path); the task breaks every table down by `tier`.

`task.toy2.slice=heldout` probes the held-out slice instead (`heldout.py`: never used in calibration,
pretraining, the audit or RL training; ids `tw2-heldout-NNNN`, `meta["source"]` says where each
problem comes from); `task.toy2.tiers` still filters it, `task.toy2.per_tier` does not apply. `split=train`
(the RL pool, which a run builds from the same task config) ignores the slice, and withholds the
slice's problems from every mix (the default mix's problems are unchanged).
"""

from __future__ import annotations

import logging
from boundlab.config import TaskConfig
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task
from boundlab.worlds.toyworld2.world import PROMPT_TEMPLATE, TIERS, interleave, splits

log = logging.getLogger(__name__)


def toy2_problems(split: str = "test", tiers: list[str] | None = None,
                  per_tier: int | None = None) -> list[Problem]:
    if split not in ("test", "train"):
        raise ValueError(f"toy2 split must be 'test' or 'train', not {split!r}")
    if tiers is not None:
        bad = [t for t in tiers if t not in TIERS]
        if bad:
            raise ValueError(f"task.toy2.tiers: unknown tier(s) {bad}; the tiers are {list(TIERS)}")
    seen: dict[str, int] = {}
    out = []
    for i, p in enumerate(splits()[split]):
        if tiers is not None and p.tier not in tiers:
            continue
        seen[p.tier] = seen.get(p.tier, 0) + 1
        if per_tier is not None and seen[p.tier] > per_tier:
            continue
        out.append(Problem(f"tw2-{split}-{i:04d}", p.question, str(p.answer),
                           {"tier": p.tier, "family": p.family, "operands": p.operands,
                            "cells": list(p.cells)}))
    return out


# The RL training mix when `task.toy2.train_mix` is null: every family, the counter-rule one at 10%.
DEFAULT_TRAIN_MIX = {"E": 0.2, "H1": 0.3, "H2": 0.2, "H3": 0.1, "B3": 0.05, "B4": 0.05, "X": 0.1}


def train_problems(mix: dict[str, float]) -> list[Problem]:
    """The train split in the tier proportions of `mix`: as many problems as the scarcest
    tier allows (each tier's pool is used in split order), interleaved so any prefix keeps the mix."""
    bad = [t for t in mix if t not in TIERS]
    shares = list(mix.values())
    if (bad or not all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in shares)
            or any(w < 0 for w in shares) or sum(shares) <= 0):
        raise ValueError(f"task.toy2.train_mix: need tier -> share >= 0 over {list(TIERS)}, got {dict(mix)}")
    from boundlab.worlds.toyworld2.heldout import withheld_train_ids

    withheld = withheld_train_ids()
    everything = [p for p in toy2_problems("train") if p.problem_id not in withheld]
    pools = {t: [p for p in everything if p.meta["tier"] == t] for t in mix if mix[t] > 0}
    total_w = sum(mix[t] for t in pools)
    total = int(min(len(pools[t]) * total_w / mix[t] for t in pools))
    return interleave({t: pools[t][: round(total * mix[t] / total_w)] for t in pools})


SLICES = ("default", "heldout")


def heldout_problems(tiers: list[str] | None = None) -> list[Problem]:
    """The held-out slice (`heldout.heldout_specs`), optionally only some tiers."""
    from boundlab.worlds.toyworld2.heldout import heldout_specs
    from boundlab.worlds.toyworld2.world import spec

    if tiers is not None:
        bad = [t for t in tiers if t not in TIERS]
        if bad:
            raise ValueError(f"task.toy2.tiers: unknown tier(s) {bad}; the tiers are {list(TIERS)}")
    out = []
    for i, (source, q) in enumerate(heldout_specs()):
        p = spec(q)
        if tiers is not None and p.tier not in tiers:
            continue
        out.append(Problem(f"tw2-heldout-{i:04d}", p.question, str(p.answer),
                           {"tier": p.tier, "family": p.family, "operands": p.operands,
                            "cells": list(p.cells), "source": source}))
    return out


@TASKS.register("toy2")
def build_toy2(cfg: TaskConfig) -> Task:
    split = cfg.split or "test"
    if split == "train":
        mix = cfg.toy2.train_mix
        if isinstance(mix, str) and mix in TIERS:  # `task.toy2.train_mix=H1`: that tier alone
            mix = {mix: 1.0}
        if mix is not None and not hasattr(mix, "items"):
            raise ValueError(f"task.toy2.train_mix: need a mapping tier -> share, e.g. "
                             f"task.toy2.train_mix={{H1:0.5,B3:0.5}}, or one tier's name, got {mix!r}")
        mix = dict(mix) if mix else DEFAULT_TRAIN_MIX
        problems = train_problems(mix)
        # Said in one line: the mix decides what RL trains on, and an override is easy to mistype.
        log.info("toy2 train split: %d problems, mix %s", len(problems),
                 {t: round(float(w), 4) for t, w in mix.items()})
    else:
        tiers, per_tier = cfg.toy2.tiers, cfg.toy2.per_tier
        name = cfg.toy2.slice or "default"
        if name not in SLICES:
            raise ValueError(f"task.toy2.slice={name}: toy2's slices are {', '.join(SLICES)}")
        if name == "heldout":
            problems = heldout_problems(list(tiers) if tiers else None)
            log.info("toy2 held-out slice: %d problems (task.toy2.per_tier does not apply)", len(problems))
        else:
            problems = toy2_problems(split, list(tiers) if tiers else None,
                                     int(per_tier) if per_tier else None)
    return Task("toy2", problems, template=PROMPT_TEMPLATE, verifier="toy2", chat=False,
                group_by="tier", group_order=TIERS)
