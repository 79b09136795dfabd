"""Perplexity under the base model of each group's responses (the report's only model work).

The draw needs (problem, index, correct) of every sample but the text of only the few drawn, so it
lists samples without their texts (`Store.sample_index`) and reads the drawn texts one by one.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from boundlab.config import ModelConfig
from boundlab.report import analysis as A
from boundlab.report.comparisons import Report, log
from boundlab.report.document import Doc, Table
from boundlab.report.inputs import Inputs
from boundlab.report.schema import ReportMain


def rows_within_n(rows: list[Any], n_max: int | None) -> list[Any]:
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


def scorer(cfg: ReportMain, inputs: Inputs) -> tuple[ModelConfig, str]:
    """The base model's config and folder for scoring."""
    from boundlab.models import ModelNotFound, resolve_model_path

    pc = cfg.perplexity
    run = inputs.base.run
    run_model = getattr(run.config, "model", None) if run is not None and run.config is not None else None
    trust = bool(getattr(run_model, "trust_remote_code", False))
    scoring = ModelConfig(name="base", dtype=pc.dtype, trust_remote_code=trust, allow_download=False,
                          gguf_package=None, gguf_file=None, cache_dir=".")
    if pc.model_path:
        given = replace(scoring, path=pc.model_path)
        return given, resolve_model_path(given)
    meta_path = inputs.base.meta.get("path")
    if meta_path and Path(meta_path).is_dir():
        return replace(scoring, path=meta_path), str(meta_path)
    if run is not None and run.config is not None:
        resolved = resolve_model_path(run.config.model)
        return replace(scoring, path=resolved), resolved
    raise ModelNotFound(
        f"the perplexity section needs the base model, and its folder is unknown "
        f"(probe meta.path={meta_path!r}): set perplexity.model_path=... or perplexity.enabled=false")


