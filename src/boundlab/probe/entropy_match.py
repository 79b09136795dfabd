"""The temperature control: does a trained model sampled hotter, until its entropy matches the
base's, recover the base's pass@k? `python probe.py model.path=CKPT match_entropy.of=BASE_DIR`.

Yue et al. (2025) note that RLVR lowers the output entropy and ask whether the lost pass@k at large k
is only that; raising the trained model's temperature until its entropy matches the base's is their
control. Here, as one command:

1. The search subsample: `match_entropy.problems` problems spread evenly over the probed task
   (after probe.limit), `match_entropy.n` samples each (a few hundred samples in all).
2. The target: the base's mean per-sample entropy on that subsample at `match_entropy.base_temperature`
   (null: probe.temperature, T0).
3. The search: the checkpoint's entropy on the subsample at T0, at `t_max_factor` x T0, then bisection
   in between for at most `steps` steps, stopping once within `tol` (relative) of the target. Every
   point is a real probe in the store, under its own key (the temperature is part of the probe key),
   with the probe's seed at every temperature (common random numbers: the draws differ only where
   the distributions do). The chosen temperature is the point whose entropy came closest to the
   target. If the checkpoint is already at or above the target at T0, T0 is kept; if it stays
   below at the top of the range, the top is taken and said so (`status`).
4. Three full probes (probe.n on every problem): the base at its temperature, the checkpoint at T0
   and at the chosen temperature; pass@k of each, the checkpoint's Δ against the base with paired
   bootstrap intervals (`boundlab.probe.compare`), and the entropies of all three.

Outputs in the run dir: `entropy_match.json` (everything above), `entropy_match.csv` (pass@k per k
of the three probes, headline metric) and `entropy_match.png`; W&B `probe/entropy_match/...`.
The entropy is a sample's mean per-token entropy at its own sampling temperature and top-p
(`boundlab.probe.entropy`), so a hotter probe's entropy is measured at the hotter temperature.

`match_entropy.tokens=decision` (toy2) matches the entropy of the *decision tokens* only (where a trace
chooses its strategy; `boundlab.probe.decision_entropy`): RL's extra entropy can be execution noise
while its decisions collapse, and matching all tokens would then leave the decisions cold. The
search subsample's texts are then kept (`keep_text=all`) and scored again under each model at each
temperature tried; every point's decision/rest split is in `search.splits`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from boundlab.config import ModelConfig, ProbeMain, as_typed
from boundlab.errors import UserError
from boundlab.probe.compare import compare, headline_metric, view
from boundlab.probe.estimator import powers_of_two
from boundlab.probe.runner import ProbeResult
from boundlab.rundir.io import dumps as strict_dumps
from boundlab.tasks import Task

if TYPE_CHECKING:
    from boundlab.probe.context import ProbeContext

MATCHED, ALREADY, NOT_REACHED, CLOSEST = "matched", "already_at_or_above", "not_reached", "closest"
# What the search matches (match_entropy.tokens): every token's entropy, or the decision tokens' only.
ON = ("all", "decision")


@dataclass
class SearchPoint:
    temperature: float
    entropy: float
    key: str = ""


@dataclass
class Search:
    target: float
    chosen: float
    status: str
    points: list[SearchPoint] = field(default_factory=list)

    @property
    def chosen_entropy(self) -> float:
        return next(p.entropy for p in self.points if p.temperature == self.chosen)


def _round_t(t: float) -> float:
    """Temperatures are part of the probe key: rounded, so a rerun finds the same stored probes."""
    return round(float(t), 4)


def search_temperature(measure: Callable[[float], tuple[float, str]], target: float, t0: float,
                       factor: float = 3.0, steps: int = 6, tol: float = 0.02) -> Search:
    """Bisection over T in [t0, factor * t0] for the temperature whose entropy (`measure(T)` ->
    (mean entropy, probe key)) matches `target` within `tol` x target. Entropy is taken to rise with
    T (it does token by token; over sampled sequences it is an estimate, hence `closest`)."""
    points: list[SearchPoint] = []

    def at(t: float) -> float:
        t = _round_t(t)
        h, key = measure(t)
        points.append(SearchPoint(t, float(h), key))
        return float(h)

    band = tol * abs(target)
    lo, hi = _round_t(t0), _round_t(factor * t0)
    h_lo = at(lo)
    if h_lo >= target - band:
        return Search(target, lo, MATCHED if abs(h_lo - target) <= band else ALREADY, points)
    h_hi = at(hi)
    if h_hi < target - band:
        return Search(target, hi, NOT_REACHED, points)
    if abs(h_hi - target) <= band:
        return Search(target, hi, MATCHED, points)
    for _ in range(steps):
        mid = _round_t((lo + hi) / 2)
        if mid in (lo, hi):
            break
        h = at(mid)
        if abs(h - target) <= band:
            return Search(target, mid, MATCHED, points)
        lo, hi = (mid, hi) if h < target else (lo, mid)
    best = min(points, key=lambda p: abs(p.entropy - target))
    return Search(target, best.temperature, CLOSEST, points)


def spread(task: Task, count: int) -> Task:
    """`count` problems spread evenly over the task (all of them when it has no more)."""
    if count >= len(task):
        return task
    idx = np.unique(np.linspace(0, len(task) - 1, count).round().astype(int))
    return task.with_problems([task.problems[i] for i in idx])


def _entropy_of(res: ProbeResult, who: str) -> float:
    """The probe's mean entropy; every sample must have one (a mean over the part recorded would
    silently compare other samples than the pass@k's)."""
    e = res.entropy
    if e is None or e.recorded < e.samples:
        got = "none" if e is None else f"{e.recorded} of {e.samples}"
        raise UserError(f"{who}: {got} of the stored samples of probe {res.key} have an entropy "
                        f"(samples stored before the entropy view, or by a sampler that does not record "
                        f"it, e.g. vLLM): the temperature control needs all; rerun with another "
                        f"store.path (or probe.seed) and sampler=hf so they are sampled again")
    return e.mean


