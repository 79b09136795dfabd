"""`report.py`: the paper's figures and tables for a base and the models trained from it.

Reads the probe store (never samples) and writes one self-contained folder: `report.md`, its PNG
figures beside it, and a CSV for every table. With `logger=wandb` the figures and tables also go to
a W&B run (job type "report"). The only model work is the perplexity section, which scores stored
responses with the base model.

The numbers come from `boundlab.report.analysis`, `boundlab.report.perplexity` and
`boundlab.probe` (each unit-tested); this module only gathers, formats and writes them.
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from boundlab.config import ConfigError, to_dict
from boundlab.probe.store import ProblemCounts, Store
from boundlab.report import analysis as A
from boundlab.report.inputs import Entry, Inputs, resolve_inputs, resolve_task

SECTIONS = ("1. pass@k curves", "2. Sampling-efficiency gap", "3. Solvable-set coverage",
            "4. Perplexity under the base model", "5. Checkpoint progression",
            "6. Algorithm comparison", "7. Case studies", "8. Breakdown by problem tag")


# -- the document -------------------------------------------------------------------------------
@dataclass
class Table:
    name: str  # file stem: <name>.csv, W&B key report/<name>
    columns: list[str]
    rows: list[list[Any]]


def fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "–"
        if math.isinf(v):
            return "∞" if v > 0 else "-∞"
        return f"{v:.{digits}f}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def _csv_value(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (list, tuple)):
        return " ".join(map(str, v))
    return "" if v is None else v


def _plain(v: Any) -> Any:
    """A W&B-table-friendly value (no inf/nan, no numpy scalars, no lists)."""
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (list, tuple)):
        return " ".join(map(str, v))
    return v


class Doc:
    """report.md under construction, and the CSV and PNG files it links."""

    def __init__(self, out: Path):
        self.out = out
        self.lines: list[str] = []
        self.tables: list[Table] = []
        self.figures: list[Path] = []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)
        self.lines.append("")

    def csv(self, t: Table) -> Path:
        """Write `<name>.csv` (every column and row); it is logged to W&B with the rest."""
        path = self.out / f"{t.name}.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(t.columns)
            for r in t.rows:
                w.writerow([_csv_value(v) for v in r])
        self.tables.append(t)
        return path

    def table(self, t: Table, md_columns: Sequence[str] | None = None, max_rows: int | None = None,
              caption: str = "") -> None:
        """Write `<name>.csv` and show the table (or some of its columns) in report.md."""
        path = self.csv(t)
        cols = list(md_columns or t.columns)
        idx = [t.columns.index(c) for c in cols]
        rows = t.rows if max_rows is None else t.rows[:max_rows]
        md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        md += ["| " + " | ".join(fmt(r[i]) for i in idx) + " |" for r in rows]
        more = f" ({len(t.rows) - len(rows)} more rows in the CSV)" if len(rows) < len(t.rows) else ""
        self.add(*md)
        self.add(f"{caption}{' ' if caption else ''}Table: [{path.name}]({path.name}){more}.")

    def figure(self, path: Path, alt: str) -> None:
        self.figures.append(path)
        self.add(f"![{alt}]({path.name})")

    def write(self) -> Path:
        path = self.out / "report.md"
        path.write_text("\n".join(self.lines).rstrip() + "\n", encoding="utf-8")
        return path


# -- the data -----------------------------------------------------------------------------------
@dataclass
class Probe:
    """One probe's counts on the report's problems, and its pass@k summary."""
    entry: Entry
    n: np.ndarray
    c: np.ndarray
    summary: A.Summary


@dataclass
class Context:
    cfg: Any
    store: Store
    inputs: Inputs
    ids: list[str]
    task: Any
    base: Probe
    models: list[Probe]
    doc: Doc
    notes: list[str] = field(default_factory=list)
    deltas: dict[str, A.DeltaSE] = field(default_factory=dict)
    crossings: dict[str, A.Crossing] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    # {meta field: {problem id: tag}} for the breakdown section.
    tags: dict[str, dict[str, str]] = field(default_factory=dict)


def _counts(store: Store, key: str, n_max: int | None) -> dict[str, ProblemCounts]:
    return {pc.problem_id: pc for pc in store.counts(key, n_max=n_max)}


def _probe(ctx_cfg: Any, entry: Entry, counts: dict[str, ProblemCounts], ids: list[str]) -> Probe:
    n = np.array([counts[p].n for p in ids], dtype=np.int64)
    c = np.array([counts[p].c for p in ids], dtype=np.int64)
    return Probe(entry, n, c, A.summarize(n, c, ctx_cfg.bootstrap_iters, ctx_cfg.ci, ctx_cfg.seed))


def _log(msg: str) -> None:
    print(f"[boundlab] report: {msg}", flush=True)


# -- sections -----------------------------------------------------------------------------------
def _header(ctx: Context) -> None:
    d, cfg = ctx.doc, ctx.cfg
    b = ctx.base
    d.add("# BoundLab report: does training expand the reasoning boundary, or sharpen it?")
    d.add(f"Task **{ctx.task.name}**, {len(ctx.ids)} problems, base **{b.entry.model_name or b.entry.key}**. "
          f"pass@k uses the unbiased estimator 1 − C(n−c, k)/C(n, k); every interval is a "
          f"{cfg.ci:.0%} percentile bootstrap over problems ({cfg.bootstrap_iters} resamples, seed "
          f"{cfg.seed}). Numbers come from the probe store `{ctx.store.path}`; nothing was re-sampled. "
          f"Written {time.strftime('%Y-%m-%d %H:%M:%S')}.")
    rows = []
    for p in [ctx.base, *ctx.models]:
        e = p.entry
        rows.append([e.label, e.model_name, e.key, e.source, p.summary.n, p.summary.problems,
                     p.summary.pass1, p.summary.passn, p.summary.solvable])
    d.table(Table("models", ["model", "store name", "probe key", "source", "n", "problems", "pass@1",
                             "pass@n", "solvable"], rows),
            caption="The probes in this report (n: samples per problem used).")
    notes = ctx.inputs.notes + ctx.notes
    if notes:
        d.add("Notes:", *[f"- {x}" for x in notes])
    d.add("Contents: " + " · ".join(f"[{s}](#{_anchor(s)})" for s in SECTIONS))


def _anchor(title: str) -> str:
    keep = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -")
    return keep.replace(" ", "-")


def _passk_section(ctx: Context) -> None:
    from boundlab.probe.estimator import powers_of_two
    from boundlab.tracking.plots import plot_passk

    d, cfg, base = ctx.doc, ctx.cfg, ctx.base
    d.add(f"## {SECTIONS[0]}")
    curves = {}
    long_rows = []
    for p in [base, *ctx.models]:
        s = p.summary
        ks = np.arange(1, s.n + 1)
        curves[p.entry.label] = (ks, s.curve, s.ci_low, s.ci_high)
        long_rows += [[p.entry.label, int(k), float(v), float(lo), float(hi)]
                      for k, v, lo, hi in zip(ks, s.curve, s.ci_low, s.ci_high)]
    png = plot_passk(curves, ctx.doc.out / "passk.png",
                     title=f"pass@k on {ctx.task.name} ({len(ctx.ids)} problems)")
    d.figure(png, "pass@k curves")
    kmax = max(p.summary.n for p in [base, *ctx.models])
    ks = powers_of_two(kmax)
    wide = []
    for p in [base, *ctx.models]:
        pts = A.passk_points(p.summary.curve)
        wide.append([p.entry.label] + [pts.get(k) for k in ks])
    d.table(Table("passk_summary", ["model"] + [f"pass@{k}" for k in ks], wide),
            caption="pass@k at powers of two (– where k > the model's n).")
    t = Table("passk", ["model", "k", "pass@k", "ci_low", "ci_high"], long_rows)
    d.csv(t)
    d.add("Every k with its interval: [passk.csv](passk.csv).")

    d.add("### Crossing k",
          "The k at which the model's pass@k falls strictly below the base's (interpolated in log2 k on "
          "the difference of the mean curves). Its interval resamples problems and recomputes both "
          "curves and the crossing; a resample that does not cross by n counts as beyond n.")
    rows = []
    for p in ctx.models:
        cr = A.crossing_with_ci(base.summary.per_problem, p.summary.per_problem, cfg.bootstrap_iters,
                                cfg.ci, cfg.seed)
        ctx.crossings[p.entry.label] = cr
        rows.append([p.entry.label, cr.status, cr.k, cr.ci_low, cr.ci_high, cr.n, cr.p_cross,
                     cr.describe(cfg.ci)])
    if rows:
        d.table(Table("crossing", ["model", "status", "crossing_k", "ci_low", "ci_high", "n",
                                   "p_cross", "crossing"], rows), md_columns=["model", "crossing"])
    else:
        d.add("No models to compare.")
    _answer_rules(ctx)


def _answer_rules(ctx: Context) -> None:
    """pass@k with boxed answers only and with the lenient rule, every probe rescored."""
    from boundlab.report.answer_rules import answer_rule_rows

    if getattr(ctx.task, "verifier", None) != "math":
        return
    d = ctx.doc
    d.add("### Answer format: boxed vs lenient",
          "Every stored completion judged again under both answer rules (no resampling): `boxed` "
          "counts boxed answers only (the usual RL reward), `lenient` also reads a final answer "
          "stated without a box. A gap between the base and a model that appears only under "
          "`boxed` is a change of answer format, not of reasoning boundary.")
    probes = [(p.entry.label, p.entry.key) for p in [ctx.base, *ctx.models]]
    rows = answer_rule_rows(ctx.store, probes, ctx.task, ctx.ids, ctx.cfg.n)
    for r in rows:
        _log(f"answer rule {r[1]:>7}: {r[0]} pass@1 {r[3]:.4f} pass@{r[2]} {r[4]:.4f} "
             f"(box share {r[5]:.1%}, truncated {r[6]:.1%})")
    d.table(Table("answer_rules", ["model", "rule", "n", "pass@1", "pass@n", "box share",
                                   "truncated share"], rows),
            caption="pass@1 and pass@n under each answer rule, with the share of completions that "
                    "hold a box and the share cut off with no final answer.")


def _dse_section(ctx: Context) -> None:
    d, cfg, base = ctx.doc, ctx.cfg, ctx.base
    d.add(f"## {SECTIONS[1]}")
    used = min(cfg.dse_k, base.summary.n)
    which = (f"k = {used}" if used == cfg.dse_k else
             f"k = n = {used}, since the base has n = {base.summary.n} < {cfg.dse_k} samples")
    d.add(f"ΔSE = pass@1(model) − pass@k(base), at {which}. Near zero: the model's single try is as "
          f"good as the base's best of k (sampling efficiency only); well below zero: the base's "
          f"boundary is out of the model's single-sample reach.")
    rows = []
    for p in ctx.models:
        dse = A.delta_se(base.summary.per_problem, p.summary.per_problem, cfg.dse_k,
                         cfg.bootstrap_iters, cfg.ci, cfg.seed)
        ctx.deltas[p.entry.label] = dse
        rows.append([p.entry.label, dse.k, dse.k_label(), dse.model_pass1, dse.base_passk, dse.value,
                     dse.ci_low, dse.ci_high])
    if rows:
        d.table(Table("delta_se", ["model", "k", "k_used", "model pass@1", "base pass@k", "dSE",
                                   "ci_low", "ci_high"], rows),
                md_columns=["model", "k_used", "model pass@1", "base pass@k", "dSE", "ci_low", "ci_high"])
    else:
        d.add("No models to compare.")


def _id_list(ids: Sequence[str], limit: int) -> str:
    if not ids:
        return "none"
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    return shown + (f" … and {len(ids) - limit} more" if len(ids) > limit else "")


def _coverage_section(ctx: Context) -> None:
    from boundlab.report.plots import plot_coverage

    d, cfg, base = ctx.doc, ctx.cfg, ctx.base
    d.add(f"## {SECTIONS[2]}")
    d.add("A problem is solvable by a model when at least one of its n samples is correct (c > 0). "
          "Training that only sharpens leaves the model's solvable set inside the base's.")
    rows, long_rows, cov_rows, labels = [], [], [], []
    for p in ctx.models:
        cov = A.coverage(ctx.ids, base.c, p.c)
        k = cov.counts()
        rows.append([p.entry.label, k["both"], k["base_only"], k["model_only"], k["neither"],
                     base.summary.solvable, p.summary.solvable, cov.is_subset, cov.outside_base])
        cov_rows.append(k)
        labels.append(p.entry.label)
        for cell in ("base_only", "model_only", "both", "neither"):
            long_rows += [[p.entry.label, cell, pid] for pid in getattr(cov, cell)]
        verdict = ("inside the base's (a subset)" if cov.is_subset else
                   f"not inside the base's: {cov.outside_base} problem(s) only the model solves")
        d.add(f"**{p.entry.label}**: solvable set {verdict}.",
              f"- base only ({k['base_only']}): {_id_list(cov.base_only, cfg.list_ids)}",
              f"- model only ({k['model_only']}): {_id_list(cov.model_only, cfg.list_ids)}",
              f"- both ({k['both']}): {_id_list(cov.both, cfg.list_ids)}",
              f"- neither ({k['neither']}): {_id_list(cov.neither, cfg.list_ids)}")
    if not rows:
        d.add("No models to compare.")
        return
    png = plot_coverage(cov_rows, labels, d.out / "coverage.png")
    d.figure(png, "solvable-set coverage")
    d.table(Table("coverage", ["model", "both", "base_only", "model_only", "neither", "base_solvable",
                               "model_solvable", "subset_of_base", "outside_base"], rows))
    t = Table("coverage_problems", ["model", "cell", "problem_id"], long_rows)
    d.csv(t)
    per = [[pid, int(base.n[i]), int(base.c[i])] + [int(x) for p in ctx.models for x in (p.n[i], p.c[i])]
           for i, pid in enumerate(ctx.ids)]
    t2 = Table("problems", ["problem_id", "base_n", "base_c"] +
               [f"{p.entry.label} {x}" for p in ctx.models for x in ("n", "c")], per)
    d.csv(t2)
    d.add("Every problem id by cell: [coverage_problems.csv](coverage_problems.csv); "
          "(n, c) per problem and model: [problems.csv](problems.csv).")


def _rows_within_n(rows: list[Any], n_max: int | None) -> list[Any]:
    """Keep each problem's first n_max samples by index (the samples the counts use)."""
    if n_max is None:
        return rows
    seen: dict[str, int] = {}
    out = []
    for r in sorted(rows, key=lambda r: (r.problem_id, r.idx)):
        seen[r.problem_id] = seen.get(r.problem_id, 0) + 1
        if seen[r.problem_id] <= n_max:
            out.append(r)
    return out


