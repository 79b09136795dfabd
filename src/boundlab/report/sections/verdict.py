"""Verdict: the paper's findings, one row each (per arm), with the statistic, its interval, the
verdict and the evidence it rests on (`verdict.csv`). The findings, their statistics and decision
rules are defined in `boundlab.report.verdict`; this module gathers the arms from the report's
runs and writes the table. Models given without a run dir are not in it: their training is
unknown."""

from __future__ import annotations

from typing import Any

import numpy as np

from boundlab.probe.compare import crossing_k
from boundlab.probe.significance import GAIN, LOSS
from boundlab.report import analysis as A
from boundlab.report import verdict as V
from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table
from boundlab.report.inputs import _select

COLUMNS = ["finding", "claim", "arm", "family", "seeds", "runs", "step", "statistic", "k", "problems",
           "value", "ci_low", "ci_high", "interval", "verdict", "rule", "evidence", "cannot_show"]
MD_COLUMNS = ["finding", "claim", "arm", "statistic", "value", "ci_low", "ci_high", "verdict", "rule", "interval",
              "evidence"]


def _shuffled(run: Any) -> bool:
    return bool(_select(getattr(run, "config", None), "reward.shuffle_within_group"))


class _Arm:
    """One arm at its final step: its runs, seeds' per-problem matrices, and every common step."""

    def __init__(self, name: str, runs: list[Any]):
        self.name, self.runs = name, runs
        algos = {run.algo for run in runs}
        dist = {V.is_distill(a) for a in algos}
        if "?" in algos:  # read_run: no run_info.json algo and no saved config
            self.family = "unknown"
        else:
            self.family = "mixed" if len(dist) > 1 else ("distill" if dist.pop() else "RL")
        if self.family == "RL" and all(_shuffled(run) for run in runs):
            # Rewards permuted within each group carry nothing about the answer: the drift control,
            # its rows the yardstick for what an update of that size does on its own.
            self.family = "drift control"
        steps = [set(s for s, _, _ in run.checkpoints) for run in runs]
        self.steps = sorted(set.intersection(*steps))
        self.left = sorted(set.union(*steps) - set(self.steps))
        self.labels = " ".join(run.label.split(" (")[0] for run in runs)

    def pps(self, step: int) -> list[np.ndarray]:
        return [run.summaries[next(k for s, k, _ in run.checkpoints if s == step)].per_problem
                for run in self.runs]


def _row(finding: int, arm: str = "", family: str = "", seeds: Any = None, runs: str = "", step: Any = None,
         statistic: str = "", k: Any = None, problems: Any = None, iv: V.Interval | None = None,
         verdict: str = V.NOT_MEASURED, rule: str = "", evidence: str = "", cannot: str = "") -> list:
    value, lo, hi = (None, None, None) if iv is None else (iv.value, iv.lo, iv.hi)
    how = "" if iv is None else iv.how()
    # A string in every row ("10", "5..10" for a change over training): W&B tables keep one type a column.
    step = None if step is None else str(step)
    return [finding, V.CLAIMS[finding], arm, family, seeds, runs, step, statistic, k, problems, value, lo, hi,
            how, verdict, rule, evidence, cannot]


def _absent(finding: int, why: str, arm: str = "", family: str = "") -> list:
    return _row(finding, arm=arm, family=family, rule=why)


def _nulls(r: Report, notes: list[str]) -> list[tuple[str, np.ndarray]]:
    """(probe key, per-problem matrix) of each distinct base-vs-base null probe in the runs that
    start from the report's base (a null of another base is no chance level for this one)."""
    out: dict[str, np.ndarray] = {}
    for rd, run in zip(r.inputs.runs, r.runs):  # comparisons.progression: one RunProgress per run, in order
        if run.null is None:
            continue
        key = run.null[1]
        if rd.base_key not in (None, r.base.entry.key):
            notes.append(f"{run.label}: its null {key} is a second draw of another base ({rd.base_key}); "
                         f"not used as this report's chance level.")
            continue
        out.setdefault(key, run.summaries[key].per_problem)
    return list(out.items())


def _crossing(r: Report, a: _Arm, step: int, pps: list[np.ndarray], k: int) -> Any:
    """The crossing of the arm's mean curve below the base's up to k. A single-seed arm at its
    run's final checkpoint is a model of the report: its crossing, computed once, is reused."""
    cfg, base_pp = r.cfg, r.base.summary.per_problem
    if len(pps) == 1:
        key = next(kk for s, kk, _ in a.runs[0].checkpoints if s == step)
        for p, vs in r.pairs():
            if p.entry.key == key and vs.crossing.n == k:
                return vs.crossing
    mean_pp = np.mean([pp[:, :k] for pp in pps], axis=0)
    return A.crossing_with_ci(base_pp[:, :k], mean_pp, cfg.bootstrap_iters, cfg.ci, cfg.seed)