def _decision_entropy(res: ProbeResult, who: str, task: Task, store: Any, sampler: Any, tok: Any,
                      t: float, top_p: float, n: int, splits: dict[str, dict[str, Any]],
                      verifier: Any) -> float:
    """The probe's pooled decision-token entropy at temperature t, its stored texts scored again
    under the sampler's model (`boundlab.probe.decision_entropy`); its split goes into `splits`."""
    from boundlab.probe.decision_entropy import probe_split

    model = getattr(sampler, "model", None)
    if model is None or not hasattr(model, "parameters"):
        raise UserError(f"match_entropy.tokens=decision scores the stored samples under the model, and "
                        f"sampler {getattr(sampler, 'name', '?')} holds none: use sampler=hf")
    offsets = getattr(verifier, "decision_offsets", None)
    if offsets is None:
        raise UserError(f"match_entropy.tokens=decision: verifier {getattr(verifier, 'name', '?')} "
                        f"defines no decision tokens (toy2's does)")
    s = probe_split(store, res.key, task, model, tok, t, offsets, top_p, n)
    if not s.decision_tokens:
        raise UserError(f"{who}: no decision token in the search subsample's samples (probe "
                        f"{res.key}); match on decision tokens over tiers that have decisions "
                        f"(task.toy2.tiers=[H1,H2,B3,...]) or use match_entropy.tokens=all")
    splits[res.key] = {"temperature": t, **s.fields()}
    return s.decision


def _summary(res: ProbeResult, temperature: float) -> dict[str, Any]:
    metric = headline_metric(res)
    cur, c = view(res, metric)
    return {"key": res.key, "temperature": temperature, "metric": metric,
            "entropy": None if res.entropy is None else asdict(res.entropy),
            "pass@k": {str(k): cur.at(k) for k in powers_of_two(cur.kmax)},
            "solvable": int((c > 0).sum())}