# Store.samples returns every sample's text; at n = 1024 on 500 problems that is gigabytes. The
# perplexity draw needs only (problem, idx, correct) of all samples and the text of the few drawn,
# so these two read the samples table directly (its schema lives in boundlab.probe.store).
def _sample_index(store: Store, key: str) -> list[Any]:
    from types import SimpleNamespace

    return [SimpleNamespace(problem_id=pid, idx=idx, correct=bool(c)) for pid, idx, c in
            store.db.execute("SELECT problem_id, idx, correct FROM samples WHERE key=?", (key,))]


def _sample_text(store: Store, key: str, problem_id: str, idx: int) -> str:
    row = store.db.execute("SELECT text FROM samples WHERE key=? AND problem_id=? AND idx=?",
                           (key, problem_id, idx)).fetchone()
    return row[0]


def _scorer(cfg: Any, inputs: Inputs) -> tuple[Any, str]:
    """The base model's config namespace and folder for scoring."""
    from types import SimpleNamespace

    from boundlab.models import ModelNotFound, resolve_model_path

    pc = cfg.perplexity
    run = inputs.base.run
    run_model = getattr(run.config, "model", None) if run is not None and run.config is not None else None
    trust = bool(getattr(run_model, "trust_remote_code", False))
    ns = dict(name="base", dtype=pc.dtype, trust_remote_code=trust, allow_download=False,
              gguf_package=None, gguf_file=None, cache_dir=".")
    if pc.model_path:
        given = SimpleNamespace(**ns, path=pc.model_path)
        return given, resolve_model_path(given)
    meta_path = inputs.base.meta.get("path")
    if meta_path and Path(meta_path).is_dir():
        return SimpleNamespace(**ns, path=meta_path), str(meta_path)
    if run is not None and run.config is not None:
        resolved = resolve_model_path(run.config.model)
        return SimpleNamespace(**ns, path=resolved), resolved
    raise ModelNotFound(
        f"the perplexity section needs the base model, and its folder is unknown "
        f"(probe meta.path={meta_path!r}): set perplexity.model_path=... or perplexity.enabled=false")