def _rl_rows(r: Report, a: _Arm, it: int, nulls: list[tuple[str, np.ndarray]]) -> list[list]:
    cfg, base_pp, P = r.cfg, r.base.summary.per_problem, len(r.ids)
    step = a.steps[-1]
    pps = a.pps(step)
    S = len(pps)
    k = V.k_max(base_pp, *pps)
    n_arm = min(pp.shape[1] for pp in pps)
    head = dict(arm=a.name, family=a.family, seeds=S, runs=a.labels, step=step, problems=P)
    ev = (f"{a.name} ({a.labels}) at step {step}; base n = {base_pp.shape[1]}, arm n = {n_arm}, "
          f"k_max = {k}; {P} problems; {r.metric} pass@k")
    single = "; single seed: no seed-to-seed spread in the interval" if S == 1 else ""
    rows = []
    d1 = V.delta_at(pps, base_pp, 1, it, cfg.ci, cfg.seed)
    rows.append(_row(1, statistic="Δpass@1", k=1, iv=d1, **head, **dict(zip(("verdict", "rule"),
                     V.directional(d1, GAIN))),
                     evidence=f"{ev}; base pass@1 {base_pp[:, 0].mean():.4f}",
                     cannot="pass@1 only: says nothing about the boundary" + single))
    dk = V.delta_at(pps, base_pp, k, it, cfg.ci, cfg.seed)
    verdict, rule = V.directional(dk, LOSS)
    sat = bool(np.all(base_pp[:, k - 1] >= 1 - 1e-12) and all(np.all(pp[:, k - 1] >= 1 - 1e-12) for pp in pps))
    if sat:
        rule += f"; both saturated (pass@{k} = 1 on every problem): a tie that shows nothing"
    rows.append(_row(2, statistic=f"Δpass@{k}", k=k, iv=dk, verdict=verdict, rule=rule, **head,
                     evidence=f"{ev}; base pass@{k} {base_pp[:, k - 1].mean():.4f}",
                     cannot=f"only up to k_max = {k}: the paper's larger k is not tested; 'matches' needs an "
                            f"equivalence margin this table does not set" + single))
    cr = _crossing(r, a, step, pps, k)
    verdict, rule = V.crossing_rule(cr)
    per_seed = ", ".join("none" if (x := crossing_k(base_pp[:, :k].mean(0), pp[:, :k].mean(0))) is None
                         else f"{x:.1f}" for pp in pps)
    civ = V.Interval(np.nan if cr.k is None else cr.k, cr.ci_low, cr.ci_high, S, P, False, cfg.bootstrap_iters)
    row = _row(3, statistic="crossing k", k=k, iv=civ, verdict=verdict, rule=rule, **head,
               evidence=f"{ev}; {cr.describe(cfg.ci)}; share of resamples crossing by k_max {cr.p_cross:.2f}"
                        + (f"; per seed: {per_seed}" if S > 1 else ""),
               cannot="problem bootstrap of the seeds' mean curve: seeds averaged, not resampled; a resample "
                      "not above the base at k = 1 counts as crossing at 1")
    row[COLUMNS.index("interval")] = (f"problem bootstrap of the mean curve over {S} seeds, {cfg.bootstrap_iters:,} "
                                      f"resamples" if S > 1 else
                                      f"problem bootstrap, {cfg.bootstrap_iters:,} resamples; single seed")
    rows.append(row)
    if nulls:
        null_pps = [pp for _, pp in nulls]
        k4 = V.k_max(base_pp, *pps, *null_pps)
        iv, g, g0 = V.gains(pps, base_pp, null_pps, k4, it, r.cfg.ci, cfg.seed)
        verdict, rule = V.subset_rule(iv)
        rows.append(_row(4, statistic=f"RL-only − null-only problems at k = {k4}", k=k4, iv=iv, verdict=verdict,
                         rule=rule, **head,
                         evidence=f"{ev}; expected RL-only problems {g:.2f}, null-only {g0:.2f} "
                                  f"({len(nulls)} null probe(s): {', '.join(n for n, _ in nulls)}; null n = "
                                  f"{min(pp.shape[1] for pp in null_pps)})",
                         cannot=f"expected counts at k = {k4}; problems neither side solves within k are invisible"
                                + single))
    else:
        rows.append(_absent(4, "no base-vs-base null probe of this base (probe.null_seed_offset) in the runs",
                            a.name, a.family))
    if len(a.steps) >= 2:
        first, last = a.steps[0], a.steps[-1]
        fp, lp = a.pps(first), a.pps(last)
        k5 = V.k_max(*fp, *lp)
        iv = V.change(fp, lp, k5, it, cfg.ci, cfg.seed)
        verdict, rule = V.directional(iv, LOSS)
        path = ", ".join(f"{s}: {np.mean([pp[:, k5 - 1].mean() for pp in a.pps(s)]):.4f}"
                         for s in a.steps if min(pp.shape[1] for pp in a.pps(s)) >= k5)
        rows.append(_row(5, statistic=f"pass@{k5} step {last} − step {first}", k=k5, iv=iv, verdict=verdict,
                         rule=rule, **{**head, "step": f"{first}..{last}"},
                         evidence=f"{a.name} ({a.labels}); pass@{k5} by step (mean over seeds): {path}",
                         cannot="first against last probed step, not a slope: a dip that recovers in between "
                                "is not seen" + single))
    else:
        rows.append(_absent(5, f"{a.name} has {len(a.steps)} step probed by every seed; "
                               f"a change over training needs two", a.name, a.family))
    return rows