def render(r: Report, d: Doc) -> None:
    from boundlab.models import load_model, load_tokenizer
    from boundlab.probe.app import set_threads
    from boundlab.report.perplexity import (draw_per_tag, perplexity, response_logprobs,
                                            sample_responses)
    from boundlab.report.plots import plot_perplexity
    from boundlab.sampling import pick_device

    cfg = r.cfg
    pc = cfg.perplexity
    if not pc.enabled:
        d.add("Skipped (perplexity.enabled=false).")
        return
    which = "correct responses" if pc.only_correct else "responses"
    if not pc.only_correct:
        # Random responses include wrong ones, and a compact probe kept few of their texts.
        entries = [r.base.entry, *[p.entry for p in r.models]] + \
            ([r.inputs.teacher] if r.inputs.teacher is not None else [])
        compact = [e.label for e in entries if r.store.dropped_texts(e.key, cfg.n)]
        if compact:
            d.add(f"Skipped: {', '.join(compact)} stored with `probe.keep_text=compact` keep no text "
                  f"for most wrong responses; set perplexity.only_correct=true (correct responses "
                  f"always keep theirs).")
            return
    d.add(f"The base model's perplexity exp(−mean token log-prob of the response given the prompt) on "
          f"up to {pc.samples} {which} per group, drawn at random (seed {pc.seed}). Responses the base "
          f"finds likely (low perplexity) are ones it could already produce.")
    mcfg, path = scorer(cfg, r.inputs)
    set_threads(pc.torch_threads)
    t0 = time.time()
    tok = load_tokenizer(mcfg, path)
    model = load_model(mcfg, pick_device(pc.device), path)
    log(f"scoring model {path} loaded in {time.time() - t0:.1f} s")
    groups = [(r.base.entry.label, r.base.entry)] + [(p.entry.label, p.entry) for p in r.models]
    if r.inputs.teacher is not None:
        groups.append(("teacher", r.inputs.teacher))
    id_set = set(r.ids)
    summary_rows, resp_rows, values = [], [], {}
    # Fig. 6 per tag (the task's breakdown field, toy2's tier): up to perplexity.samples per tier.
    tag_field = next(iter(r.tags), None)
    tag_of = r.tags.get(tag_field, {}) if tag_field else {}
    by_tag: dict[str, dict[str, list[float]]] = {}
    for label, entry in groups:
        rows = [SimpleNamespace(problem_id=pid, idx=idx, correct=ok)
                for pid, idx, ok in r.store.sample_index(entry.key) if pid in id_set]
        rows = rows_within_n(rows, cfg.n)
        if pc.only_correct:
            rows = [s for s in rows if s.correct]
        picked = sample_responses(rows, pc.samples, pc.seed)
        per_tag = draw_per_tag(rows, tag_of, pc.samples, pc.seed) if tag_of else {}
        # Every drawn response is scored once, whether the overall draw or a tier's drew it.
        todo = {(s.problem_id, s.idx): s for s in picked}
        todo.update({(s.problem_id, s.idx): s for v in per_tag.values() for s in v})
        order = sorted(todo)
        pairs = [(r.task.render(r.task.by_id(pid), tok), r.store.sample_text(entry.key, pid, idx))
                 for pid, idx in order]
        scored = dict(zip(order, response_logprobs(model, tok, pairs, pc.batch_tokens)))
        lps = [scored[(s.problem_id, s.idx)] for s in picked]
        ppl = [perplexity(lp) for lp in lps]
        for tag, drawn in per_tag.items():
            vals = [perplexity(scored[(s.problem_id, s.idx)]) for s in drawn]
            by_tag.setdefault(tag, {})[label] = [v for v in vals if math.isfinite(v)]
        kept = [v for v in ppl if math.isfinite(v)]
        values[label] = kept
        st = A.box_stats(kept)
        summary_rows.append([label, entry.key, len(rows), len(picked), len(picked) - len(kept),
                             st["count"], st["median"], st["mean"], st["q1"], st["q3"], st["min"], st["max"]])
        resp_rows += [[label, s.problem_id, s.idx, len(lp), v] for s, lp, v in zip(picked, lps, ppl)]
    log(f"perplexity of {len(resp_rows)} responses in {time.time() - t0:.1f} s")
    png = plot_perplexity(values, d.out / "perplexity.png",
                          title=f"Base-model perplexity of {which}")
    d.figure(png, "perplexity box plots")
    d.table(Table("perplexity", ["group", "probe key", "available", "drawn", "empty", "scored",
                                 "median", "mean", "q1", "q3", "min", "max"], summary_rows),
            md_columns=["group", "available", "scored", "median", "mean", "q1", "q3"],
            caption=f"Scored by {path}. available: {which} in the store on the report's problems.")
    d.csv(Table("perplexity_responses", ["group", "problem_id", "idx", "tokens", "perplexity"], resp_rows))
    d.add("Each scored response: [perplexity_responses.csv](perplexity_responses.csv).")
    if by_tag:
        _per_tag(d, tag_field, by_tag, which, r.metric, [g[0] for g in groups])
    for label, st_row in zip([g[0] for g in groups], summary_rows):
        r.summary[f"report/perplexity/{label}/median"] = st_row[6]


def _per_tag(d: Doc, field: str, by_tag: dict[str, dict[str, list[float]]], which: str, metric: str,
             labels: list[str]) -> None:
    """Fig. 6 per tag: one box per (tag, group), and its table."""
    from boundlab.report.plots import plot_perplexity

    d.add(f"### By `{field}`")
    reason = ("Across tiers this comparison only reflects the tier mix: a strict-correct response is "
              "the one canonical trace of its problem, the same text whichever model wrote it, so its "
              "perplexity under the base is fixed per problem, and a group's overall median moves with "
              "how many of its correct responses come from each tier (tiers differ in trace length and "
              "in the rare decisions a trace holds). Only within one tier can groups be compared, "
              "and there it reflects which problems each solves, not new reasoning."
              if metric == "strict" else
              f"Across values of `{field}` the overall medians mix problems of different kinds: "
              f"compare groups within one value.")
    rows, values = [], {}
    for tag in by_tag:
        for label in labels:
            vals = by_tag[tag].get(label, [])
            st = A.box_stats(vals)
            rows.append([tag, label, st["count"], st["median"], st["mean"], st["q1"], st["q3"]])
            values[f"{label} | {tag}"] = vals
    png = plot_perplexity(values, d.out / f"perplexity_by_{field}.png",
                          title=f"Base-model perplexity of {which}, by {field}")
    d.figure(png, f"perplexity by {field}")
    d.table(Table(f"perplexity_by_{field}", [field, "group", "scored", "median", "mean", "q1", "q3"],
                  rows),
            caption=f"Up to the same number of {which} per {field} and group, drawn with the same "
                    f"seed. {reason}")