def _perplexity_section(ctx: Context) -> None:
    from boundlab.models import load_model, load_tokenizer
    from boundlab.report.perplexity import perplexity, response_logprobs, sample_responses
    from boundlab.report.plots import plot_perplexity
    from boundlab.sampling import pick_device

    d, cfg = ctx.doc, ctx.cfg
    pc = cfg.perplexity
    d.add(f"## {SECTIONS[3]}")
    if not pc.enabled:
        d.add("Skipped (perplexity.enabled=false).")
        return
    which = "correct responses" if pc.only_correct else "responses"
    d.add(f"The base model's perplexity exp(−mean token log-prob of the response given the prompt) on "
          f"up to {pc.samples} {which} per group, drawn at random (seed {pc.seed}). Responses the base "
          f"finds likely (low perplexity) are ones it could already produce.")
    mcfg, path = _scorer(cfg, ctx.inputs)
    from boundlab.probe.app import set_threads

    set_threads(pc.torch_threads)
    t0 = time.time()
    tok = load_tokenizer(mcfg, path)
    model = load_model(mcfg, pick_device(pc.device), path)
    _log(f"scoring model {path} loaded in {time.time() - t0:.1f} s")
    groups = [(ctx.base.entry.label, ctx.base.entry)] + [(p.entry.label, p.entry) for p in ctx.models]
    if ctx.inputs.teacher is not None:
        groups.append(("teacher", ctx.inputs.teacher))
    id_set = set(ctx.ids)
    summary_rows, resp_rows, values = [], [], {}
    for label, entry in groups:
        rows = [r for r in _sample_index(ctx.store, entry.key) if r.problem_id in id_set]
        rows = _rows_within_n(rows, cfg.n)
        if pc.only_correct:
            rows = [r for r in rows if r.correct]
        picked = sample_responses(rows, pc.samples, pc.seed)
        pairs = [(ctx.task.render(ctx.task.by_id(r.problem_id), tok),
                  _sample_text(ctx.store, entry.key, r.problem_id, r.idx)) for r in picked]
        lps = response_logprobs(model, tok, pairs, pc.batch_tokens)
        ppl = [perplexity(lp) for lp in lps]
        kept = [v for v in ppl if math.isfinite(v)]
        values[label] = kept
        st = A.box_stats(kept)
        summary_rows.append([label, entry.key, len(rows), len(picked), len(picked) - len(kept),
                             st["count"], st["median"], st["mean"], st["q1"], st["q3"], st["min"], st["max"]])
        resp_rows += [[label, r.problem_id, r.idx, len(lp), v] for r, lp, v in zip(picked, lps, ppl)]
    _log(f"perplexity of {len(resp_rows)} responses in {time.time() - t0:.1f} s")
    png = plot_perplexity(values, d.out / "perplexity.png",
                          title=f"Base-model perplexity of {which}")
    d.figure(png, "perplexity box plots")
    d.table(Table("perplexity", ["group", "probe key", "available", "drawn", "empty", "scored",
                                 "median", "mean", "q1", "q3", "min", "max"], summary_rows),
            md_columns=["group", "available", "scored", "median", "mean", "q1", "q3"],
            caption=f"Scored by {path}. available: {which} in the store on the report's problems.")
    t = Table("perplexity_responses", ["group", "problem_id", "idx", "tokens", "perplexity"], resp_rows)
    d.csv(t)
    d.add("Each scored response: [perplexity_responses.csv](perplexity_responses.csv).")
    for label, st_row in zip([g[0] for g in groups], summary_rows):
        ctx.summary[f"report/perplexity/{label}/median"] = st_row[6]


