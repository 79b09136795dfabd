"""Boundary tracking over training: probe the base once, then every checkpoint, against the base.

Per probe it logs pass@k (powers of two and n), the change against the base at the same k, the
base-solvable problems lost and the new ones gained, an overlay of the checkpoint's curve on the
base's, and the boundary plot (pass@1 and pass@n against the step, the paper's Figure 1 right).
`boundary.csv` and `boundary.png` in the run dir are rewritten after every probe, W&B or not.

Strict pass@k (right answer and a valid trace) is the headline wherever the verifier knows it; the
answer-only numbers sit beside it, labelled (`boundlab.boundary.rows` has the row layout). With
`task.group_by` every probe is also broken down by that Problem.meta tag (`boundary_groups.csv`,
`probe_tier/<tag>/<metric>/...` in W&B, one panel per tag in boundary.png). With `probe.null_seed_offset` the
base is probed a second time with seed + offset (a `kind=null` row): its Δ, lost and gained against the
base are the chance level of every checkpoint's. A saturated probe (every problem solved at k = n)
is flagged with the rule-of-three bound instead of showing a [0, 0] interval as precision.
A checkpoint whose pass@n fell below the base's beyond chance raises the boundary alarm
(`boundlab.boundary.alarm`). Where the sampler records it, each probe's sampling entropy sits beside
its boundary (`probe/entropy/...`, the `entropy_*` columns, entropy.png; `boundlab.probe.entropy`).
`probes.jsonl` records each finished probe, so a resumed run neither re-probes nor loses one; it and
`boundary.csv` are replaced atomically (`boundlab.rundir.io`), and a torn last line left by an older
writer or a full disk is skipped and cut off at load.

Every probe runs inside `isolated_rng()`: sampling seeds the global torch RNG, and an inline probe in
the training process must not move the trainer's RNG (probe settings would change the trained weights,
and a killed-and-resumed run, which restores the RNG saved with the checkpoint, would diverge).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from boundlab.probe.alike import note as alike_note, store_differences
from boundlab.boundary import rows as R
from boundlab.boundary.alarm import raise_alarm, shrinkage
from boundlab.probe.answer_stats import summary_lines
from boundlab.probe.context import ProbeContext
from boundlab.probe.compare import compare  # noqa: F401 - the one comparison (rows.add_comparison)
from boundlab.probe.estimator import powers_of_two
from boundlab.probe.runner import ProbeResult, probe_model
from boundlab.probe.rng import isolated_rng
from boundlab.probe.spec import ProbeSpec
from boundlab.probe.views import add_views
from boundlab.rundir import (BOUNDARY_CSV, BOUNDARY_GROUPS_CSV, BOUNDARY_PNG, ENTROPY_PNG,
                             PASSK_BY_STEP_PNG, PROBES_FILE, TRAIN_LOG)
from boundlab.rundir.io import append_jsonl, append_lines, atomic_write_text, read_jsonl, write_jsonl
from boundlab.tracking.names import PROBE, PROBE_STEP, PROBE_TIER, TRAIN_STEP, metric_key, tier_prefix


def build_tracker(run_dir: Path, ctx: ProbeContext, spec: ProbeSpec) -> "BoundaryTracker":
    """The one way training and the detached watcher build a tracker: over a probe context
    (boundlab.probe.context), which owns the task, store, verifier, logger and samplers."""
    if ctx.make_sampler is None:
        raise ValueError("the boundary tracker opens checkpoints: its probe context needs make_sampler")
    return BoundaryTracker(run_dir, ctx, spec)


class BoundaryTracker:
    def __init__(self, run_dir: Path, ctx: ProbeContext, spec: ProbeSpec):
        self.run_dir = Path(run_dir)
        self.ctx = ctx  # the task, store, verifier, logger and samplers (read through below)
        self.spec = spec
        self.n, self.gen, self.seed = spec.n, spec.gen, spec.seed
        self.bootstrap_iters, self.ci = spec.bootstrap_iters, spec.ci
        self.groups = ctx.task.groups()  # {tag: problem indices}; a problem without the tag fails here
        self.base: ProbeResult | None = None
        self.rows: list[dict[str, Any]] = []
        self.results: dict[int, ProbeResult] = {}
        # Wall seconds this process spent probing (each row's probe_seconds, sampler start-up
        # included): the run's summary sets it against the process's wall time.
        self.seconds_this_process = 0.0
        # The KL view (boundlab.probe.kl_view): the base's folder, its scored samples (once), the last value.
        self._base_dir: str | None = None
        self._kl_base: Any = None
        self._kl: Any = None
        self._load_rows()
        if self.logger is not None:
            self.logger.define_step_metric(PROBE, PROBE_STEP)
            self.logger.define_step_metric(PROBE_TIER, PROBE_STEP)

    @property
    def task(self) -> Any:
        return self.ctx.task

    @property
    def store(self) -> Any:
        return self.ctx.store

    @property
    def verifier(self) -> Any:
        return self.ctx.verifier

    @property
    def logger(self) -> Any:
        return self.ctx.logger

    @property
    def make_sampler(self) -> Any:  # model dir -> (sampler, tokenizer)
        return self.ctx.make_sampler

    # -- bookkeeping -----------------------------------------------------------------------
    def _load_rows(self) -> None:
        # repair=True: the tracker is the file's writer (inline training or the watcher). The trainer
        # of a detached run loads it too; a torn line there can only be left by a dead writer.
        self.rows = [R.normalize(r) for r in read_jsonl(self.run_dir / PROBES_FILE, repair=True)]

    def done_steps(self) -> set[int]:
        return {int(r["step"]) for r in self.rows if r.get("kind") == "checkpoint"}

    def _append_row(self, row: dict[str, Any]) -> None:
        self.rows = [R.normalize(r) for r in append_jsonl(self.run_dir / PROBES_FILE, row)]
        line = f"[boundlab] {R.probe_line(row)}"
        print(line, flush=True)
        if (self.run_dir / TRAIN_LOG).exists():  # a train.py run: its log keeps every probe's line
            append_lines(self.run_dir / TRAIN_LOG, line)

    # -- probing ---------------------------------------------------------------------------
    def _probe(self, model_dir: str, name: str, seed: int | None = None, kl: bool = False) -> ProbeResult:
        from boundlab.models import model_fingerprint

        with isolated_rng():
            sampler, tok = self.make_sampler(model_dir)
            try:
                # The tracker's own n, gen, seed, bootstrap and CI (a caller may change them between probes).
                spec = replace(self.spec, n=self.n, gen=self.gen, seed=self.seed if seed is None else seed,
                               bootstrap_iters=self.bootstrap_iters, ci=self.ci)
                res = probe_model(self.ctx, spec, sampler, model_fingerprint(model_dir, self.store),
                                  tok, name, meta={"path": model_dir})
                if kl:
                    self._kl = self._kl_view(sampler, tok)
                return res
            finally:
                sampler.close()

    def _kl_view(self, sampler: Any, tok: Any) -> Any:
        """KL(base || this model) on the base's stored samples (boundlab.probe.kl_view); None when the
        view is off, the sampler holds no local model (vLLM, scripted) or top-p truncates."""
        from boundlab.probe import kl_view as K

        model = getattr(sampler, "model", None)
        if (self.spec.kl_samples <= 0 or model is None or tok is None or self.base is None
                or self.gen.top_p < 1 or self._base_dir is None):
            return None
        if self._kl_base is None:
            samples = K.base_samples(self.store, self.base.key, self.task, tok, self.spec.kl_samples)
            base_sampler, _ = self.make_sampler(self._base_dir)
            try:
                pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
                logp = K.sequence_logprobs(base_sampler.model, samples.prompt_ids, samples.completion_ids,
                                           self.gen.temperature, pad)
            finally:
                base_sampler.close()
            self._kl_base = (samples, logp)
        samples, logp = self._kl_base
        return K.kl_from_base(logp, model, tok, samples, self.gen.temperature)

    def probe_base(self, model_dir: str, name: str = "base") -> ProbeResult:
        """Probe the base (read back from the store when done before), then the null if asked."""
        t0 = time.time()
        self._base_dir = model_dir
        self.base = self._probe(model_dir, name)
        row = self._row(0, self.base, "base", time.time() - t0, self.seed)
        row["kl_from_base"] = 0.0
        old = next((r for r in self.rows if r.get("kind") == "base"), None)
        if old is None:
            self._append_row(row)
            self._log(row)
        elif old["metric"] != row["metric"] or ("groups" in row) != ("groups" in old):
            # Written by an older version (answer-only values, no groups): the base row is redone
            # from the store, so the checkpoints probed from now on compare with like.
            self.rows = [row if r is old else r for r in self.rows]
            write_jsonl(self.run_dir / PROBES_FILE, self.rows)
        if self.spec.null_seed is not None:
            self.probe_null(model_dir)
        self._write_files()
        return self.base

    def probe_null(self, model_dir: str) -> ProbeResult | None:
        """The base-vs-base null: the base again, with `null_seed` (a different probe key)."""
        if _null_row(self.rows) is not None:
            return None
        if self.base is None:
            raise RuntimeError("probe the base model first")
        t0 = time.time()
        res = self._probe(model_dir, "base (null)", seed=self.spec.null_seed)
        if res.key == self.base.key:
            raise RuntimeError("the null probe has the base probe's key: its seed is not in the key")
        row = self._row(0, res, "null", time.time() - t0, self.spec.null_seed)
        row["kl_from_base"] = 0.0  # the same model
        R.add_comparison(row, self.base, res, self.groups, self.bootstrap_iters, self.ci)
        self._append_row(row)
        self._log(row)
        return res

    def probe_checkpoint(self, step: int, ckpt_dir: str) -> ProbeResult | None:
        if step in self.done_steps():
            return None  # finished before a crash or restart: never probe twice
        if self.base is None:
            raise RuntimeError("probe the base model first")
        t0 = time.time()
        self._kl = None
        res = self._probe(ckpt_dir, f"step {step}", kl=True)
        row = self._row(step, res, "checkpoint", time.time() - t0, self.seed)
        if self._kl is not None:
            row.update(kl_from_base=round(self._kl.value, 6), kl_from_base_se=round(self._kl.se, 6),
                       kl_samples=self._kl.samples, kl_skipped=self._kl.skipped)
        R.add_comparison(row, self.base, res, self.groups, self.bootstrap_iters, self.ci)
        unlike = store_differences(self.store, self.base.key, res.key)  # boundlab.probe.alike
        if unlike:
            row["unlike_base"] = unlike
            print(f"[boundlab] warning: {alike_note(f'step {step}', 'the base', unlike)}", flush=True)
        row["alarm"] = shrinkage(row, _null_row(self.rows))
        self.results[step] = res
        self._append_row(row)
        self._log(row)
        if row["alarm"]:
            raise_alarm(self.run_dir, row, self.logger)
        self._write_files()
        return res

    def _row(self, step: int, res: ProbeResult, kind: str, seconds: float, seed: int) -> dict[str, Any]:
        self.seconds_this_process += seconds
        row = R.probe_row(step, kind, res, seed, seconds, self.groups, self.task.group_by, self.ci,
                          self.bootstrap_iters)
        add_views(row, self.store, res, self.spec.gpass_tau, self.groups)
        if res.answers is not None:
            # Answer format per probe: a "shrinkage" that is really a change of format (or a
            # length limit) shows here. Printed too, so no probe's truncation goes unseen.
            for line in summary_lines(res.answers, self.gen.max_new_tokens):
                print(f"[boundlab] probe {kind} step {step}: {line.strip()}", flush=True)
        return row

    # -- outputs ---------------------------------------------------------------------------
    def _log(self, row: dict[str, Any]) -> None:
        """Log one probe row (everything is derived from the row, so a resumed run can re-log
        probes whose W&B records died with a hard-killed process)."""
        if self.logger is None:
            return
        step = int(row["step"])
        m: dict[str, Any] = {PROBE_STEP: step, TRAIN_STEP: step}
        base = next((r for r in self.rows if r.get("kind") == "base"), None)
        base_curve = base["curve"] if base is not None and base["metric"] == row["metric"] else None
        if row["kind"] == "null":
            # Under probe/null/...: the base's own probe/pass@k at step 0 must stay the base's.
            m.update(_compared_metrics(row, metric_key(PROBE, "null"), base_curve))
            self.logger.log(m)
            self._note_logged(row)
            return
        m.update(_probe_metrics(row))
        if base_curve is not None:
            # The base as its own series at every probe step: each chart has the base beside it.
            m.update(_base_series(base, len(row["curve"])))
        if row["kind"] == "checkpoint":
            m.update(_compared_metrics(row, PROBE, base_curve))
            if "alarm" in row:  # rows from before the alarm existed have none
                m[metric_key(PROBE, "alarm")] = len(row["alarm"])
            if row.get("unlike_base"):  # the delta above is against a base probed otherwise
                m[metric_key(PROBE, "unlike_base")] = len(row["unlike_base"])
        self.logger.log(m)
        self._note_logged(row)
        curve, kmax = row["curve"], len(row["curve"])
        if base is not None:
            series = {"base": base["curve"][:kmax]}
            if row["kind"] == "checkpoint":
                series[f"step {step}"] = curve
            self.logger.log_line_plot(metric_key(PROBE, "curve_vs_base"), list(range(1, kmax + 1)),
                                      series,
                                      title=f"{row['metric']} pass@k at step {step} vs base",
                                      xname="k", step_metrics={PROBE_STEP: step})
        self._log_curves_by_log_k(row, step)
        png = self.run_dir / BOUNDARY_PNG
        if png.exists():
            self.logger.log_image(metric_key(PROBE, "boundary"), png, extra={PROBE_STEP: step})
        png = self.run_dir / ENTROPY_PNG
        if png.exists():
            self.logger.log_image(metric_key(PROBE, "entropy", "plot"), png, extra={PROBE_STEP: step})

    def _note_logged(self, row: dict[str, Any]) -> None:
        # The run dir's record of what this process handed to W&B (boundlab.tracking.segments).
        segment = getattr(self.logger, "segment", None)
        if segment is not None:
            segment.note_probe(row["kind"], int(row["step"]))

    def _log_curves_by_log_k(self, row: dict[str, Any], step: int) -> None:
        """pass@k against log2 k for the base and every checkpoint probed so far: a table
        (`probe/curves_table`: model, step, k, log2_k, pass@k at k = 1, 2, 4, ..., n) and a line chart
        on a log-k axis (`probe/curves_log_k`), re-logged at each probe with every curve to date."""
        rows = [r for r in R.ordered(self.rows) if r["kind"] in ("base", "checkpoint")
                and r["metric"] == row["metric"]]
        if not rows:
            return
        kmax = min(len(r["curve"]) for r in rows)
        ks = powers_of_two(kmax)
        label = lambda r: "base" if r["kind"] == "base" else f"step {r['step']}"  # noqa: E731
        table = [[label(r), int(r["step"]), k, math.log2(k), r["curve"][k - 1]] for r in rows for k in ks]
        self.logger.log_table(metric_key(PROBE, "curves_table"), ["model", "step", "k", "log2_k", "pass@k"],
                              table, extra={PROBE_STEP: step})
        self.logger.log_line_plot(metric_key(PROBE, "curves_log_k"), [math.log2(k) for k in ks],
                                  {label(r): [r["curve"][k - 1] for k in ks] for r in rows},
                                  title=f"{row['metric']} pass@k against log2 k: base and every checkpoint",
                                  xname="log2 k", step_metrics={PROBE_STEP: step})

    def relog_missing(self, missing: Callable[[str, int], bool]) -> list[int]:
        """Re-log the finished probes (rows of probes.jsonl) that the W&B run does not keep:
        `missing(kind, step)`, decided from the run dir's segment records
        (`boundlab.tracking.segments.ResumePlan.probe_missing`). The null shares step 0 with the
        base, so a row is named by its kind and step."""
        rows = [r for r in self.rows if missing(r["kind"], int(r["step"]))]
        for r in rows:
            self._log(r)
        return [int(r["step"]) for r in rows]

    def _write_files(self) -> None:
        from boundlab.plots.boundary import plot_boundary_panels, plot_entropy
        from boundlab.plots.curves import plot_passk

        atomic_write_text(self.run_dir / BOUNDARY_CSV, R.boundary_csv(self.rows))
        groups = R.groups_csv(self.rows)
        if groups is not None:
            atomic_write_text(self.run_dir / BOUNDARY_GROUPS_CSV, groups)
        rows = R.ordered(self.rows)
        base = next((r for r in rows if r["kind"] == "base"), None)
        if base is None:
            return
        ck = [r for r in rows if r["kind"] == "checkpoint" and r["metric"] == base["metric"]]
        null = _null_row(rows)
        plot_boundary_panels(_series(base, ck, null, None), self.run_dir / BOUNDARY_PNG, n=base["n"],
                             metric=base["metric"],
                             panels={t: _series(base, ck, null, t) for t in (base.get("groups") or {})},
                             group_by=base.get("group_by"))
        curves = {"base": (list(range(1, base["n"] + 1)), base["curve"], None, None)}
        for r in ck:
            curves[f"step {r['step']}"] = (list(range(1, r["n"] + 1)), r["curve"], None, None)
        plot_passk(curves, self.run_dir / PASSK_BY_STEP_PNG,
                   title=f"{base['metric']} pass@k: base and checkpoints")
        if base.get("entropy_mean") is not None:
            pts = [base] + [r for r in ck if r.get("entropy_mean") is not None]
            plot_entropy([r["step"] for r in pts], [r["entropy_mean"] for r in pts],
                         [r["entropy_p10"] for r in pts], [r["entropy_p90"] for r in pts],
                         base["entropy_mean"], self.run_dir / ENTROPY_PNG,
                         null_mean=None if null is None else null.get("entropy_mean"))


def _null_row(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The base-vs-base null's row, if the run has one."""
    return next((r for r in rows if r.get("kind") == "null"), None)