def _distill_row(r: Report, a: _Arm, it: int) -> list:
    cfg, base_pp, P = r.cfg, r.base.summary.per_problem, len(r.ids)
    step = a.steps[-1]
    pps = a.pps(step)
    k = V.k_max(base_pp, *pps)
    iv = V.delta_at(pps, base_pp, k, it, cfg.ci, cfg.seed)
    verdict, rule = V.directional(iv, GAIN)
    return _row(6, arm=a.name, family=a.family, seeds=len(pps), runs=a.labels, step=step, statistic=f"Δpass@{k}",
                k=k, problems=P, iv=iv, verdict=verdict, rule=rule,
                evidence=f"{a.name} ({a.labels}) at step {step}; base n = {base_pp.shape[1]}, arm n = "
                         f"{min(pp.shape[1] for pp in pps)}, k_max = {k}; {P} problems; {r.metric} pass@k",
                cannot=f"only up to k_max = {k}; a teacher's traces can add answers without new reasoning"
                       + ("; single seed: no seed-to-seed spread in the interval" if len(pps) == 1 else ""))


def rows_of(r: Report) -> tuple[list[list], list[str]]:
    """Every verdict row (findings 1-6) and the notes said under the table."""
    from boundlab.report.arm_intervals import arms

    it = int(r.cfg.delta_bootstrap_iters)
    notes, rl, dist = [], [], []
    for name, runs in arms(r).items():
        a = _Arm(name, runs)
        if a.left:
            notes.append(f"{name}: step(s) {', '.join(map(str, a.left))} not probed by every seed; left out.")
        if a.family in ("mixed", "unknown"):
            what = "mix distillation and RL" if a.family == "mixed" else "include one whose algorithm is unknown"
            notes.append(f"{name}: its runs {what} ({', '.join(sorted({x.algo for x in runs}))}); "
                         f"left out of the verdict.")
        elif not a.steps:
            notes.append(f"{name}: its seeds share no probed step; left out of the verdict.")
        else:
            (dist if a.family == "distill" else rl).append(a)  # RL and the drift control
    in_runs = {run.path.resolve() for run in r.inputs.runs}
    bare = [p.entry.label for p in r.models if p.entry.run is None or p.entry.run.path.resolve() not in in_runs]
    if bare:
        notes.append(f"Not in the verdict (given in models=[...], not as a training run in runs=[...] or "
                     f"sweeps=[...]): {', '.join(bare)}.")
    rows = []
    nulls = _nulls(r, notes)
    for a in rl:
        rows += _rl_rows(r, a, it, nulls)
    if not rl:
        why = "no RL training run with a probed checkpoint (runs=[...] or sweeps=[...])"
        rows += [_absent(f, why) for f in (1, 2, 3, 4, 5)]
    rows += [_distill_row(r, a, it) for a in dist]
    if not dist:
        rows.append(_absent(6, "no distillation arm (sft_distill, onpolicy_distill) in the runs"))
    rows.sort(key=lambda row: row[0])  # by finding; arms keep their order within one
    return rows, notes


def render(r: Report, d: Doc) -> None:
    rows, notes = rows_of(r)
    d.add(f"The paper's findings (Yue et al. 2025), each read off this report's probes ({r.metric} pass@k). "
          f"Δ = arm − base on the same {len(r.ids)} problems; k_max = the largest k both sides were sampled "
          f"at (never extrapolated). Intervals are {r.cfg.ci:.0%}: hierarchical (seeds, then problems) where an "
          f"arm has two or more seeds, else the problem bootstrap (marked single seed). A Δ (findings 1, 2, 5, "
          f"6) is **reproduced** / **not reproduced** only when its interval lies beyond 0 by more than one "
          f"problem (1/N) in the predicted / opposite direction; otherwise it is **unresolved at this power**. "
          f"The crossing (3) and the subset finding (4) have rules of their own (the `rule` column); all are "
          f"defined in `boundlab.report.verdict`. What each row cannot show: `cannot_show` in verdict.csv.")
    d.table(Table("verdict", COLUMNS, rows), md_columns=MD_COLUMNS)
    for note in notes:
        d.add(f"Note: {note}")
    for v in V.VERDICTS:
        r.summary[f"verdict/{v.replace(' ', '_')}"] = sum(row[COLUMNS.index("verdict")] == v for row in rows)