def _progression_section(ctx: Context) -> None:
    from boundlab.report.plots import plot_progression

    d, cfg, base = ctx.doc, ctx.cfg, ctx.base
    d.add(f"## {SECTIONS[4]}")
    if not ctx.inputs.runs:
        d.add("No training runs given (runs=[RUN_DIR,...] or sweeps=[SWEEP_DIR,...]).")
        return
    d.add(f"pass@1 and pass@n of every probed checkpoint, against the base on the same "
          f"{len(ctx.ids)} problems (Δ: checkpoint − base at the same n; lost/gained: base-solvable "
          f"problems no longer solved, and problems newly solved).")
    rows, series = [], {}
    for run in ctx.inputs.runs:
        if run.base_key not in (None, base.entry.key):
            ctx.doc.add(f"Note: run {run.path} started from another base probe ({run.base_key}); its "
                        f"deltas below are still against this report's base.")
        steps, p1, pn = [0], [base.summary.pass1], [base.summary.passn]
        for step, key in run.checkpoints():
            counts = _counts(ctx.store, key, cfg.n)
            if ctx.store.probe_info(key) is None or any(pid not in counts for pid in ctx.ids):
                ctx.doc.add(f"Note: {run.label} step {step}: probe {key} lacks some of the report's "
                            f"problems in this store; left out.")
                continue
            s = A.summarize([counts[p].n for p in ctx.ids], [counts[p].c for p in ctx.ids],
                            cfg.bootstrap_iters, cfg.ci, cfg.seed)
            r = A.checkpoint_row(base.summary, s, base.c, [counts[p].c for p in ctx.ids], ctx.ids)
            rows.append([run.label, run.algo, step, key, r["n"], r["pass@1"], r["pass@1_ci_low"],
                         r["pass@1_ci_high"], r["pass@n"], r["delta_pass@1"], r["delta_pass@n"],
                         r["solvable"], r["lost"], r["gained"]])
            steps.append(step)
            p1.append(r["pass@1"])
            pn.append(r["pass@n"])
        series[run.label] = (steps, p1, pn)
    base_rows = [["base", "", 0, base.entry.key, base.summary.n, base.summary.pass1,
                  base.summary.pass1_ci[0], base.summary.pass1_ci[1], base.summary.passn, 0.0, 0.0,
                  base.summary.solvable, 0, 0]]
    png = plot_progression(series, base.summary.pass1, base.summary.passn, base.summary.n,
                           d.out / "progression.png")
    d.figure(png, "checkpoint progression")
    d.table(Table("progression", ["run", "algo", "step", "probe key", "n", "pass@1", "pass@1_ci_low",
                                  "pass@1_ci_high", "pass@n", "delta_pass@1", "delta_pass@n",
                                  "solvable", "lost", "gained"], base_rows + rows),
            md_columns=["run", "step", "n", "pass@1", "pass@n", "delta_pass@1", "delta_pass@n",
                        "solvable", "lost", "gained"])


