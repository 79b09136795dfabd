"""`probe.py`: compose config -> task, verifier, store, sampler -> probe -> files, summary, W&B.

Where the verifier checks traces (`c_strict`), strict pass@k is the headline: the console leads with
it and `probe/pass@k` holds it; answer-only pass@k sits beside it (`probe/answer/pass@k`, the
`answer-only` column) with the gap. passk.csv stays answer-only and passk_strict.csv strict, as
before. With `task.group_by`, the summary and W&B (`probe_tier/<tag>/<metric>/pass@k`) break down by tag. With `match_entropy.of=BASE_DIR` it runs the temperature control instead
(`boundlab.probe.entropy_match`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from boundlab.config import ProbeMain, ProbingMain, as_typed, to_dict
from boundlab.probe.answer_stats import summary_lines
from boundlab.probe.compare import ANSWER, STRICT, group_stats, headline_metric, saturation, view
from boundlab.probe.context import ProbeContext
from boundlab.probe.curves import write_passk_csv, write_problems_csv
from boundlab.probe.entropy import summary_line as entropy_line
from boundlab.probe.estimator import powers_of_two
from boundlab.probe.runner import (ProbeResult, export_prompts, probe_model, score_samples_file)
from boundlab.probe.spec import ProbeSpec, gen_settings, load_task, set_threads  # noqa: F401 - used by report
from boundlab.tasks import Task
from boundlab.tracking.names import PROBE, PROBE_STEP, metric_key, passk_key, tier_prefix


def run(cfg: ProbeMain, run_dir: str | Path) -> ProbeResult | Path:
    """probe.py's run (`boundlab.apps.probe_run`): `cfg` typed there; a DictConfig (tests,
    scripts) is converted here once."""
    cfg = as_typed(cfg, ProbeMain)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg.watch:  # the entry layer (boundlab.apps) runs the watcher; it lives above probing
        raise ValueError("probe.app.run does not watch: call boundlab.apps.probe_run")
    task = load_task(cfg)

    if cfg.export:
        from boundlab.rundir.owner import refuse_overwrite

        # The task's own file (a jsonl task), the samples file, the store: never the export's target.
        refuse_overwrite(cfg.export, [("task.path", cfg.task.path),
                                      ("samples", cfg.samples), ("store.path", cfg.store.path)], "export")
        tok = None
        if task.chat and (cfg.model.path or cfg.model.gguf_package):
            from boundlab.models import load_processor, load_tokenizer

            # A VLM's processor renders a visual task's prompt exactly as its sampler does.
            tok = (load_processor(cfg.model) if task.has_images() and cfg.model.vision
                   else load_tokenizer(cfg.model))
        out = export_prompts(task, cfg.export, tok, cfg.model.name if tok is not None else None)
        if not task.chat:
            what = "the prompt (no chat wrapping: the same for every model)"
        elif tok is not None:
            what = f"chat messages and the exact prompt string for model={cfg.model.name}"
        else:
            what = ("chat messages only (no model tokenizer: a chat API applies the model's template; "
                    "name model=... for the exact prompt string)")
        print(f"wrote {len(task)} problems of {task.name} to {out}: {what}")
        return out

    with ProbeContext.from_config(cfg, task=task) as ctx:
        if cfg.match_entropy.of:
            from boundlab.probe.entropy_match import run_match

            set_threads(cfg.sampler.torch_threads)
            return run_match(cfg, ctx, lambda: ctx.open_logger(cfg.logger, run_dir, to_dict(cfg)),
                             run_dir)
        if cfg.samples:
            result, task = score_samples_file(task, cfg.samples, ctx.verifier, ctx.store,
                                              cfg.probe.bootstrap_iters, cfg.probe.ci,
                                              keep_text=cfg.probe.keep_text)
            model_name = result.model_name
        else:
            result, model_name = probe_configured(ctx, cfg)
        logger = ctx.open_logger(cfg.logger, run_dir, to_dict(cfg))
        predicted = _predict(result, cfg.probe.predict_k, cfg.probe.ci)
        write_outputs(result, run_dir, title=f"{model_name} on {task.name}", predicted=predicted)
        log_probe(logger, result, step=0, run_dir=run_dir, task=task, ci=cfg.probe.ci)
        print_summary(result, ctx.store.path, None if cfg.samples else cfg.probe.max_new_tokens, task,
                      cfg.probe.ci)
        if predicted is not None:
            print(f"  predicted, not measured (beta-binomial fit over problems, a = {predicted.a:.3f}, "
                  f"b = {predicted.b:.3f}; passk_predicted.csv): " + ", ".join(
                      f"pass@{k} {v:.4f} [{lo:.4f}, {hi:.4f}]" for k, v, lo, hi in
                      zip(predicted.ks, predicted.value, predicted.ci_low, predicted.ci_high)))
        return result


def probe_configured(ctx: ProbeContext, cfg: ProbingMain) -> tuple[ProbeResult, str]:
    """Probe the configured model (`cfg.model`, sampled by `cfg.sampler`) on `ctx.task` with the
    `probe` group's settings; scripts/gpu_check.py probes through this too."""
    threads = set_threads(cfg.sampler.torch_threads)
    t0 = time.time()
    with ctx.open_model(cfg.model) as model:
        print(f"[boundlab] loaded {model.name} from {model.path} in {time.time() - t0:.1f} s "
              f"({threads} torch thread(s))", flush=True)
        result = probe_model(ctx, ProbeSpec.from_config(cfg.probe), model.sampler, model.fingerprint,
                             model.tokenizer, model.name, meta={"path": model.path})
    return result, model.name


