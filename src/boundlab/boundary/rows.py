"""The probe rows of boundary tracking: one dict per probe (probes.jsonl), and the files and console
lines made from them (boundary.csv, boundary_groups.csv, the summary table). Everything shown is
derived from the rows, so a resumed run can redraw and re-log what a killed one wrote.

Row layout (`metric` says which metric the unprefixed columns hold):
- `metric`: `strict` (right answer and a valid trace) when the verifier checks traces, else
  `answer`. `pass@1`, `pass@n` (with CIs), `solvable`, `curve`, `delta_*`, `lost`, `gained`,
  `crossing_*`, `saturated` and `rule_of_three` are on this headline metric.
- `answer_pass@1`, `answer_pass@n`, `answer_curve`, `answer_solvable` (every row) and, under strict,
  `answer_delta_*`, `answer_lost`, `answer_gained`: answer-only, beside it. `gap@1`, `gap@n`:
  answer-only minus strict (what lucky or invalid traces add). `strict_pass@1`, `strict_pass@n`,
  `strict_curve` are kept as before.
- `kind`: `base`, `null` (the base probed again with `probe.null_seed_offset`: its Δ, lost and gained
  against the base are the chance level of every checkpoint's) or `checkpoint`.
- `groups` (when the task has `group_by`): {tag: the same headline fields for that group's problems}.
- `crossing_k` (None: no crossing up to n), `crossing_k_ci_low/high` and `crossing_share` from
  `boundlab.probe.compare.crossing_with_ci`; an interval open beyond n has `crossing_k_ci_high` = inf
  (the string `"Infinity"` in probes.jsonl, strict JSON read back as inf by
  `boundlab.rundir.io`; `inf` in boundary.csv; left out of W&B).
- `entropy_mean`, `entropy_p10`, `entropy_p50`, `entropy_p90`, `entropy_samples`: the entropy view
  (`boundlab.probe.entropy`): the mean per-token entropy of each sample at the probe's temperature,
  averaged over samples, its percentiles, and how many samples recorded one (also per group);
  `delta_entropy_mean` against the base. Absent where no sample recorded an entropy (rows and stores
  from before it).
- `distinct_answers`, `answer_entropy`, `top_answer_share`, `no_answer_share`, `gpass@k` (k = 1, powers
  of two, n) and `gpass_tau`: the views of `boundlab.probe.views` (also per group); absent in rows
  written before them. `kl_from_base` (nats per sequence), `kl_from_base_se`, `kl_samples`,
  `kl_skipped`: KL(base || model) on the base's stored samples (`boundlab.probe.kl_view`); 0 for the
  base and the null, absent where the view was off or could not run.
A row written before `metric` existed held answer-only values in `pass@1`...: `normalize` reads it
as `metric=answer`.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import numpy as np

from boundlab.probe.compare import (ANSWER, STRICT, compare, compare_groups, group_stats, saturation,
                                    view)
from boundlab.probe.entropy import group_entropy
from boundlab.probe.runner import ProbeResult

KINDS_ORDER = {"base": 0, "null": 1, "checkpoint": 2}

CSV_COLUMNS = [
    "step", "kind", "metric", "n", "problems", "pass@1", "pass@1_ci_low", "pass@1_ci_high", "pass@n",
    "pass@n_ci_low", "pass@n_ci_high", "saturated", "rule_of_three", "delta_pass@1",
    "delta_pass@1_ci_low", "delta_pass@1_ci_high", "delta_pass@n", "delta_pass@n_ci_low",
    "delta_pass@n_ci_high", "lost", "gained", "solvable", "crossing_k", "crossing_k_ci_low",
    "crossing_k_ci_high", "crossing_share", "answer_pass@1", "answer_pass@n", "gap@1", "gap@n",
    "answer_delta_pass@1", "answer_delta_pass@n", "answer_lost", "answer_gained", "strict_pass@1",
    "strict_pass@n", "seed", "boxed_share", "truncated_share", "probe_seconds", "entropy_mean",
    "entropy_p10", "entropy_p50", "entropy_p90", "entropy_samples", "delta_entropy_mean",
    "distinct_answers", "answer_entropy", "top_answer_share", "no_answer_share", "gpass_tau",
    "gpass@1", "gpass@16", "gpass@n", "kl_from_base", "kl_from_base_se", "kl_samples", "kl_skipped"]

GROUP_COLUMNS = [
    "step", "kind", "metric", "group_by", "group", "n", "problems", "pass@1", "pass@1_ci_low",
    "pass@1_ci_high", "pass@n", "pass@n_ci_low", "pass@n_ci_high", "saturated", "rule_of_three",
    "delta_pass@1", "delta_pass@1_ci_low", "delta_pass@1_ci_high", "delta_pass@n",
    "delta_pass@n_ci_low", "delta_pass@n_ci_high", "lost", "gained", "solvable", "answer_pass@1",
    "answer_pass@n", "entropy_mean", "entropy_p10", "entropy_p50", "entropy_p90", "entropy_samples",
    "delta_entropy_mean", "distinct_answers", "answer_entropy", "top_answer_share", "no_answer_share",
    "gpass@1", "gpass@16", "gpass@n"]


def _r(x: float) -> float:
    return round(float(x), 6)


def probe_row(step: int, kind: str, res: ProbeResult, seed: int, seconds: float,
              groups: dict[str, list[int]], group_by: str | None, ci: float = 0.95,
              iters: int = 1000) -> dict[str, Any]:
    """The row of one probe, before any comparison with the base."""
    metric = STRICT if res.curve_strict is not None else ANSWER
    cur, c = view(res, metric)
    acur, ac = view(res, ANSWER)
    kmax = cur.kmax
    row: dict[str, Any] = {
        "step": step, "kind": kind, "metric": metric, "n": kmax, "problems": len(res.problem_ids),
        "pass@1": cur.at(1), "pass@1_ci_low": float(cur.ci_low[0]), "pass@1_ci_high": float(cur.ci_high[0]),
        "pass@n": cur.at(kmax), "pass@n_ci_low": float(cur.ci_low[-1]),
        "pass@n_ci_high": float(cur.ci_high[-1]), "solvable": int(np.sum(c > 0)),
        **saturation(cur),
        "answer_pass@1": acur.at(1), "answer_pass@n": acur.at(kmax), "answer_solvable": int(np.sum(ac > 0)),
        "probe_key": res.key, "seed": seed, "probe_seconds": round(seconds, 2),
        "curve": [_r(x) for x in cur.pass_at_k], "answer_curve": [_r(x) for x in acur.pass_at_k],
    }
    if metric == STRICT:
        row["strict_pass@1"], row["strict_pass@n"] = row["pass@1"], row["pass@n"]
        row["strict_curve"] = row["curve"]
        row["gap@1"] = row["answer_pass@1"] - row["pass@1"]
        row["gap@n"] = row["answer_pass@n"] - row["pass@n"]
    if res.answers is not None:
        row["boxed_share"] = res.answers.boxed_share
        row["truncated_share"] = res.answers.truncated_share
    if res.entropy is not None:
        row.update({k: _r(v) if isinstance(v, float) else v for k, v in res.entropy.fields().items()})
    if groups:
        row["group_by"] = group_by
        row["groups"] = {tag: group_stats(res, metric, np.asarray(idx), ci, iters)
                         for tag, idx in groups.items()}
        if res.entropy_values is not None:
            for tag, idx in groups.items():
                g = group_entropy(res.entropy_values, idx)
                if g is not None:
                    row["groups"][tag].update({k: _r(v) if isinstance(v, float) else v
                                               for k, v in g.fields().items()})
    return row


def add_comparison(row: dict[str, Any], base: ProbeResult, res: ProbeResult,
                   groups: dict[str, list[int]], iters: int, ci: float) -> dict[str, Any]:
    """Add the comparison against the base (a checkpoint's or the null's) to its row."""
    row.update(compare(base, res, iters, ci, metric=row["metric"]))
    if groups:
        per = compare_groups(base, res, {t: np.asarray(i) for t, i in groups.items()}, iters, ci,
                             metric=row["metric"])
        for tag, d in per.items():
            row["groups"][tag].update(d)
    if res.entropy is not None and base.entropy is not None:
        row["delta_entropy_mean"] = _r(res.entropy.mean - base.entropy.mean)
        if groups and base.entropy_values is not None and res.entropy_values is not None:
            for tag, idx in groups.items():
                b, g = group_entropy(base.entropy_values, idx), group_entropy(res.entropy_values, idx)
                if b is not None and g is not None:
                    row["groups"][tag]["delta_entropy_mean"] = _r(g.mean - b.mean)
    return row


def normalize(row: dict[str, Any]) -> dict[str, Any]:
    """A row as this version writes it: a row from before `metric` existed held answer-only
    values in its unprefixed columns."""
    if "metric" in row:
        return row
    row = dict(row)
    row["metric"] = ANSWER
    row.setdefault("answer_pass@1", row.get("pass@1"))
    row.setdefault("answer_pass@n", row.get("pass@n"))
    row.setdefault("answer_curve", row.get("curve"))
    return row


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (KINDS_ORDER.get(r["kind"], 3), r["step"]))


def _cell(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "inf" if math.isinf(v) else f"{v:.6f}"
    return v


def boundary_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    w.writeheader()
    for r in ordered(rows):
        w.writerow({k: _cell(v) for k, v in r.items() if k in CSV_COLUMNS})
    return buf.getvalue()


def groups_csv(rows: list[dict[str, Any]]) -> str | None:
    """Long format: one line per (probe, group); None when no row has groups."""
    if not any(r.get("groups") for r in rows):
        return None
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=GROUP_COLUMNS, extrasaction="ignore")
    w.writeheader()
    for r in ordered(rows):
        for tag, g in (r.get("groups") or {}).items():
            line = {"step": r["step"], "kind": r["kind"], "metric": r["metric"], "n": r["n"],
                    "group_by": r.get("group_by"), "group": tag, **g}
            w.writerow({k: _cell(v) for k, v in line.items() if k in GROUP_COLUMNS})
    return buf.getvalue()


# -- console --------------------------------------------------------------------------------------
def _ci(r: dict[str, Any], key: str) -> str:
    return f"{r[key]:+.4f} [{r[key + '_ci_low']:+.3f},{r[key + '_ci_high']:+.3f}]"


def _sat(r: dict[str, Any]) -> str:
    if not r.get("saturated"):
        return ""
    return (f"  SATURATED: every one of the {r['problems']} problems solved at k = n; 95% upper "
            f"bound on the unsolved share 3/P = {r['rule_of_three']:.3f} (rule of three)")


def _cross(r: dict[str, Any]) -> str:
    k = r.get("crossing_k")
    if k is None and "crossing_share" not in r:
        return "none"
    lo, hi = r.get("crossing_k_ci_low"), r.get("crossing_k_ci_high")
    ci = "" if lo is None else (f" [{lo:.1f}, " + (f"> n]" if math.isinf(hi) else f"{hi:.1f}]"))
    share = f" ({r['crossing_share']:.0%} of resamples cross)" if "crossing_share" in r else ""
    return ("none" if k is None else f"{k:.1f}") + ci + share


def _entropy(r: dict[str, Any]) -> str:
    if r.get("entropy_mean") is None:
        return ""
    return (f"  entropy {r['entropy_mean']:.4f} [p10 {r['entropy_p10']:.3f}, p90 "
            f"{r['entropy_p90']:.3f}]")


def probe_line(r: dict[str, Any]) -> str:
    """One line per finished probe, printed as training goes."""
    who = {"base": "base", "null": f"null (base, seed {r.get('seed')})"}.get(r["kind"], f"step {r['step']}")
    line = f"probe {who}: {r['metric']} pass@1 {r['pass@1']:.4f}, pass@{r['n']} {r['pass@n']:.4f}"
    if r["metric"] == STRICT:
        line += f" (answer-only {r['answer_pass@1']:.4f}, {r['answer_pass@n']:.4f})"
    if "delta_pass@1" in r:
        line += (f"; vs base d pass@1 {_ci(r, 'delta_pass@1')}, d pass@{r['n']} "
                 f"{_ci(r, 'delta_pass@n')}, lost {r['lost']}, gained {r['gained']}")
    if r.get("saturated"):
        line += f"; saturated (3/P = {r['rule_of_three']:.3f})"
    if r.get("entropy_mean") is not None:
        line += f"; entropy {r['entropy_mean']:.4f} nats/token"
        if r.get("delta_entropy_mean") is not None:
            line += f" (d vs base {r['delta_entropy_mean']:+.4f})"
    return line


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The boundary table printed at the end of training (and by the watcher)."""
    rows = [normalize(r) for r in ordered(rows)]
    if not rows:
        return []
    b = rows[0]
    n = b["n"]
    metric = b["metric"]
    name = "strict (right answer, valid trace)" if metric == STRICT else "answer-only"
    out = [f"boundary (n = {n}, {b['problems']} problems; headline: {name} pass@k"
           + ("; answer-only beside it" if metric == STRICT else "") + "):"]
    out.append(f"  {'step':>6}  {'pass@1':>7}  {'pass@' + str(n):>8}  {'d pass@1 [95% CI]':>26}  "
               f"{'d pass@' + str(n) + ' [95% CI]':>26}  lost gained  crossing k [CI]")
    for r in rows:
        if r["metric"] != metric:
            out.append(f"  note: step {r['step']} ({r['kind']}) was written with metric={r['metric']}"
                       f" by an older version; its values are not comparable with this table")
            continue
        label = "base" if r["kind"] == "base" else ("null" if r["kind"] == "null" else str(r["step"]))
        line = f"  {label:>6}  {r['pass@1']:7.4f}  {r['pass@n']:8.4f}"
        if r["kind"] != "base":
            dn = _ci(r, "delta_pass@n")
            if b.get("saturated") and r.get("delta_pass@n_ci_low") == r.get("delta_pass@n_ci_high"):
                dn = f"{r['delta_pass@n']:+.4f} (base saturated)"
            line += (f"  {_ci(r, 'delta_pass@1'):>26}  {dn:>26}  {r['lost']:>4} {r['gained']:>6}  "
                     f"{_cross(r)}")
        out.append(line + _sat(r) + _entropy(r))
        if metric == STRICT:
            extra = f"answer-only pass@1 {r['answer_pass@1']:.4f}, pass@{n} {r['answer_pass@n']:.4f}"
            extra += f" (gap to strict {r['gap@1']:+.4f}, {r['gap@n']:+.4f})"
            if r["kind"] != "base":
                extra += (f"; d {r['answer_delta_pass@1']:+.4f}, {r['answer_delta_pass@n']:+.4f}; "
                          f"lost {r['answer_lost']} gained {r['answer_gained']}")
            out.append(f"  {'':>6}  {extra}")
    null = next((r for r in rows if r["kind"] == "null"), None)
    if null is not None:
        out.append(f"  null: the base probed again (seed {null.get('seed')}): its d and lost/gained "
                   f"are what chance alone gives")
    out += group_lines(rows)
    return out