def _algo_section(ctx: Context) -> None:
    from boundlab.report.plots import plot_grouped_bars

    d, base = ctx.doc, ctx.base
    d.add(f"## {SECTIONS[5]}")
    finals = [p for p in ctx.models if p.entry.run is not None]
    if not finals:
        d.add("No training runs given (runs=[...] or sweeps=[...]): nothing to compare by algorithm.")
        return
    d.add("Each run's final checkpoint against the base: pass@1 (sharpening), pass@n (the boundary), "
          "ΔSE and the crossing k.")
    rows = [["base", "", None, base.summary.n, base.summary.pass1, base.summary.passn, None, None, ""]]
    for p in finals:
        dse, cr = ctx.deltas[p.entry.label], ctx.crossings[p.entry.label]
        rows.append([p.entry.label, p.entry.run.algo, p.entry.step, p.summary.n, p.summary.pass1,
                     p.summary.passn, dse.value, dse.k, cr.describe(ctx.cfg.ci)])
    d.table(Table("algorithms", ["run", "algo", "step", "n", "pass@1", "pass@n", "dSE", "dSE_k",
                                 "crossing"], rows))
    labels = [r[0] for r in rows]
    probes = [base] + finals
    ns = {p.summary.n for p in probes}
    pn = f"pass@{ns.pop()}" if len(ns) == 1 else "pass@n"
    png = plot_grouped_bars(
        labels, {"pass@1": [p.summary.pass1 for p in probes], pn: [p.summary.passn for p in probes]},
        d.out / "algorithms.png", title=f"Final checkpoints against the base ({ctx.cfg.ci:.0%} CI)",
        errors={"pass@1": ([p.summary.pass1_ci[0] for p in probes], [p.summary.pass1_ci[1] for p in probes]),
                pn: ([p.summary.passn_ci[0] for p in probes], [p.summary.passn_ci[1] for p in probes])})
    d.figure(png, "algorithm comparison")