def _series(base: dict[str, Any], ck: list[dict[str, Any]], null: dict[str, Any] | None,
            tag: str | None) -> dict[str, Any]:
    """What one panel of boundary.png shows: pass@1 and pass@n by step, the base, the null's."""
    def pick(r: dict[str, Any]) -> dict[str, Any] | None:
        return r if tag is None else (r.get("groups") or {}).get(tag)

    b = pick(base)
    pts = [(r["step"], pick(r)) for r in ck if pick(r) is not None]
    out = {"steps": [0] + [s for s, _ in pts], "pass@1": [b["pass@1"]] + [g["pass@1"] for _, g in pts],
           "pass@n": [b["pass@n"]] + [g["pass@n"] for _, g in pts], "base_pass@1": b["pass@1"],
           "base_pass@n": b["pass@n"], "saturated": bool(b.get("saturated")),
           "problems": b.get("problems")}
    for key in ("pass@1", "pass@n"):  # each point's interval (rows without one: the point alone)
        lo, hi = f"{key}_ci_low", f"{key}_ci_high"
        out[f"{key}_ci"] = [(g.get(lo, g[key]), g.get(hi, g[key])) for g in [b] + [g for _, g in pts]]
    # Steps where the boundary alarm fired on this panel's scope (all problems, or this group).
    scope = "all" if tag is None else str(tag)
    out["alarm_steps"] = [r["step"] for r in ck if any(a.get("scope") == scope for a in (r.get("alarm") or []))]
    g = pick(null) if null is not None else None
    if g is not None:
        out["null_pass@1"], out["null_pass@n"] = g["pass@1"], g["pass@n"]
    return out


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _tagged(row: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(W&B-safe tag, group stats): a tag may not add a level to the key."""
    return [(str(t).replace("/", "_"), g) for t, g in (row.get("groups") or {}).items()]


def _probe_metrics(row: dict[str, Any]) -> dict[str, Any]:
    """One probe's own values: the headline at probe/pass@k, each metric under its name."""
    m: dict[str, Any] = {}
    kmax = len(row["curve"])
    ks = powers_of_two(kmax)
    for k in ks:
        m[metric_key(PROBE, f"pass@{k}")] = row["curve"][k - 1]
        if row.get("answer_curve"):
            m[metric_key(PROBE, "answer", f"pass@{k}")] = row["answer_curve"][k - 1]
        if row.get("strict_curve"):
            m[metric_key(PROBE, "strict", f"pass@{k}")] = row["strict_curve"][k - 1]
            if row.get("answer_curve"):
                m[metric_key(PROBE, "gap", f"pass@{k}")] = (row["answer_curve"][k - 1]
                                                            - row["strict_curve"][k - 1])
    m[metric_key(PROBE, "pass@n")] = row["curve"][-1]
    m[metric_key(PROBE, "solvable")] = row["solvable"]
    m[metric_key(PROBE, "strict_is_headline")] = int(row.get("metric") == "strict")
    if "saturated" in row:
        m[metric_key(PROBE, "saturated")] = int(bool(row["saturated"]))
    for share in ("boxed_share", "truncated_share"):
        if row.get(share) is not None:
            m[metric_key(PROBE, share)] = row[share]
    m.update(_entropy_metrics(row, PROBE))
    m.update(_view_metrics(row, PROBE))
    if row.get("kl_from_base") is not None:
        m[metric_key(PROBE, "kl_from_base")] = row["kl_from_base"]
    metric = row.get("metric", "answer")
    for tag, g in _tagged(row):
        gk = len(g["curve"])
        for k in powers_of_two(gk):
            m[metric_key(PROBE_TIER, tag, metric, f"pass@{k}")] = g["curve"][k - 1]
        m[metric_key(PROBE_TIER, tag, metric, "pass@n")] = g["pass@n"]
        m[metric_key(PROBE_TIER, tag, metric, "saturated")] = int(bool(g.get("saturated")))
        if metric == "strict":
            m[metric_key(PROBE_TIER, tag, "answer", "pass@1")] = g["answer_pass@1"]
            m[metric_key(PROBE_TIER, tag, "answer", "pass@n")] = g["answer_pass@n"]
        m.update(_entropy_metrics(g, metric_key(PROBE_TIER, tag)))
        m.update(_view_metrics(g, metric_key(PROBE_TIER, tag)))
    return m


def _base_series(base: dict[str, Any], kmax: int) -> dict[str, Any]:
    """`probe/base/pass@k` (powers of two up to kmax) and `probe/base/pass@n` from the base row."""
    m = {metric_key(PROBE, "base", f"pass@{k}"): base["curve"][k - 1]
         for k in powers_of_two(min(kmax, len(base["curve"])))}
    m[metric_key(PROBE, "base", "pass@n")] = base["curve"][min(kmax, len(base["curve"])) - 1]
    return m


def _view_metrics(row: dict[str, Any], prefix: str) -> dict[str, Any]:
    """`<prefix>/diversity/<name>` and `<prefix>/gpass@k` where the row has them (boundlab.probe.views)."""
    m: dict[str, Any] = {}
    for name in ("distinct_answers", "answer_entropy", "top_answer_share", "no_answer_share"):
        if row.get(name) is not None:
            m[metric_key(prefix, "diversity", name)] = row[name]
    for k, v in row.items():
        if k.startswith("gpass@") and v is not None:
            m[metric_key(prefix, k)] = v
    return m


def _entropy_metrics(row: dict[str, Any], prefix: str) -> dict[str, Any]:
    """`<prefix>/entropy/mean|p10|p50|p90` (and `delta_mean` against the base) where recorded."""
    m: dict[str, Any] = {}
    for name in ("mean", "p10", "p50", "p90"):
        if row.get(f"entropy_{name}") is not None:
            m[metric_key(prefix, "entropy", name)] = row[f"entropy_{name}"]
    if row.get("delta_entropy_mean") is not None:
        m[metric_key(prefix, "entropy", "delta_mean")] = row["delta_entropy_mean"]
    return m


def _compared_metrics(row: dict[str, Any], prefix: str,
                      base_curve: list[float] | None) -> dict[str, Any]:
    """Against the base: Δ at every power of two, lost, gained, the crossing (checkpoint or null)."""
    m: dict[str, Any] = {}
    if base_curve is not None:
        for k in powers_of_two(min(len(base_curve), len(row["curve"]))):
            m[metric_key(prefix, "delta", f"pass@{k}")] = row["curve"][k - 1] - base_curve[k - 1]
    for tag in ("1", "n"):
        m[metric_key(prefix, "delta", f"pass@{tag}")] = row[f"delta_pass@{tag}"]
        m[metric_key(prefix, "delta", f"pass@{tag}_ci_low")] = row[f"delta_pass@{tag}_ci_low"]
        m[metric_key(prefix, "delta", f"pass@{tag}_ci_high")] = row[f"delta_pass@{tag}_ci_high"]
        if f"answer_delta_pass@{tag}" in row:
            m[metric_key(prefix, "answer", "delta", f"pass@{tag}")] = row[f"answer_delta_pass@{tag}"]
    m[metric_key(prefix, "lost")] = row["lost"]
    m[metric_key(prefix, "gained")] = row["gained"]
    if row.get("delta_entropy_mean") is not None and prefix != PROBE:  # the null's, under its prefix
        m[metric_key(prefix, "entropy", "delta_mean")] = row["delta_entropy_mean"]
    for k in ("answer_lost", "answer_gained"):
        if k in row:
            m[metric_key(prefix, "answer", k.split("_")[1])] = row[k]
    for k in ("crossing_k", "crossing_k_ci_low", "crossing_k_ci_high", "crossing_share"):
        if _finite(row.get(k)):  # an interval open beyond n (inf) is left out
            m[metric_key(prefix, k)] = row[k]
    metric = row.get("metric", "answer")
    for tag, g in _tagged(row):
        for t in ("1", "n"):
            if f"delta_pass@{t}" in g:
                m[metric_key(tier_prefix(prefix), tag, metric, "delta", f"pass@{t}")] = g[f"delta_pass@{t}"]
        for k in ("lost", "gained"):
            if k in g:
                m[metric_key(tier_prefix(prefix), tag, metric, k)] = g[k]
    return m