def _predict(result: ProbeResult, predict_k: int | None, ci: float) -> Any:
    """probe.predict_k: the beta-binomial prediction (boundlab.probe.predict) of the headline
    metric at k = 2n, 4n, ... up to predict_k; None when not asked."""
    if not predict_k:
        return None
    from boundlab.probe.predict import predict

    _, c = view(result, headline_metric(result))
    kmax, ks = result.curve.kmax, []
    k = 2 * kmax
    while k < predict_k:
        ks.append(k)
        k *= 2
    return predict(result.n, c, ks + [int(predict_k)], ci=ci)


def write_outputs(result: ProbeResult, run_dir: Path, title: str, prefix: str = "",
                  predicted: Any = None) -> dict[str, Path]:
    from boundlab.plots.curves import plot_passk

    cur = result.curve
    files = {
        "passk": write_passk_csv(cur, run_dir / f"{prefix}passk.csv"),
        "problems": write_problems_csv(result.problem_ids, result.n.tolist(), result.c.tolist(),
                                       run_dir / f"{prefix}problems.csv", _stops(result)),
    }
    curves = {"pass@k (unbiased)": (cur.ks, cur.pass_at_k, cur.ci_low, cur.ci_high)}
    if result.curve_strict is not None:
        cs = result.curve_strict
        files["passk_strict"] = write_passk_csv(cs, run_dir / f"{prefix}passk_strict.csv")
        curves["valid trace only"] = (cs.ks, cs.pass_at_k, cs.ci_low, cs.ci_high)
    if predicted is not None:
        # Its own file and a dashed curve from the last measured k: never a pass@k row.
        path = run_dir / f"{prefix}passk_predicted.csv"
        path.write_text("k,predicted_pass_at_k,ci_low,ci_high\n" + "".join(
            f"{int(k)},{v:.10f},{lo:.10f},{hi:.10f}\n" for k, v, lo, hi in
            zip(predicted.ks, predicted.value, predicted.ci_low, predicted.ci_high)))
        files["predicted"] = path
        head = result.curve_strict if result.curve_strict is not None else cur
        curves["predicted (beta-binomial fit)"] = (
            [head.kmax, *predicted.ks], [head.at(head.kmax), *predicted.value],
            [head.at(head.kmax), *predicted.ci_low], [head.at(head.kmax), *predicted.ci_high])
    files["plot"] = plot_passk(curves, run_dir / f"{prefix}passk.png",
                               title=f"{title} (n = {_n_text(result)}, {len(result.problem_ids)} problems)")
    return files


def _n_text(result: ProbeResult) -> str:
    if result.adaptive is None:
        return str(result.curve.kmax)
    return f"{_n_range(result)}, adaptive"