def _case_section(ctx: Context) -> None:
    d, cfg, base = ctx.doc, ctx.cfg, ctx.base
    d.add(f"## {SECTIONS[6]}")
    models = {p.entry.label: (p.n, p.c) for p in ctx.models}
    if not models:
        d.add("No models to compare.")
        return
    cases = A.case_studies(ctx.ids, base.n, base.c, models)
    none_solve = sum(1 for c in cases if len(c.missed_by) == len(models))
    d.add(f"Problems the base solves and a model never does: {len(cases)} ({none_solve} that no model "
          f"solves). Shown: up to {cfg.case_studies}, those no model solves first, then by the base's "
          f"success rate; with the first correct base trace (one with a valid chain of thought when "
          f"the verifier can tell).")
    rows = []
    for i, case in enumerate(cases):
        prob = ctx.task.by_id(case.problem_id)
        trace = A.pick_trace(ctx.store.samples(base.entry.key, case.problem_id, correct=True)) \
            if i < cfg.case_studies else None
        rows.append([case.problem_id, prob.question, prob.answer, f"{case.base_c}/{case.base_n}"]
                    + [f"{c}/{n}" for c, n in case.models.values()]
                    + [len(case.missed_by), None if trace is None else trace.idx,
                       None if trace is None else trace.text])
        if i >= cfg.case_studies:
            continue
        d.add(f"### {case.problem_id}", "Problem:", "```text", prob.question.strip(), "```",
              f"Gold answer: `{prob.answer}`")
        cn = [["base", f"{case.base_c}/{case.base_n}"]]
        cn += [[m, f"{c}/{n}"] for m, (c, n) in case.models.items()]
        d.add("| model | correct / n |", "|---|---|", *[f"| {fmt(a)} | {b} |" for a, b in cn])
        if trace is not None:
            cut = cfg.trace_chars
            text = trace.text if cut is None or len(trace.text) <= cut else \
                trace.text[:cut] + f"\n... ({len(trace.text) - cut} more characters in case_studies.csv)"
            valid = ", with a valid chain of thought" if trace.strict else ""
            d.add(f"A correct base trace (sample {trace.idx}{valid}):", "```text", text, "```")
    if not cases:
        d.add("None: every problem the base solves, every model solves too.")
    t = Table("case_studies", ["problem_id", "question", "answer", "base c/n"] +
              [f"{m} c/n" for m in models] + ["missed_by", "trace_idx", "base_trace"], rows)
    d.csv(t)
    d.add("All cases: [case_studies.csv](case_studies.csv) (traces for the ones shown).")


