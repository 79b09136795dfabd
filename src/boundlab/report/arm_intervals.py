"""Seed-level intervals in the report (issue 40): each arm's Δpass@k against the base, over its seeds.

An arm is the runs that share a recipe (`run_arms`: named alike by `remedies.arm_of`, `<job>_<arm>_s<seed>`
or `<arm>_s<seed>` run dirs, e.g. the three `grpo_s0..2` of docs/toy2_paper, and with configs that
differ in the seed alone). At every checkpoint step that all of an arm's runs probed,
per tier of the breakdown field and on all problems: Δpass@1 and Δpass@n (n: the smallest k every
probe reaches) with the hierarchical bootstrap interval (`boundlab.probe.hierarchical`: seeds, then
problems, paired with the base), at `report.delta_bootstrap_iters` resamples (at least 10,000), or
the exact distribution when it is small enough to enumerate. Each Δ cell gets its label by the
unresolved rule (`boundlab.probe.significance`): gain / loss only when the interval's nearer end
lies more than one problem (1/N of the tier) from 0.

A single-seed arm gets the same row, marked "single seed": its interval resamples problems only
and holds no seed-to-seed spread. The base is the report's one base probe; a run's base-vs-base
null is not pooled into it (it stays the chance level, shown in the remedies table).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boundlab.probe import hierarchical as H
from boundlab.probe.significance import GAIN, LOSS, UNRESOLVED, classify
from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table

COLUMNS = ["arm", "seeds", "runs", "step", "tier", "problems", "n", "delta_pass@1", "delta_pass@1_ci_low",
           "delta_pass@1_ci_high", "delta_pass@1_label", "delta_pass@n", "delta_pass@n_ci_low",
           "delta_pass@n_ci_high", "delta_pass@n_label", "resamples", "note"]
SINGLE = "single seed"


def iters_for(seeds: int, problems: int, iters: int) -> int | None:
    """None (exact) when every seed and problem multiset can be enumerated, else `iters`."""
    total = H.n_multisets(seeds) * H.n_multisets(problems)
    return None if total <= H.EXACT_MAX else iters


# What differs between the seeds of one recipe, or says only where and how a run ran.
_NOT_RECIPE = ("logger", "store", "backend", "resume", "hydra")


def recipe(run: Any) -> str | None:
    """The run's saved config less its seed (train.seed) and the keys that do not change what is
    trained (logger, store, backend), as canonical JSON; None for a run without a config."""
    config = getattr(run, "config", None)
    if config is None:
        return None
    import json

    from omegaconf import OmegaConf

    d = OmegaConf.to_container(config, resolve=False) if OmegaConf.is_config(config) else dict(config)
    for k in _NOT_RECIPE:
        d.pop(k, None)
    if isinstance(d.get("train"), dict):
        d["train"] = {k: v for k, v in d["train"].items() if k != "seed"}
    return json.dumps(d, sort_keys=True, default=str)


def _stem(label: str) -> str:
    """A run's name less its job number and seed: `3_grpo_s1` and `grpo_s1` give `grpo`."""
    import re

    name = re.sub(r"^\d+_", "", label.split(" (")[0])
    return re.sub(r"_s\d+$", "", name)


def run_arms(runs: list[Any]) -> dict[int, str]:
    """{id(run): its arm}. Runs are one arm when their names say so (`remedies.arm_of`) *and* their
    configs differ in nothing but the seed (`recipe`): a sweep's `grpo_s0..2` and its
    `grpo_shuffled_reward` share the algorithm, but the control is not a fourth seed. A name whose
    runs hold several recipes is split, each part named by its runs' common stem (`grpo`,
    `grpo_shuffled_reward`), or `<name> #i` when stems cannot tell them apart."""
    from boundlab.report.sections.remedies import arm_of

    named: dict[str, list[Any]] = {}
    for run in runs:
        named.setdefault(arm_of(run.label, run.algo), []).append(run)
    out: dict[int, str] = {}
    for name, group in named.items():
        parts: dict[str | None, list[Any]] = {}
        for run in group:
            parts.setdefault(recipe(run), []).append(run)
        if len(parts) == 1:
            out.update({id(run): name for run in group})
            continue
        stems = [{_stem(run.label) for run in part} for part in parts.values()]
        distinct = all(len(st) == 1 for st in stems) and len({next(iter(st)) for st in stems}) == len(stems)
        for i, (part, st) in enumerate(zip(parts.values(), stems), 1):
            out.update({id(run): next(iter(st)) if distinct else f"{name} #{i}" for run in part})
    return out