def _n_range(result: ProbeResult) -> str:
    lo, hi = int(result.n.min()), int(result.n.max())
    return str(lo) if lo == hi else f"{lo} to {hi}"


def _stops(result: ProbeResult) -> list[tuple[str, int]] | None:
    """(stop reason, round) per problem of an adaptive probe; None for a fixed-n probe."""
    return None if result.adaptive is None else [(s.reason, s.round) for s in result.adaptive]


def _groups(result: ProbeResult, task: Task | None, ci: float) -> dict[str, dict[str, Any]]:
    """{tag: group_stats} by task.group_by, on the headline metric; {} without group_by."""
    if task is None or not task.group_by:
        return {}
    import numpy as np

    from boundlab.probe.entropy import group_entropy

    sub = task.with_problems([task.by_id(pid) for pid in result.problem_ids])
    out = {}
    for tag, idx in sub.groups().items():
        out[tag] = group_stats(result, headline_metric(result), np.asarray(idx), ci, 1000)
        ent = group_entropy(result.entropy_values, idx) if result.entropy_values else None
        if ent is not None:
            out[tag]["entropy_mean"] = ent.mean
    return out


def passk_metrics(result: ProbeResult, prefix: str = PROBE,
                  groups: dict[str, dict[str, Any]] | None = None) -> dict[str, float]:
    metric = headline_metric(result)
    cur, c = view(result, metric)
    m = {passk_key(k, prefix): cur.at(k) for k in powers_of_two(cur.kmax)}
    m[metric_key(prefix, "pass@n")] = cur.at(cur.kmax)
    m[metric_key(prefix, "n")] = cur.kmax
    m[metric_key(prefix, "solvable")] = int((c > 0).sum())
    m[metric_key(prefix, "problems")] = len(result.problem_ids)
    m[metric_key(prefix, "strict_is_headline")] = int(metric == STRICT)
    m[metric_key(prefix, "saturated")] = int(saturation(cur)["saturated"])
    if result.adaptive is not None:  # samples the design used, problems it certified early
        m[metric_key(prefix, "adaptive", "samples")] = int(result.n.sum())
        m[metric_key(prefix, "adaptive", "certified")] = sum(s.reason == "certified"
                                                             for s in result.adaptive)
    if result.answers is not None:
        m[metric_key(prefix, "boxed_share")] = result.answers.boxed_share
        m[metric_key(prefix, "truncated_share")] = result.answers.truncated_share
    if result.entropy is not None:  # the entropy view (boundlab.probe.entropy)
        for name, v in result.entropy.fields("").items():
            m[metric_key(prefix, "entropy", name)] = v
    if result.curve_strict is not None:
        for k in powers_of_two(cur.kmax):
            m[metric_key(prefix, "strict", f"pass@{k}")] = result.curve_strict.at(k)
            m[metric_key(prefix, "answer", f"pass@{k}")] = result.curve.at(k)
            m[metric_key(prefix, "gap", f"pass@{k}")] = result.curve.at(k) - result.curve_strict.at(k)
    for tag, g in (groups or {}).items():
        tag = str(tag).replace("/", "_")
        for k in powers_of_two(len(g["curve"])):
            m[metric_key(tier_prefix(prefix), tag, metric, f"pass@{k}")] = g["curve"][k - 1]
        m[metric_key(tier_prefix(prefix), tag, metric, "saturated")] = int(g["saturated"])
        if g.get("entropy_mean") is not None:
            m[metric_key(tier_prefix(prefix), tag, "entropy", "mean")] = g["entropy_mean"]
    return m


