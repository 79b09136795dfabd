"""`report.py`: the paper's figures and tables for a base and the models trained from it.

Reads the probe store (never samples) and writes one self-contained folder: `report.md`, its PNG
figures beside it, and a CSV for every table. With `logger=wandb` the figures and tables also go to
a W&B run (job type "report"). The only model work is the perplexity section, which scores stored
responses with the base model.

How it is built: `boundlab.report.comparisons` resolves the inputs and computes every comparison
against the base once; then the header and each registered section
(`boundlab.report.sections.SECTIONS`, in order) render from it into one `Doc`. The numbers come
from `boundlab.report.analysis`, `boundlab.report.perplexity` and `boundlab.probe` (each
unit-tested); the sections only gather, format and write them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from boundlab.config import ConfigError, as_typed, to_dict
from boundlab.probe.store import Store
from boundlab.report import sections
from boundlab.report.comparisons import Report, compute, log
from boundlab.report.schema import ReportMain
from boundlab.report.document import Doc, Table, anchor, plain

# The numbered section headings of report.md, in order ("1. pass@k curves", ...), as registered.
SECTIONS = tuple(sections.headings())


def _rel(path: Any, out: Path) -> str:
    """`path` relative to the report folder, so a moved or shared report names no one's home."""
    try:
        return os.path.relpath(Path(path).resolve(), Path(out).resolve())
    except ValueError:  # another drive (Windows): nothing relative to say
        return str(path)


def _number(title: str) -> int:
    """The number of the registered section `title`."""
    return next(i for i, s in enumerate(sections.SECTIONS, 1) if s.title == title)


def _header(r: Report, d: Doc) -> None:
    cfg, b = r.cfg, r.base
    d.add("# BoundLab report: does training expand the reasoning boundary, or sharpen it?")
    d.add(f"Task **{r.task.name}**, {len(r.ids)} problems, base **{b.entry.model_name or b.entry.key}**. "
          f"pass@k uses the unbiased estimator 1 − C(n−c, k)/C(n, k); every interval is a "
          f"{cfg.ci:.0%} percentile bootstrap over problems ({cfg.bootstrap_iters} resamples, seed "
          f"{cfg.seed}). Numbers come from the probe store `{_rel(r.store.path, d.out)}`; nothing was re-sampled. "
          f"Written {time.strftime('%Y-%m-%d %H:%M:%S')}.")
    if r.metric == "strict":
        d.add("**Headline metric: strict pass@k**: a sample counts only with the right answer *and* a "
              "valid chain of thought. Every pass@k, Δ, coverage cell, crossing and ΔSE below is "
              f"strict; answer-only pass@k is shown beside it (section {_number('pass@k curves')}) with the gap.")
    rows = []
    for p in [r.base, *r.models]:  # pass@1, pass@n: the headline metric
        e = p.entry
        source = e.source if e.run is None else e.source.replace(str(e.run.path), _rel(e.run.path, d.out))
        rows.append([e.label, e.model_name, e.key, source, p.summary.n, p.summary.problems,
                     p.summary.pass1, p.summary.passn, p.summary.solvable])
    d.table(Table("models", ["model", "store name", "probe key", "source", "n", "problems", "pass@1",
                             "pass@n", "solvable"], rows),
            caption="The probes in this report (n: samples per problem used).")
    notes = r.inputs.notes + r.notes
    if notes:
        d.add("Notes:", *[f"- {x}" for x in notes])
    d.add("Contents: " + " · ".join(f"[{s}](#{anchor(s)})" for s in sections.headings()))


def _log_to_logger(r: Report, d: Doc, logger: Any) -> None:
    for t in d.tables:
        logger.log_table(f"report/tables/{t.name}", t.columns, [[plain(v) for v in row] for row in t.rows])
    for png in d.figures:
        logger.log_image(f"report/figures/{png.stem}", png)
    logger.update_summary({k: plain(v) for k, v in r.summary.items()})


def build(cfg: ReportMain, out: Path, store: Store) -> tuple[Report, Doc]:
    """Compute the comparisons, then render the header and every section into one Doc."""
    r = compute(cfg, store)
    d = Doc(out)
    _header(r, d)
    for heading, section in zip(sections.headings(), sections.SECTIONS):
        t1 = time.time()
        d.add(f"## {heading}")
        section.render(r, d)
        log(f"{section.title} in {time.time() - t1:.1f} s")
    for p, vs in r.pairs():
        lab = p.entry.label
        r.summary[f"report/{lab}/pass@1"] = p.summary.pass1
        r.summary[f"report/{lab}/pass@n"] = p.summary.passn
        r.summary[f"report/{lab}/dSE"] = vs.dse.value
        r.summary[f"report/{lab}/crossing_k"] = vs.crossing.k
    r.summary["report/base/pass@1"] = r.base.summary.pass1
    r.summary["report/base/pass@n"] = r.base.summary.passn
    r.summary["report/metric_is_strict"] = int(r.metric == "strict")
    return r, d


def run(cfg: ReportMain) -> Path:
    """report.py's run: `cfg` typed there; a DictConfig (tests) is converted here once."""
    from boundlab.tracking import build_logger

    cfg = as_typed(cfg, ReportMain)
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
        r, d = build(cfg, out, store)
        md = d.write()
        logger = build_logger(cfg.logger, out, to_dict(cfg))
        if getattr(logger, "kind", "none") != "none":
            _log_to_logger(r, d, logger)
        log(f"wrote {md} ({len(d.figures)} figures, {len(d.tables)} tables) in {time.time() - t0:.1f} s")
        return md
    finally:
        if logger is not None:
            logger.finish()
        store.close()