def _breakdown_section(ctx: Context) -> None:
    from boundlab.report.plots import plot_breakdown

    d = ctx.doc
    d.add(f"## {SECTIONS[7]}")
    tags = ctx.tags
    if not tags:
        d.add(f"The task tags no problems ({', '.join(A.TAG_FIELDS)} in Problem.meta, with at least "
              f"two values); breakdown=[FIELD] names another meta field.")
        return
    for f, per in tags.items():
        d.add(f"### By `{f}`")
        rows = []
        probes = [ctx.base, *ctx.models]
        for p in probes:
            for r in A.breakdown(ctx.ids, per, p.summary.per_problem, p.c):
                rows.append([p.entry.label, r["tag"], r["problems"], r["solvable"], r["pass@1"], r["pass@n"]])
        d.table(Table(f"breakdown_{f}", ["model", f, "problems", "solvable", "pass@1", "pass@n"], rows))
        order = [r["tag"] for r in A.breakdown(ctx.ids, per, ctx.base.summary.per_problem)]
        ns = {p.summary.n for p in probes}
        pn = f"pass@{ns.pop()}" if len(ns) == 1 else "pass@n"
        panels: dict[str, dict[str, list[float]]] = {"pass@1": {}, pn: {}}
        for p in probes:
            vals = {r[1]: (r[4], r[5]) for r in rows if r[0] == p.entry.label}
            panels["pass@1"][p.entry.label] = [vals[t][0] for t in order]
            panels[pn][p.entry.label] = [vals[t][1] for t in order]
        png = plot_breakdown([f"{f}={t}" for t in order], panels, d.out / f"breakdown_{f}.png",
                             title=f"pass@1 and {pn} by {f}")
        d.figure(png, f"breakdown by {f}")