def log_probe(logger: Any, result: ProbeResult, step: int, run_dir: Path, task: Task | None = None,
              ci: float = 0.95) -> None:
    logger.define_step_metric(PROBE, PROBE_STEP)
    logger.define_step_metric(tier_prefix(PROBE), PROBE_STEP)
    metrics = passk_metrics(result, groups=_groups(result, task, ci))
    metrics[PROBE_STEP] = step
    logger.log(metrics)
    cur = result.curve
    logger.log_line_plot(metric_key(PROBE, "passk_curve"), cur.ks.tolist(),
                         {"pass@k": cur.pass_at_k.tolist()},
                         title="pass@k", xname="k", step_metrics={PROBE_STEP: step})
    stops = _stops(result)
    logger.log_table(metric_key(PROBE, "problems"),
                     ["problem_id", "n", "c"] + (["stop", "round"] if stops else []),
                     [[pid, int(n), int(c)] + (list(stops[i]) if stops else [])
                      for i, (pid, n, c) in enumerate(zip(result.problem_ids, result.n, result.c))],
                     extra={PROBE_STEP: step})
    png = run_dir / "passk.png"
    if png.exists():
        logger.log_image(metric_key(PROBE, "passk_plot"), png, extra={PROBE_STEP: step})
    logger.update_summary(metrics)


def print_summary(result: ProbeResult, store_path: Path, max_new_tokens: int | None = None,
                  task: Task | None = None, ci: float = 0.95) -> None:
    metric = headline_metric(result)
    cur, c = view(result, metric)
    ks = powers_of_two(cur.kmax)
    print()
    print(f"probe: {result.model_name} on {result.task_name}: {len(result.problem_ids)} problems, "
          + (f"n = {cur.kmax} samples each" if result.adaptive is None else
             f"n = {_n_range(result)} samples (adaptive; pass@k up to k = {cur.kmax})"))
    if metric == STRICT:
        print("  headline: strict pass@k (right answer and a valid trace); answer-only beside it, "
              "with the gap (answer-only - strict)")
    for note in result.notes:
        print(f"  note: {note}")
    width = max(len(f"pass@{k}") for k in ks)
    pct = f"{round(ci * 100):d}% CI"
    if metric == STRICT:
        print(f"  {'':>{width}}  {'strict':>6}  [{pct:^14}]  answer-only     gap")
    for k in ks:
        i = k - 1
        line = (f"  {f'pass@{k}':>{width}}  {cur.pass_at_k[i]:.4f}  "
                f"[{cur.ci_low[i]:.4f}, {cur.ci_high[i]:.4f}]")
        if metric == STRICT:
            a = result.curve.pass_at_k[i]
            line += f"       {a:.4f}  {a - cur.pass_at_k[i]:+.4f}"
        print(line)
    _, ac = view(result, ANSWER)
    solv = f"  solvable (c > 0): {int((c > 0).sum())} of {len(result.problem_ids)}"
    if metric == STRICT:
        solv += f" with a valid trace, {int((ac > 0).sum())} answer-only"
    print(solv)
    sat = saturation(cur)
    if sat["saturated"]:
        print(f"  saturated: every problem is solved within n = {cur.kmax} samples, so pass@{cur.kmax} "
              f"= 1 and its interval collapses; 95% upper bound on the share of problems this model "
              f"cannot solve: 3/P = {sat['rule_of_three']:.3f} (rule of three)")
    groups = _groups(result, task, ci)
    if groups:
        print(f"  by {task.group_by} ({metric} pass@1 and pass@{cur.kmax}, {pct}):")
        for tag, g in groups.items():
            line = (f"    {tag:>6} ({g['problems']:>4})  {g['pass@1']:.4f} [{g['pass@1_ci_low']:.3f}, "
                    f"{g['pass@1_ci_high']:.3f}]  {g['pass@n']:.4f} [{g['pass@n_ci_low']:.3f}, "
                    f"{g['pass@n_ci_high']:.3f}]")
            if metric == STRICT:
                line += f"  answer-only {g['answer_pass@1']:.4f} {g['answer_pass@n']:.4f}"
            if g["saturated"]:
                line += f"  SATURATED (3/P = {g['rule_of_three']:.3f})"
            print(line)
    for line in summary_lines(result.answers, max_new_tokens):
        print(line)
    ent_line = entropy_line(result.entropy)
    if ent_line:
        print(ent_line)
    if result.new_samples:
        rate = result.new_samples / max(result.seconds, 1e-9)
        verb = "scored" if result.model_name.startswith("samples:") else "sampled"
        print(f"  {verb} {result.new_samples} new completions in {result.seconds:.1f} s "
              f"({rate:.3g} samples/s)")
    else:
        print("  all samples came from the store (nothing new to sample)")
    print(f"  store: {store_path} (probe {result.key})")