def group_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per group: base, null and each checkpoint, pass@1 and pass@n with Δ and CIs."""
    rows = [r for r in ordered(rows) if r.get("groups")]
    if not rows:
        return []
    b = rows[0]
    n = b["n"]
    out = [f"by {b.get('group_by')} ({b['metric']} pass@1 and pass@{n}; d vs base [95% CI]):"]
    for tag in b["groups"]:
        base_sat = bool(b["groups"][tag].get("saturated"))
        for r in rows:
            g = r["groups"].get(tag)
            if g is None:
                continue
            label = "base" if r["kind"] == "base" else ("null" if r["kind"] == "null" else str(r["step"]))
            line = (f"  {tag:>6} {label:>6} ({g['problems']:>3})  {g['pass@1']:.4f} "
                    f"[{g['pass@1_ci_low']:.3f},{g['pass@1_ci_high']:.3f}]  {g['pass@n']:.4f} "
                    f"[{g['pass@n_ci_low']:.3f},{g['pass@n_ci_high']:.3f}]")
            if "delta_pass@1" in g:
                dn = _ci(g, "delta_pass@n")
                if base_sat and g["delta_pass@n_ci_low"] == g["delta_pass@n_ci_high"]:
                    dn = f"{g['delta_pass@n']:+.4f} (base saturated)"
                line += (f"  d1 {_ci(g, 'delta_pass@1')}  dn {dn}  "
                         f"lost {g['lost']} gained {g['gained']}")
            if g.get("saturated"):
                line += f"  SATURATED (3/P = {g['rule_of_three']:.3f})"
            out.append(line)
    return out
