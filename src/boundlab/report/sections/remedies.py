"""Remedies (issue 14): does any run raise pass@1 without shrinking the boundary on any tier?

For every probed checkpoint of every run (and each run's base-vs-base null, the chance level), per
tier of the task's breakdown field (toy2: tier) and on all problems: pass@1 and pass@n (the
report's headline metric, strict when the store knows it, at the n both probes reach) with
bootstrap intervals over the tier's problems, and the paired differences to the base with their
intervals (the same problems resampled for both; `estimator.bootstrap_diff_ci`).

A checkpoint is marked when it *significantly* raises pass@1 on all problems (the paired interval
of Δpass@1 lies above 0) and no tier loses pass@n significantly (no tier's Δpass@n interval lies
below 0). Reading: a mark is a claim at the report's CI level per comparison, with no correction for
the number of tiers and checkpoints; the null rows show what chance alone gives.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from boundlab.probe.estimator import bootstrap_ci, bootstrap_diff_ci
from boundlab.probe.significance import classify
from boundlab.report import analysis as A
from boundlab.report import arm_intervals
from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table

ALL = "all"
COLUMNS = ["run", "arm", "algo", "step", "tier", "problems", "n", "pass@1", "pass@1_ci_low", "pass@1_ci_high",
           "pass@n", "pass@n_ci_low", "pass@n_ci_high", "delta_pass@1", "delta_pass@1_ci_low",
           "delta_pass@1_ci_high", "delta_pass@n", "delta_pass@n_ci_low", "delta_pass@n_ci_high",
           "delta_pass@1_label", "delta_pass@n_label"]


def arm_of(label: str, algo: str) -> str:
    """The arm a run belongs to: `<job>_<arm>_s<seed>` (experiment=remedies' run dirs) gives <arm>;
    `<job>_<name>` gives <name>; else the algorithm."""
    name = label.split(" (")[0]
    m = re.match(r"^\d+_(.+?)(?:_s\d+)?$", name)
    return m.group(1) if m else (algo or name)


def tier_rows(tags: dict[str, str] | None, ids: list[str]) -> dict[str, np.ndarray]:
    """{tier: row indices} in the tags' order, then all problems."""
    out: dict[str, list[int]] = {}
    if tags:
        for i, pid in enumerate(ids):
            out.setdefault(tags[pid], []).append(i)
    order = sorted(out, key=A._tag_sort_key)  # the breakdown section's order (natural, so H1 < H2)
    return {**{t: np.array(out[t]) for t in order}, ALL: np.arange(len(ids))}


def compare_tiers(base_pp: np.ndarray, pp: np.ndarray, groups: dict[str, np.ndarray], iters: int,
                  ci: float, seed: int = 0, diff_iters: int | None = None) -> dict[str, dict[str, Any]]:
    """Per tier: pass@1 and pass@n of `pp` (problems x k, per-problem pass@k) with bootstrap CIs,
    and their paired differences to `base_pp` with CIs, at n = the smaller of the two probes' k.
    The differences (what the mark reads) take `diff_iters` resamples (default `iters`)."""
    k = min(base_pp.shape[1], pp.shape[1])
    alpha = 1 - ci
    diters = iters if diff_iters is None else diff_iters
    out = {}
    for tier, rows in groups.items():
        a, b = pp[rows][:, [0, k - 1]], base_pp[rows][:, [0, k - 1]]
        lo, hi = bootstrap_ci(a, iters=iters, alpha=alpha, seed=seed)
        d1 = bootstrap_diff_ci(a[:, 0], b[:, 0], iters=diters, alpha=alpha, seed=seed)
        dn = bootstrap_diff_ci(a[:, 1], b[:, 1], iters=diters, alpha=alpha, seed=seed)
        out[tier] = {"problems": len(rows), "n": k, "pass@1": float(a[:, 0].mean()), "pass@1_ci": (lo[0], hi[0]),
                     "pass@n": float(a[:, 1].mean()), "pass@n_ci": (lo[1], hi[1]), "delta_pass@1": d1,
                     "delta_pass@n": dn}
    return out


def verdict(tiers: dict[str, dict[str, Any]]) -> tuple[bool, list[str], bool]:
    """(pass@1 raised significantly on all problems, tiers whose pass@n fell significantly, marked)."""
    raised = tiers[ALL]["delta_pass@1"][1] > 0
    shrunk = [t for t, v in tiers.items() if v["delta_pass@n"][2] < 0]
    return raised, shrunk, raised and not shrunk


def _row(run: str, arm: str, algo: str, step: Any, tier: str, v: dict[str, Any], base: bool = False) -> list:
    d1 = (None, None, None) if base else v["delta_pass@1"]
    dn = (None, None, None) if base else v["delta_pass@n"]
    # Each Δ's label by the unresolved rule (boundlab.probe.significance; one problem = 1/N of the tier).
    labels = [None, None] if base else [classify(d[1], d[2], v["problems"]) for d in (d1, dn)]
    return [run, arm, algo, step, tier, v["problems"], v["n"], v["pass@1"], *v["pass@1_ci"], v["pass@n"],
            *v["pass@n_ci"], *d1, *dn, *labels]


def render(r: Report, d: Doc) -> None:
    from boundlab.report.plots import plot_tradeoff

    runs = [run for run in r.runs if run.checkpoints]
    if not runs:
        d.add("No probed training runs given (runs=[...] or sweeps=[...], e.g. experiment=remedies' sweep "
              "dir): nothing to weigh against the boundary.")
        return
    cfg, base = r.cfg, r.base.summary
    field = next(iter(r.tags), None)
    groups = tier_rows(r.tags.get(field) if field else None, r.ids)
    what = "strict pass@k (right answer, valid trace)" if r.metric == "strict" else "pass@k (answer only)"
    d.add(f"Every probed checkpoint of every run against the base, per {field or 'problem set'} and on all "
          f"{len(r.ids)} problems: {what}, {cfg.ci:.0%} bootstrap intervals over the problems, and paired "
          f"differences to the base (Δ = checkpoint − base, the same problems resampled for both). "
          f"**Marked**: Δpass@1 on all problems significantly above 0 (its interval excludes 0) and no "
          f"{field or 'problem set'} whose Δpass@n interval lies below 0. Null rows are the base probed "
          f"again with another seed: what chance alone gives. Each Δ in remedies.csv also has a label: gain / "
          f"loss only when its interval excludes 0 by more than one problem (1/N of the {field or 'problem set'}), "
          f"unresolved when it excludes 0 within one problem, no effect resolved when it contains 0.")
    iters, seed, diters = cfg.bootstrap_iters, cfg.seed, int(cfg.delta_bootstrap_iters)
    base_t = compare_tiers(base.per_problem, base.per_problem, groups, iters, cfg.ci, seed)
    rows = [_row("base", "base", "", 0, t, v, base=True) for t, v in base_t.items()]
    verdicts, points = [], []
    from boundlab.report.arm_intervals import run_arms

    names = run_arms(runs)
    for run in runs:
        arm = names[id(run)]
        todo = ([("null", run.null[1])] if run.null is not None else []) + \
            [(step, key) for step, key, _ in run.checkpoints]
        for step, key in todo:
            tiers = compare_tiers(base.per_problem, run.summaries[key].per_problem, groups, iters, cfg.ci, seed,
                                  diters)
            rows += [_row(run.label, arm, run.algo, step, t, v) for t, v in tiers.items()]
            raised, shrunk, marked = verdict(tiers)
            a = tiers[ALL]
            verdicts.append([run.label, arm, run.algo, step, a["delta_pass@1"][0], a["delta_pass@1"][1],
                             a["delta_pass@1"][2], a["delta_pass@n"][0], " ".join(shrunk) or "none",
                             "yes" if marked else "no"])
            if step != "null":
                points.append((arm, a["pass@1"], a["pass@n"], marked))
    n = base_t[ALL]["n"]
    d.table(Table("remedies", COLUMNS, rows),
            md_columns=["run", "step", "tier", "pass@1", "pass@1_ci_low", "pass@1_ci_high", "pass@n",
                        "pass@n_ci_low", "pass@n_ci_high", "delta_pass@n", "delta_pass@n_ci_low",
                        "delta_pass@n_ci_high"],
            caption=f"pass@n is pass@{n}; every column, with Δpass@1 and its interval, is in remedies.csv.")
    d.table(Table("remedies_verdict", ["run", "arm", "algo", "step", "delta_pass@1", "delta_pass@1_ci_low",
                                       "delta_pass@1_ci_high", "delta_pass@n", "pass@n_lost_on", "marked"],
                  verdicts))
    ckpts = [v for v in verdicts if v[3] != "null"]
    marked = [v for v in ckpts if v[-1] == "yes"]
    by_arm: dict[str, list[int]] = {}
    for v in ckpts:
        by_arm.setdefault(v[1], [0, 0])[0] += v[-1] == "yes"
        by_arm[v[1]][1] += 1
    if marked:
        d.add("Raised pass@1 without a significant pass@n loss on any tier: " + "; ".join(
            f"{a} ({m} of {t} checkpoints)" for a, (m, t) in by_arm.items() if m) + ".")
    else:
        d.add(f"No checkpoint of the {len(ckpts)} raised pass@1 significantly without a significant pass@n "
              f"loss on some {field or 'problem set'}.")
    r.summary["remedies/marked"] = len(marked)
    r.summary["remedies/checkpoints"] = len(ckpts)
    png = plot_tradeoff(points, (base.pass1, float(base.curve[n - 1])), d.out / "remedies_tradeoff.png",
                        title=f"pass@1 against pass@{n}: one point per run and checkpoint",
                        ylabel=f"pass@{n}")
    d.figure(png, "pass@1 vs pass@n trade-off")
    arm_intervals.render(r, d, groups, field)
