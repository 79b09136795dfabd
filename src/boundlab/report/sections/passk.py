"""pass@k curves of the base and every model, the crossing k, and (math) both answer rules."""

from __future__ import annotations

import numpy as np

from boundlab.report import analysis as A
from boundlab.report.comparisons import Report, log
from boundlab.report.document import Doc, Table


def render(r: Report, d: Doc) -> None:
    from boundlab.probe.estimator import powers_of_two
    from boundlab.plots.curves import plot_passk

    probes = [r.base, *r.models]
    curves = {}
    long_rows = []
    for p in probes:
        s = p.summary
        ks = np.arange(1, s.n + 1)
        curves[p.entry.label] = (ks, s.curve, s.ci_low, s.ci_high)
        long_rows += [[p.entry.label, int(k), float(v), float(lo), float(hi)]
                      for k, v, lo, hi in zip(ks, s.curve, s.ci_low, s.ci_high)]
    png = plot_passk(curves, d.out / "passk.png",
                     title=f"pass@k on {r.task.name} ({len(r.ids)} problems)")
    d.figure(png, "pass@k curves")
    kmax = max(p.summary.n for p in probes)
    ks = powers_of_two(kmax)
    wide = []
    for p in probes:
        pts = A.passk_points(p.summary.curve)
        wide.append([p.entry.label] + [pts.get(k) for k in ks])
    d.table(Table("passk_summary", ["model"] + [f"pass@{k}" for k in ks], wide),
            caption="pass@k at powers of two (– where k > the model's n).")
    d.csv(Table("passk", ["model", "k", "pass@k", "ci_low", "ci_high"], long_rows))
    d.add("Every k with its interval: [passk.csv](passk.csv).")
    _answer_only(r, d)
    _saturation(r, d)

    d.add("### Crossing k",
          "The k at which the model's pass@k falls strictly below the base's (interpolated in log2 k on "
          "the difference of the mean curves). Its interval resamples problems and recomputes both "
          "curves and the crossing; a resample that does not cross by n counts as beyond n.")
    rows = []
    for p, vs in r.pairs():
        cr = vs.crossing
        rows.append([p.entry.label, cr.status, cr.k, cr.ci_low, cr.ci_high, cr.n, cr.p_cross,
                     cr.describe(r.cfg.ci)])
    if rows:
        d.table(Table("crossing", ["model", "status", "crossing_k", "ci_low", "ci_high", "n",
                                   "p_cross", "crossing"], rows), md_columns=["model", "crossing"])
    else:
        d.add("No models to compare.")
    _answer_rules(r, d)


def _answer_only(r: Report, d: Doc) -> None:
    """Under strict, answer-only pass@1 and pass@n beside it, with the gap (lucky or invalid
    traces that still land on the right answer)."""
    if r.metric != "strict":
        return
    rows = []
    for p in [r.base, *r.models]:
        s, (a1, an) = p.summary, p.answer
        rows.append([p.entry.label, s.n, s.pass1, a1, a1 - s.pass1, s.passn, an, an - s.passn])
    d.table(Table("strict_vs_answer", ["model", "n", "strict pass@1", "answer pass@1", "gap@1",
                                       "strict pass@n", "answer pass@n", "gap@n"], rows),
            caption="Strict (the headline) against answer-only; gap = answer-only − strict.")


def _saturation(r: Report, d: Doc) -> None:
    """A probe that solves every problem at k = n has pass@n = 1 and a [1, 1] interval: that is
    saturation, not precision; the rule of three bounds what the n samples could not show."""
    for p in [r.base, *r.models]:
        s = p.summary
        if s.problems and s.solvable == s.problems and s.passn >= 1 - 1e-12:
            d.add(f"**Saturated: {p.entry.label}** solves all {s.problems} problems within n = {s.n} "
                  f"samples, so its pass@{s.n} is 1 and any interval on it (or on a Δpass@{s.n} against "
                  f"it) collapses: this is saturation, not precision. 95% upper bound on the share of "
                  f"problems it cannot solve: 3/P = {min(1.0, 3 / s.problems):.3f} (rule of three).")


def _answer_rules(r: Report, d: Doc) -> None:
    """pass@k with boxed answers only and with the lenient rule, every probe rescored."""
    from boundlab.report.answer_rules import answer_rule_rows

    if getattr(r.task, "verifier", None) != "math":
        return
    d.add("### Answer format: boxed vs lenient",
          "Every stored completion judged again under both answer rules (no resampling): `boxed` "
          "counts boxed answers only (the usual RL reward), `lenient` also reads a final answer "
          "stated without a box. A gap between the base and a model that appears only under "
          "`boxed` is a change of answer format, not of reasoning boundary.")
    probes = [(p.entry.label, p.entry.key) for p in [r.base, *r.models]]
    # A compact probe (probe.keep_text=compact) kept no text for most wrong samples: it cannot be
    # judged again, and judging only the texts it kept would favour the correct ones.
    compact = [label for label, key in probes if r.store.dropped_texts(key, r.cfg.n)]
    if compact:
        d.add(f"Not re-scored: {', '.join(compact)} (stored with `probe.keep_text=compact`, so most "
              f"wrong completions have no text to judge again).")
        log(f"answer rules: {', '.join(compact)} not re-scored (probe.keep_text=compact)")
    probes = [(label, key) for label, key in probes if label not in compact]
    if not probes:
        return
    rows = answer_rule_rows(r.store, probes, r.task, r.ids, r.cfg.n)
    for row in rows:
        log(f"answer rule {row[1]:>7}: {row[0]} pass@1 {row[3]:.4f} pass@{row[2]} {row[4]:.4f} "
            f"(box share {row[5]:.1%}, truncated {row[6]:.1%})")
    d.table(Table("answer_rules", ["model", "rule", "n", "pass@1", "pass@n", "box share",
                                   "truncated share"], rows),
            caption="pass@1 and pass@n under each answer rule, with the share of completions that "
                    "hold a box and the share cut off with no final answer.")
