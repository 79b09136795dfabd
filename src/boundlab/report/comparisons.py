"""What every section of the report reads, computed once before any section runs.

From the store (never sampling): the problems common to the base and every model, each probe's
pass@k summary on them, and each model against the base (coverage, crossing k with its CI, dSE).
For every training run, each probed checkpoint against the base: the row boundary tracking wrote
for it, from the same function (`boundlab.probe.compare.compare`, via `analysis.checkpoint_row`).

The headline metric is strict pass@k (right answer and a valid trace) when the store knows it for the
base and every model (`c_strict`), else answer-only; every section reads `Probe.c` and
`Probe.summary`, which hold the headline, and `Probe.answer` holds answer-only pass@1 and pass@n
beside it. A run whose tracker probed a base-vs-base null (`probe.null_seed_offset`) gets it compared with
the base like a checkpoint (`RunProgress.null`): the chance level of every Δ, lost and gained.

A probe's summary is computed once per probe key: a run's final checkpoint is both a model and the
last point of its progression. Every bootstrap is seeded by itself, so the order in which these
are computed does not change a number.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from boundlab.probe.alike import note as alike_note, store_differences
from boundlab.config import ConfigError, as_typed
from boundlab.probe import adaptive as AD
from boundlab.probe.compare import ANSWER, STRICT
from boundlab.probe.estimator import pass_at_k_curve
from boundlab.probe.store import ProblemCounts, Store
from boundlab.report import analysis as A
from boundlab.report.inputs import Entry, Inputs, resolve_inputs, resolve_task
from boundlab.report.schema import ReportMain


def log(msg: str) -> None:
    print(f"[boundlab] report: {msg}", flush=True)


@dataclass
class Probe:
    """One probe's counts on the report's problems (headline metric), and its pass@k summary."""
    entry: Entry
    n: np.ndarray
    c: np.ndarray
    summary: A.Summary
    # Answer-only (pass@1, pass@n) at the summary's n; the same as the summary's under answer.
    answer: tuple[float, float] = (float("nan"), float("nan"))


@dataclass
class VsBase:
    """One model against the base."""
    coverage: A.Coverage
    crossing: A.Crossing
    dse: A.DeltaSE


@dataclass
class RunProgress:
    """A training run's probed checkpoints against the base, by step."""
    label: str
    algo: str
    # (step, probe key, analysis.checkpoint_row(...)) of every checkpoint probed on all problems.
    checkpoints: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    # (seed, probe key, analysis.checkpoint_row(...)) of the base-vs-base null, when it has one.
    null: tuple[Any, str, dict[str, Any]] | None = None
    # Each of those probes' summary on the report's problems, by probe key (the remedies section's
    # per-tier comparisons read their per-problem curves).
    summaries: dict[str, A.Summary] = field(default_factory=dict)
    # The run's saved config (.hydra/config.yaml), when it has one: arm_intervals.recipe tells the
    # seeds of one recipe from runs that only share its algorithm.
    config: Any = None


@dataclass
class Report:
    cfg: ReportMain
    store: Store
    inputs: Inputs
    ids: list[str]
    task: Any
    base: Probe
    models: list[Probe]
    # models[i] against the base.
    vs_base: list[VsBase]
    runs: list[RunProgress]
    # Said in the progression section: runs from another base, checkpoints left out.
    run_notes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # {meta field: {problem id: tag}} for the breakdown section.
    tags: dict[str, dict[str, str]] = field(default_factory=dict)
    # W&B run summary (sections may add to it).
    summary: dict[str, Any] = field(default_factory=dict)
    # strict (right answer, valid trace) or answer: what every pass@k of the report counts.
    metric: str = "answer"

    def pairs(self) -> list[tuple[Probe, VsBase]]:
        return list(zip(self.models, self.vs_base))


def _counts(store: Store, key: str, n_max: int | None) -> dict[str, ProblemCounts]:
    return {pc.problem_id: pc for pc in store.counts(key, n_max=n_max)}


def _strict_known(counts: dict[str, ProblemCounts], ids: list[str]) -> bool:
    return all(counts[p].c_strict is not None for p in ids)