def arms(r: Report) -> dict[str, list[Any]]:
    """{arm: its runs with probed checkpoints}, in the report's run order (`run_arms`)."""
    runs = [run for run in r.runs if run.checkpoints]
    names = run_arms(runs)
    out: dict[str, list[Any]] = {}
    for run in runs:
        out.setdefault(names[id(run)], []).append(run)
    return out


def arm_rows(base_pp: np.ndarray, seed_pps: list[np.ndarray], groups: dict[str, np.ndarray], iters: int,
             ci: float, seed: int) -> list[dict[str, Any]]:
    """Per tier: the hierarchical Δpass@1 and Δpass@n of the seeds' per-problem matrices
    (problems x k each) against the base's, with the unresolved rule's labels."""
    k = min(base_pp.shape[1], *(pp.shape[1] for pp in seed_pps))
    cols = [0, k - 1]
    A = np.stack([pp[:, cols] for pp in seed_pps])  # seeds x problems x 2
    B = base_pp[None][:, :, cols]
    out = []
    for tier, rows in groups.items():
        it = iters_for(len(seed_pps), len(rows), iters)
        h = H.hierarchical_delta_values(A[:, rows], B[:, rows], (1, k), iters=it, ci=ci, seed=seed)
        out.append({"tier": tier, "problems": len(rows), "n": k, "result": h,
                    "labels": [classify(float(h.lo[j]), float(h.hi[j]), len(rows)) for j in range(2)]})
    return out


def render(r: Report, d: Doc, groups: dict[str, np.ndarray], field: str | None) -> None:
    """The seed-level table (seed_intervals.csv) and its reading, under the remedies section."""
    by_arm = arms(r)
    if not by_arm:
        return
    cfg = r.cfg
    iters = int(cfg.delta_bootstrap_iters)
    base_pp = r.base.summary.per_problem
    rows, notes, labels = [], [], {GAIN: 0, LOSS: 0, UNRESOLVED: 0}
    for arm, runs in by_arm.items():
        steps = [set(step for step, _, _ in run.checkpoints) for run in runs]
        common = sorted(set.intersection(*steps))
        left = sorted(set.union(*steps) - set(common))
        if left:
            notes.append(f"{arm}: step(s) {', '.join(map(str, left))} not probed in every seed; left out.")
        for step in common:
            pps = [run.summaries[next(key for s, key, _ in run.checkpoints if s == step)].per_problem
                   for run in runs]
            for t in arm_rows(base_pp, pps, groups, iters, cfg.ci, cfg.seed):
                h = t["result"]
                for lab in t["labels"]:
                    labels[lab] = labels.get(lab, 0) + 1
                rows.append([arm, h.seeds, " ".join(run.label.split(" (")[0] for run in runs), step, t["tier"],
                             t["problems"], t["n"], float(h.delta[0]), float(h.lo[0]), float(h.hi[0]),
                             t["labels"][0], float(h.delta[1]), float(h.lo[1]), float(h.hi[1]), t["labels"][1],
                             "exact" if h.exact else h.iters, SINGLE if h.single_seed else ""])
    n = rows[0][6] if rows else None
    d.add(f"**Seed-level intervals.** Each arm (runs sharing a recipe, `<job>_<arm>_s<seed>`) against the base "
          f"at every step all its seeds probed, per {field or 'problem set'} and on all problems: Δ = the mean "
          f"over seeds of the checkpoint's pass@k minus the base's, with a {cfg.ci:.0%} hierarchical bootstrap "
          f"interval (seeds resampled, then problems, the same problems for the base; {iters:,} resamples, or "
          f"the exact distribution where it can be enumerated). A cell is a **gain** or **loss** only when its "
          f"interval excludes 0 *and* its nearer end lies more than one problem (1/N of its "
          f"{field or 'problem set'}) from 0; within one problem it is **unresolved**; an interval "
          f"containing 0 is **no effect resolved**. Rows marked *single seed* resample problems only.")
    if rows:
        d.table(Table("seed_intervals", COLUMNS, rows),
                md_columns=["arm", "seeds", "step", "tier", "problems", "delta_pass@1", "delta_pass@1_ci_low",
                            "delta_pass@1_ci_high", "delta_pass@1_label", "delta_pass@n", "delta_pass@n_ci_low",
                            "delta_pass@n_ci_high", "delta_pass@n_label", "note"],
                caption=f"pass@n is pass@{n}; resamples per row in seed_intervals.csv.")
    for note in notes:
        d.add(f"Note: {note}")
    r.summary["seed_intervals/gain"] = labels[GAIN]
    r.summary["seed_intervals/loss"] = labels[LOSS]
    r.summary["seed_intervals/unresolved"] = labels[UNRESOLVED]