def run_match(cfg: ProbeMain, ctx: ProbeContext, logger_factory: Callable[[], Any],
              run_dir: Path) -> dict[str, Any]:
    """The whole control (module docstring) on `ctx`'s task, store and verifier (a
    boundlab.probe.context.ProbeContext); returns what entropy_match.json holds."""
    from dataclasses import replace

    from boundlab.probe.runner import probe_model
    from boundlab.probe.spec import ProbeSpec

    task, verifier, store = ctx.task, ctx.verifier, ctx.store

    m = cfg.match_entropy
    match_on = str(m.tokens)
    if match_on not in ON:
        raise UserError(f"match_entropy.tokens={match_on!r}: must be one of {', '.join(ON)}")
    if match_on == "decision" and task.name != "toy2":
        raise UserError(f"match_entropy.tokens=decision needs task=toy2 (decision tokens are defined by "
                        f"its trace grammar), not task={task.name}")
    t0 = _round_t(cfg.probe.temperature)
    t_base = float(m.base_temperature) if m.base_temperature is not None else t0
    base_cfg = replace(as_typed(cfg.model, ModelConfig), path=str(m.of), gguf_package=None,
                       name=f"{cfg.model.name}-entropy-base")
    sub = spread(task, int(m.problems))
    # The probe group's settings, fixed-n (the control never probes adaptively), at each temperature.
    spec0 = replace(ProbeSpec.from_config(cfg.probe), adaptive=None)
    gen0 = spec0.gen
    started = time.time()

    def open_model(model_cfg: ModelConfig) -> tuple[Any, Any, str]:
        model = ctx.open_model(model_cfg)
        return model.sampler, model.tokenizer, model.fingerprint

    def probe(sampler: Any, tok: Any, fp: str, name: str, on: Task, n: int, t: float,
              keep_text: str | None = None) -> ProbeResult:
        gen = type(gen0)(temperature=t, top_p=gen0.top_p, max_new_tokens=gen0.max_new_tokens,
                         stop=gen0.stop)
        spec = replace(spec0, n=n, gen=gen, keep_text=keep_text or spec0.keep_text)
        return probe_model(ctx.with_task(on), spec, sampler, fp, tok, f"{name} T={t:g}")

    # The search subsample's probes keep every text when the decision-token entropy (which scores
    # the texts again) is matched.
    sub_keep = "all" if match_on == "decision" else None
    splits: dict[str, dict[str, Any]] = {}

    def search_entropy(res: ProbeResult, who: str, sampler: Any, tok: Any, t: float) -> float:
        if match_on == "all":
            return _entropy_of(res, who)
        return _decision_entropy(res, who, sub, store, sampler, tok, t, gen0.top_p, int(m.n), splits,
                                 verifier)

    # The base first (its sampler closed before the checkpoint's opens: one model in memory).
    sampler, tok, fp = open_model(base_cfg)
    try:
        base_sub = probe(sampler, tok, fp, "base", sub, int(m.n), t_base, sub_keep)
        target = search_entropy(base_sub, "the base", sampler, tok, t_base)
        base_full = probe(sampler, tok, fp, "base", task, int(cfg.probe.n), t_base)
    finally:
        sampler.close()
    sampler, tok, fp = open_model(cfg.model)
    try:
        def measure(t: float) -> tuple[float, str]:
            res = probe(sampler, tok, fp, cfg.model.name, sub, int(m.n), t, sub_keep)
            return search_entropy(res, f"{cfg.model.name} at T={t:g}", sampler, tok, t), res.key

        search = search_temperature(measure, target, t0, float(m.t_max_factor), int(m.steps),
                                    float(m.tol))
        ck_t0 = probe(sampler, tok, fp, cfg.model.name, task, int(cfg.probe.n), t0)
        ck_match = (ck_t0 if search.chosen == _round_t(t0)
                    else probe(sampler, tok, fp, cfg.model.name, task, int(cfg.probe.n), search.chosen))
    finally:
        sampler.close()

    metric = headline_metric(base_full, ck_t0, ck_match)
    iters, ci = int(cfg.probe.bootstrap_iters), float(cfg.probe.ci)
    keep = ("n", "delta_pass@1", "delta_pass@1_ci_low", "delta_pass@1_ci_high", "delta_pass@n",
            "delta_pass@n_ci_low", "delta_pass@n_ci_high", "lost", "gained")
    out: dict[str, Any] = {
        "base": {"path": str(m.of), **_summary(base_full, t_base)},
        "checkpoint": {"path": str(cfg.model.path), "name": cfg.model.name},
        "at_t0": _summary(ck_t0, t0),
        "matched": _summary(ck_match, search.chosen),
        "search": {"problems": len(sub), "n": int(m.n), "target_entropy": search.target,
                   "base_temperature": t_base, "t0": t0, "t_max": _round_t(float(m.t_max_factor) * t0),
                   "chosen_temperature": search.chosen, "chosen_entropy": search.chosen_entropy,
                   "status": search.status, "tol": float(m.tol), "tokens": match_on,
                   # on=decision: each search probe's decision/rest split, by probe key
                   "splits": splits,
                   "points": [asdict(p) for p in search.points]},
        "metric": metric,
        "vs_base_at_t0": {k: v for k, v in compare(base_full, ck_t0, iters, ci, metric).items()
                          if k in keep},
        "vs_base_matched": {k: v for k, v in compare(base_full, ck_match, iters, ci, metric).items()
                            if k in keep},
        "seconds": round(time.time() - started, 1),
    }
    _write(out, (base_full, ck_t0, ck_match), run_dir)
    _log(out, logger_factory(), run_dir)
    for line in summary_lines(out):
        print(line)
    return out