# -- W&B ----------------------------------------------------------------------------------------
def _log_to_logger(ctx: Context, logger: Any) -> None:
    for t in ctx.doc.tables:
        logger.log_table(f"report/tables/{t.name}", t.columns, [[_plain(v) for v in r] for r in t.rows])
    for png in ctx.doc.figures:
        logger.log_image(f"report/figures/{png.stem}", png)
    logger.update_summary({k: _plain(v) for k, v in ctx.summary.items()})


# -- entry --------------------------------------------------------------------------------------
def build(cfg: Any, out: Path, store: Store) -> Context:
    t0 = time.time()
    inputs = resolve_inputs(cfg, store)
    entries = [inputs.base, *inputs.models]
    counts = {e.key: _counts(store, e.key, cfg.n) for e in entries}
    ids = A.common_problems([{pid: pc.n for pid, pc in counts[e.key].items()} for e in entries])
    if not ids:
        raise ConfigError("the base and the models share no probed problem: were they probed on "
                          "the same task?")
    notes = []
    for e in entries:
        extra = len(counts[e.key]) - len(ids)
        if extra:
            notes.append(f"{e.label}: {extra} of its probed problems are not probed for every model; "
                         f"left out (the report uses the {len(ids)} problems common to all)")
        if e.task_fp != inputs.base.task_fp:
            notes.append(f"{e.label} was probed on another task configuration than the base "
                         f"(task fingerprint {e.task_fp} vs {inputs.base.task_fp})")
    task, tnotes = resolve_task(cfg, inputs, store, ids)
    notes += tnotes
    base = _probe(cfg, inputs.base, counts[inputs.base.key], ids)
    models = [_probe(cfg, e, counts[e.key], ids) for e in inputs.models]
    ns = {p.summary.n for p in [base, *models]}
    if len(ns) > 1:
        notes.append(f"samples per problem differ between probes ({sorted(ns)}): each curve runs to "
                     f"its own n, and comparisons use the smaller n")
    metas = {pid: task.by_id(pid).meta for pid in ids}
    try:  # checked before any section runs: a wrong field name fails fast
        tags = A.problem_tags(metas, list(cfg.breakdown) if cfg.breakdown is not None else None)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    ctx = Context(cfg, store, inputs, ids, task, base, models, Doc(out), notes, tags=tags)
    _log(f"{len(models)} model(s) against the base on {len(ids)} problems "
         f"(read in {time.time() - t0:.1f} s)")
    _header(ctx)
    for section in (_passk_section, _dse_section, _coverage_section, _perplexity_section,
                    _progression_section, _algo_section, _case_section, _breakdown_section):
        t1 = time.time()
        section(ctx)
        _log(f"{section.__name__.strip('_').replace('_', ' ')} in {time.time() - t1:.1f} s")
    for p in models:
        lab = p.entry.label
        ctx.summary[f"report/{lab}/pass@1"] = p.summary.pass1
        ctx.summary[f"report/{lab}/pass@n"] = p.summary.passn
        ctx.summary[f"report/{lab}/dSE"] = ctx.deltas[lab].value
        ctx.summary[f"report/{lab}/crossing_k"] = ctx.crossings[lab].k
    ctx.summary["report/base/pass@1"] = base.summary.pass1
    ctx.summary["report/base/pass@n"] = base.summary.passn
    return ctx


def run(cfg: Any) -> Path:
    from boundlab.tracking import build_logger

    if not cfg.base:
        raise ConfigError("base is required: a training run dir, a sweep dir, a probe key or a "
                          "model name in the store (base=outputs/train/...)")
    out = Path(cfg.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    store_path = Path(str(cfg.store.path)).expanduser()
    if not store_path.is_file():
        raise FileNotFoundError(f"no probe store at {store_path} (store.path, or BOUNDLAB_STORE)")
    store = Store(store_path, writable=False)  # the report only reads: a read-only store will do
    logger = None
    try:
        t0 = time.time()
        ctx = build(cfg, out, store)
        md = ctx.doc.write()
        logger = build_logger(cfg.logger, out, to_dict(cfg))
        if getattr(logger, "kind", "none") != "none":
            _log_to_logger(ctx, logger)
        _log(f"wrote {md} ({len(ctx.doc.figures)} figures, {len(ctx.doc.tables)} tables) "
             f"in {time.time() - t0:.1f} s")
        return md
    finally:
        if logger is not None:
            logger.finish()
        store.close()