def _arrays(counts: dict[str, ProblemCounts], ids: list[str], metric: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, headline c, answer-only c) in the order of ids."""
    n = np.array([counts[p].n for p in ids], dtype=np.int64)
    ca = np.array([counts[p].c for p in ids], dtype=np.int64)
    c = np.array([counts[p].c_strict for p in ids], dtype=np.int64) if metric == STRICT else ca
    return n, c, ca


def _answer(n: np.ndarray, ca: np.ndarray) -> tuple[float, float]:
    k = int(n.min())
    curve = pass_at_k_curve(n, ca, k)
    return float(curve[0]), float(curve[-1])


def _adaptive(store: Store, key: str, ids: list[str], metric: str, cfg: ReportMain
              ) -> tuple[np.ndarray, np.ndarray] | None:
    """An adaptive probe's (headline, answer-only) pass@k matrices, by its own design
    (boundlab.probe.adaptive: k <= n0 from the first round, certified problems 1 beyond it), cut
    to report.n when that is smaller; None for a fixed-n probe. Its uneven n must never be read
    as plain counts: the U-statistic of a problem stopped early is biased."""
    info = store.probe_info(key)
    plan = None if info is None else AD.plan_of(info["settings"])
    if plan is None:
        return None
    P = len(store.counts(key))  # the probe's own problems: its Bonferroni split
    kmax = plan.cap if cfg.n is None else min(plan.cap, int(cfg.n))
    ans = AD.matrix(store, key, ids, plan, strict=False, problems=P)[:, :kmax]
    head = AD.matrix(store, key, ids, plan, strict=True, problems=P)[:, :kmax] \
        if metric == STRICT else ans
    return head, ans


def _probe(cfg: ReportMain, entry: Entry, counts: dict[str, ProblemCounts], ids: list[str],
           metric: str = "answer", store: Store | None = None) -> Probe:
    n, c, ca = _arrays(counts, ids, metric)
    mats = None if store is None else _adaptive(store, entry.key, ids, metric, cfg)
    if mats is not None:
        s = A.summarize_matrix(mats[0], n, c, cfg.bootstrap_iters, cfg.ci, cfg.seed)
        return Probe(entry, n, c, s, (float(mats[1][:, 0].mean()), float(mats[1][:, -1].mean())))
    return Probe(entry, n, c, A.summarize(n, c, cfg.bootstrap_iters, cfg.ci, cfg.seed), _answer(n, ca))


def vs_base(cfg: ReportMain, ids: list[str], base: Probe, p: Probe) -> VsBase:
    b, m = base.summary.per_problem, p.summary.per_problem
    return VsBase(A.coverage(ids, base.c, p.c),
                  A.crossing_with_ci(b, m, cfg.bootstrap_iters, cfg.ci, cfg.seed),
                  A.delta_se(b, m, cfg.dse_k, cfg.bootstrap_iters, cfg.ci, cfg.seed))


def progression(cfg: ReportMain, store: Store, inputs: Inputs, ids: list[str], base: Probe,
                known: dict[str, Probe], metric: str = "answer") -> tuple[list[RunProgress], list[str]]:
    """Every run's checkpoints against the base, and the notes the progression section shows."""
    runs, notes = [], []
    for run in inputs.runs:
        if run.base_key not in (None, base.entry.key):
            notes.append(f"Note: run {run.path} started from another base probe ({run.base_key}); "
                         f"its deltas below are still against this report's base.")
        rp = RunProgress(run.label, run.algo, config=run.config)
        todo = [(step, key, f"step {step}") for step, key in run.checkpoints()]
        if run.null is not None:
            todo.insert(0, (None, run.null[0], f"null (base, seed {run.null[1]})"))
        for step, key, what in todo:
            if key in known:
                n, c, s = known[key].n, known[key].c, known[key].summary
            else:
                counts = _counts(store, key, cfg.n)
                if store.probe_info(key) is None or any(pid not in counts for pid in ids):
                    notes.append(f"Note: {run.label} {what}: probe {key} lacks some of the "
                                 f"report's problems in this store; left out.")
                    continue
                if metric == STRICT and not _strict_known(counts, ids):
                    notes.append(f"Note: {run.label} {what}: probe {key} has no strict counts; "
                                 f"left out of this strict report.")
                    continue
                n, c, _ = _arrays(counts, ids, metric)
                mats = _adaptive(store, key, ids, metric, cfg)
                s = (A.summarize(n, c, cfg.bootstrap_iters, cfg.ci, cfg.seed) if mats is None else
                     A.summarize_matrix(mats[0], n, c, cfg.bootstrap_iters, cfg.ci, cfg.seed))
            row = A.checkpoint_row(base.summary, s, base.c, c, ids, cfg.bootstrap_iters)
            rp.summaries[key] = s
            if step is None:
                rp.null = (run.null[1], key, row)
            else:
                rp.checkpoints.append((step, key, row))
        runs.append(rp)
    return runs, notes


def compute(cfg: ReportMain, store: Store) -> Report:
    """Resolve the inputs and compute everything the sections show (`cfg` typed by `run`; a
    DictConfig from a test is converted here)."""
    cfg = as_typed(cfg, ReportMain)
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
        if e is not inputs.base:
            # Sampling settings and verifier (boundlab.probe.alike); the task is named just above.
            diffs = [d for d in store_differences(store, inputs.base.key, e.key)
                     if not d.startswith("task fingerprint")]
            if diffs:
                notes.append(alike_note(e.label, "the base", diffs))
    task, tnotes = resolve_task(cfg, inputs, store, ids)
    notes += tnotes
    metric = STRICT if all(_strict_known(counts[e.key], ids) for e in entries) else ANSWER
    base = _probe(cfg, inputs.base, counts[inputs.base.key], ids, metric, store)
    models = [_probe(cfg, e, counts[e.key], ids, metric, store) for e in inputs.models]
    ns = {p.summary.n for p in [base, *models]}
    if len(ns) > 1:
        notes.append(f"samples per problem differ between probes ({sorted(ns)}): each curve runs to "
                     f"its own n, and comparisons use the smaller n")
    metas = {pid: task.by_id(pid).meta for pid in ids}
    fields = list(cfg.breakdown) if cfg.breakdown is not None else None
    if fields is None and getattr(task, "group_by", None):
        fields = [task.group_by]  # the task's own breakdown (the toy world: tier)
    try:  # checked before any model work: a wrong field name fails fast
        tags = A.problem_tags(metas, fields)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    log(f"{len(models)} model(s) against the base on {len(ids)} problems "
        f"(read in {time.time() - t0:.1f} s)")
    t1 = time.time()
    known = {p.entry.key: p for p in [base, *models]}
    runs, run_notes = progression(cfg, store, inputs, ids, base, known, metric)
    report = Report(cfg, store, inputs, ids, task, base, models,
                    [vs_base(cfg, ids, base, p) for p in models], runs, run_notes, notes, tags,
                    metric=metric)
    log(f"comparisons against the base in {time.time() - t1:.1f} s")
    return report