def _write(out: dict[str, Any], results: tuple[ProbeResult, ...], run_dir: Path) -> None:
    from boundlab.plots.curves import plot_passk

    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "entropy_match.json").write_text(strict_dumps(out, indent=2, default=float) + "\n")
    labels = (f"base (T={out['base']['temperature']:g})", f"checkpoint (T0={out['at_t0']['temperature']:g})",
              f"checkpoint (T={out['matched']['temperature']:g}, entropy matched)")
    curves = [view(r, out["metric"])[0] for r in results]
    kmax = min(c.kmax for c in curves)
    lines = ["k,base,checkpoint_t0,checkpoint_matched"]
    lines += [f"{k},{curves[0].at(k):.10f},{curves[1].at(k):.10f},{curves[2].at(k):.10f}"
              for k in range(1, kmax + 1)]
    (run_dir / "entropy_match.csv").write_text("\n".join(lines) + "\n")
    plot_passk({lab: (c.ks, c.pass_at_k, c.ci_low, c.ci_high) for lab, c in zip(labels, curves)},
               run_dir / "entropy_match.png",
               title=f"{out['metric']} pass@k: the temperature control")


def _log(out: dict[str, Any], logger: Any, run_dir: Path) -> None:
    from boundlab.tracking.names import PROBE, metric_key

    if logger is None:
        return
    try:
        p = metric_key(PROBE, "entropy_match")
        s = out["search"]
        m: dict[str, Any] = {
            f"{p}/temperature": s["chosen_temperature"], f"{p}/t0": s["t0"],
            f"{p}/base_temperature": s["base_temperature"], f"{p}/target_entropy": s["target_entropy"],
            f"{p}/search_entropy": s["chosen_entropy"], f"{p}/matched": int(s["status"] == MATCHED),
            f"{p}/search_points": len(s["points"])}
        for who in ("base", "at_t0", "matched"):
            if out[who]["entropy"] is not None:
                m[f"{p}/{who}/entropy_mean"] = out[who]["entropy"]["mean"]
            for k, v in out[who]["pass@k"].items():
                m[f"{p}/{who}/pass@{k}"] = v
        for who in ("vs_base_at_t0", "vs_base_matched"):
            for k, v in out[who].items():
                if k != "n":
                    m[f"{p}/{who}/{k}"] = v
        logger.log(m)
        logger.update_summary(m)
        png = run_dir / "entropy_match.png"
        if png.exists():
            logger.log_image(f"{p}/plot", png)
    finally:
        logger.finish()


def summary_lines(out: dict[str, Any]) -> list[str]:
    s, n = out["search"], out["vs_base_matched"]["n"]

    def ent(who: str) -> str:
        e = out[who]["entropy"]
        return "n/a" if e is None else f"{e['mean']:.4f}"

    def row(label: str, who: str, d: dict[str, Any] | None) -> str:
        pk = out[who]["pass@k"]
        line = f"  {label:<34} entropy {ent(who):>7}  pass@1 {pk['1']:.4f}  pass@{n} {pk[str(n)]:.4f}"
        if d is not None:
            line += (f"  d pass@1 {d['delta_pass@1']:+.4f} [{d['delta_pass@1_ci_low']:+.3f},"
                     f"{d['delta_pass@1_ci_high']:+.3f}]  d pass@{n} {d['delta_pass@n']:+.4f} "
                     f"[{d['delta_pass@n_ci_low']:+.3f},{d['delta_pass@n_ci_high']:+.3f}]")
        return line

    status = {MATCHED: f"matched within {s['tol']:.0%}", CLOSEST: "closest of the points tried",
              ALREADY: "the checkpoint's entropy is already at or above the base's at T0",
              NOT_REACHED: f"not reached by T = {s['t_max']:g}: the top of the range is used"}[s["status"]]
    tried = ", ".join(f"T={p['temperature']:g}: {p['entropy']:.4f}" for p in s["points"])
    d = out["vs_base_matched"]
    recovered = d["delta_pass@n_ci_low"] <= 0 <= d["delta_pass@n_ci_high"]
    verdict = ("pass@{n} at the matched temperature is within the base's (the interval of d holds 0)"
               if recovered else
               "pass@{n} at the matched temperature differs from the base's (the interval of d excludes 0)")
    return [
        "",
        f"entropy match ({out['metric']} pass@k; entropy = mean per-token entropy per sample, nats):",
        f"  search on {s['problems']} problems x {s['n']} samples, matching "
        f"{'decision-token' if s.get('tokens') == 'decision' else 'all-token'} entropy: "
        f"base {s['target_entropy']:.4f} "
        f"at T={s['base_temperature']:g}; checkpoint {tried}",
        f"  chosen T = {s['chosen_temperature']:g} ({status})",
        row(f"base T={out['base']['temperature']:g}", "base", None),
        row(f"checkpoint T0={out['at_t0']['temperature']:g}", "at_t0", out["vs_base_at_t0"]),
        row(f"checkpoint T={out['matched']['temperature']:g} (matched)", "matched", d),
        "  " + verdict.format(n=n),
        f"  wrote entropy_match.json, entropy_match.csv, entropy_match.png ({out['seconds']:.0f} s)",
    ]
