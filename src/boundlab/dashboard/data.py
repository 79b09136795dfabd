"""The JSON behind each view, built from probes.jsonl rows and the probe store. Every number shown is
one the run wrote (probes.jsonl) or a count read from the store; the only number computed here is
each curve's per-k confidence band (see `curve_band`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations
from typing import Any
from urllib.parse import quote

import numpy as np

from boundlab.probe.alike import differences, store_differences
from boundlab.dashboard.index import Index, RunEntry
from boundlab.probe.estimator import pass_at_k_matrix, pass_at_k_table
from boundlab.probe.store import ProblemCounts
from boundlab.rundir import CHECKPOINTS_DIR, HYDRA_CONFIG, RUN_INFO
from boundlab.rundir.checkpoints import latest_complete, step_of
from boundlab.rundir.io import RunDirError, read_json

# Samples per page in the samples view (the page shows 20 of each side; the problem's n samples are
# read from the store, milliseconds at n = 1024).
PAGE = 20
# Row fields the overview sends (the rest of a row stays on disk).
_FIELDS = ["step", "kind", "metric", "n", "problems", "pass@1", "pass@1_ci_low", "pass@1_ci_high",
           "pass@n", "pass@n_ci_low", "pass@n_ci_high", "solvable", "lost", "gained", "crossing_k",
           "crossing_k_ci_low", "crossing_k_ci_high", "crossing_share", "delta_pass@1",
           "delta_pass@n", "saturated", "curve", "group_by", "groups", "seed", "unlike_base"]


def _clean(v: Any) -> Any:
    """JSON has no inf or NaN: an interval open beyond n is sent as null with a flag."""
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def runs_list(index: Index) -> list[dict[str, Any]]:
    return [{"id": r.id, "label": r.label, "sweep": r.sweep, "overrides": r.overrides,
             "algo": r.info.get("algo"), "probes": len(r.rows),
             "steps": [x["step"] for x in r.rows if x["kind"] == "checkpoint"],
             "has_store": index.store(r) is not None} for r in index.runs]


def overview(run: RunEntry) -> dict[str, Any]:
    """Views 1, 2 and 4: every probe's curve and headline numbers, from probes.jsonl alone."""
    probes = []
    for i, r in enumerate(run.rows):
        p = {k: r.get(k) for k in _FIELDS if k in r}
        p["index"] = i
        hi = r.get("crossing_k_ci_high")
        p["crossing_open"] = isinstance(hi, float) and math.isinf(hi)
        probes.append(p)
    return _clean({"id": run.id, "label": run.label, "overrides": run.overrides, "probes": probes})


def _c(pc: ProblemCounts, metric: str) -> int:
    """The headline metric's count: strict (right answer and valid trace) when the row says so."""
    return pc.c_strict if metric == "strict" and pc.c_strict is not None else pc.c


@lru_cache(maxsize=4)
def _table(n: int) -> np.ndarray:
    """pass_at_k_table(n, n), once per n (70 ms and 8 MB at n = 1024; every band of a run shares it)."""
    t = pass_at_k_table(n, n)
    t.flags.writeable = False
    return t


def _design_matrix(index: Index, run: RunEntry, row: dict[str, Any], ids: list[str], n: int
                   ) -> np.ndarray | None:
    """Problems x k pass@k of an adaptive probe by its own design (boundlab.probe.adaptive.matrix,
    the matrix the tracker's curve comes from); None for a fixed-n probe or without its store."""
    from boundlab.probe import adaptive as AD

    store, key = index.store(run), row.get("probe_key")
    info = store.probe_info(key) if store is not None and key else None
    plan = None if info is None else AD.plan_of(info["settings"])
    if plan is None:
        return None
    P = len(store.counts(key))  # the probe's own problems: its Bonferroni split
    return AD.matrix(store, key, ids, plan, strict=row["metric"] == "strict", problems=P)[:, :n]


def curve_band(index: Index, run: RunEntry, i: int, z: float = 1.96) -> dict[str, Any] | None:
    """A per-k 95% band for probe i's curve: mean over problems of the unbiased per-problem pass@k,
    +- z standard errors (normal approximation over problems). The rows' own pass@1 and pass@n CIs
    are bootstraps; this band is for the shape between them, and it says so on the page."""
    row = run.probe(i)
    counts = index.counts(run, row)
    if counts is None:
        return None
    n = int(row["n"])
    pcs = [pc for pc in counts.values() if pc.n >= n]
    if not pcs:
        return None
    ck = ("band", row.get("probe_key"), n, row["metric"])
    if ck in index.cache:
        return dict(index.cache[ck], index=i)
    design = _design_matrix(index, run, row, list(counts), n)
    if design is not None:
        # An adaptive probe: the band comes from the matrix its own curve was drawn from (k <= n0
        # from the first round, a certified problem 1 beyond it), over every problem; counting
        # only the problems that ran to n (or reading uneven n as plain counts) would band another
        # curve than the one drawn.
        mat, how = design, "the adaptive design's own per-problem pass@k"
        pcs = list(counts.values())
    else:
        ns = np.array([pc.n for pc in pcs])
        cs = np.array([_c(pc, row["metric"]) for pc in pcs])
        # Every problem at the same n (the usual probe): rows of one (n+1) x n table, ~30x faster
        # than the matrix at n = 1024; the same product form.
        mat = _table(n)[cs] if np.all(ns == n) else pass_at_k_matrix(ns, cs, n)
        how = "per-problem pass@k"
    mean = mat.mean(axis=0)
    se = mat.std(axis=0, ddof=1) / math.sqrt(len(pcs)) if len(pcs) > 1 else np.zeros(n)
    out = {"index": i, "method": f"normal approximation over {len(pcs)} problems (mean +- 1.96 SE of {how})",
           "low": np.clip(mean - z * se, 0, 1).round(6).tolist(),
           "high": np.clip(mean + z * se, 0, 1).round(6).tolist(),
           "problems": len(pcs)}
    index.cache[ck] = out
    return out


def problem_map(index: Index, run: RunEntry) -> dict[str, Any]:
    """View 3: problems x probes, each cell [c, n]; rows in `Index.problems` order (the base's rate,
    highest first). A problem is lost at a checkpoint when the base solved it (c > 0) and the
    checkpoint did not, gained the other way round."""
    ids = index.problems(run)
    cols = []
    for i, r in enumerate(run.rows):
        counts = index.counts(run, r) or {}
        cells = []
        for pid in ids:
            pc = counts.get(pid)
            cells.append(None if pc is None else [_c(pc, r["metric"]), pc.n])
        cols.append({"index": i, "kind": r["kind"], "step": r["step"], "cells": cells})
    base = next((c for c in cols if c["kind"] == "base"), None)
    store = index.store(run)
    base_key = next((r.get("probe_key") for r in run.rows if r["kind"] == "base"), None)
    for col, r in zip(cols, run.rows):
        col["lost"], col["gained"] = [], []
        if base is None or col is base:
            continue
        # Lost/gained against a base probed otherwise: named on the column (boundlab.probe.alike).
        col["unlike_base"] = (store_differences(store, base_key, r["probe_key"])
                              if store is not None and base_key and r.get("probe_key") else
                              r.get("unlike_base", []))
        for j, (b, x) in enumerate(zip(base["cells"], col["cells"])):
            if b is None or x is None:
                continue
            if b[0] > 0 and x[0] == 0:
                col["lost"].append(j)
            elif b[0] == 0 and x[0] > 0:
                col["gained"].append(j)
    index.flush()  # every probe's counts were just read: the next process reads them from the index
    return {"id": run.id, "problems": ids, "columns": cols, "has_store": index.store(run) is not None}


def samples_page(index: Index, run: RunEntry, p: int, i: int, page: int) -> dict[str, Any]:
    """View 5: one page of problem p's samples at probe i and at the base, from the store."""
    pid = index.problem(run, p)
    st = index.store(run)
    if st is None:
        raise KeyError(f"run {run.id} has no probe store")
    if page < 0:
        raise KeyError("page must be >= 0")
    out: dict[str, Any] = {"problem": pid, "problem_index": p, "page": page, "page_size": PAGE, "sides": []}
    sides = [("checkpoint" if run.probe(i)["kind"] != "base" else "base", run.probe(i))]
    if run.base is not None and run.probe(i) is not run.base:
        sides.append(("base", run.base))
    for who, row in sides:
        # One problem's samples (n of them, 1024 at most in practice: milliseconds), then the page.
        every = st.samples(row["probe_key"], pid)
        rows, total = every[page * PAGE:(page + 1) * PAGE], len(every)
        out["sides"].append({
            "who": who, "step": row["step"], "kind": row["kind"], "total": total,
            "samples": [{"idx": s.idx, "text": s.text, "text_dropped": s.text_dropped,
                         "extracted": s.extracted, "correct": s.correct, "strict": s.strict,
                         "outcome": s.outcome} for s in rows]})
    return out


def sweep(index: Index) -> dict[str, Any]:
    """View 6: the runs of each sweep dir side by side, with the overrides that differ between them
    (the swept values) to colour them by."""
    groups: dict[str, list[RunEntry]] = {}
    for r in index.runs:
        if r.sweep is not None:
            groups.setdefault(r.sweep, []).append(r)
    out = []
    for name, runs in groups.items():
        keys = sorted({k for r in runs for k in r.overrides})
        swept = [k for k in keys if len({r.overrides.get(k) for r in runs}) > 1]
        out.append({"name": name, "swept": swept, "runs": [
            {"id": r.id, "label": r.label, "values": {k: r.overrides.get(k) for k in swept},
             "steps": [x["step"] for x in r.rows if x["kind"] == "checkpoint"],
             "pass@1": [x["pass@1"] for x in r.rows if x["kind"] == "checkpoint"],
             "pass@n": [x["pass@n"] for x in r.rows if x["kind"] == "checkpoint"],
             "base": _clean({k: r.base.get(k) for k in ("pass@1", "pass@n", "n")}) if r.base else None,
             "last_curve": next((x["curve"] for x in reversed(r.rows) if x["kind"] == "checkpoint"), None),
             # the base's own curve, to read each last checkpoint against (runs sharing a base
             # share its probe key, and the page draws it once)
             "base_curve": r.base.get("curve") if r.base else None,
             "base_key": r.base.get("probe_key") if r.base else None}
            for r in runs]})
    return {"sweeps": out}


# -- training curves, W&B, any runs compared (issue 38) ------------------------------------------
# The trainer's own log (trainer_state.json's log_history) that the run's view draws beside the
# boundary, in this order.
TRAIN_KEYS = ("reward", "reward_std", "kl", "entropy", "loss")
TRAINER_STATE = "trainer_state.json"


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def training_curves(run: RunEntry) -> dict[str, Any]:
    """reward, reward_std, kl, entropy and loss against step, from the log_history of the run's
    latest *complete* checkpoint (boundlab.rundir.checkpoints: a checkpoint still being written, or
    left half-written by a kill, is never read). `series` holds only the keys the trainer logged;
    `note` says in one line why there is nothing to draw, when there is not."""
    ck = latest_complete(run.path / CHECKPOINTS_DIR)
    if ck is None:
        return {"checkpoint": None, "step": None, "series": {},
                "note": "No complete checkpoint yet: the training curves (reward, KL, entropy, loss) "
                        "appear with the first saved checkpoint's trainer_state.json."}
    out: dict[str, Any] = {"checkpoint": f"{CHECKPOINTS_DIR}/{ck.name}", "step": step_of(ck), "series": {},
                           "note": None}
    try:
        state = read_json(ck / TRAINER_STATE, None, "the checkpoint's training log")
    except RunDirError as e:
        out["note"] = str(e)
        return out
    hist = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(hist, list):
        out["note"] = f"{out['checkpoint']} has no {TRAINER_STATE} with a log_history: no training curves."
        return out
    for key in TRAIN_KEYS:
        pts = sorted((int(h["step"]), float(h[key])) for h in hist
                     if isinstance(h, dict) and _finite(h.get(key)) and _finite(h.get("step")))
        if pts:
            out["series"][key] = {"step": [p[0] for p in pts], "value": [p[1] for p in pts]}
    if not out["series"]:
        out["note"] = (f"{out['checkpoint']}/{TRAINER_STATE} logs none of {', '.join(TRAIN_KEYS)}.")
    return out


def _logger_config(run: RunEntry) -> dict[str, Any]:
    """The run's saved `logger` group (.hydra/config.yaml), {} when there is none."""
    f = run.path / HYDRA_CONFIG
    if not f.is_file():
        return {}
    try:
        from omegaconf import OmegaConf

        got = OmegaConf.to_container(OmegaConf.load(f).get("logger") or {}, resolve=False)
    except Exception:  # noqa: BLE001 - a config this process cannot read: shown as unknown
        return {}
    return got if isinstance(got, dict) else {}


def wandb_info(run: RunEntry) -> dict[str, Any]:
    """The run's W&B run: its id (run_info.json's `wandb_run_id`), and either its URL (online, with
    the entity and project of the run's saved logger config) or the word that it is offline or
    disabled, with the `wandb sync` command when the offline folder is in the run dir. The mode is
    what the run dir shows: an `offline-run-*-<id>` folder means offline, whatever the config asked
    (an online init that failed falls back to offline; boundlab.tracking.logger)."""
    lg = _logger_config(run)
    try:  # read now: a run's W&B id is written once its logger has started, after the index saw it
        info = read_json(run.path / RUN_INFO, None) or run.info
    except RunDirError:
        info = run.info
    rid = info.get("wandb_run_id") if isinstance(info, dict) else None
    entity, project = lg.get("entity"), lg.get("project") or "boundlab"
    mode = str(lg.get("mode") or "").strip().lower() or None
    mode = {"dryrun": "offline", "run": "online"}.get(mode, mode)  # W&B's spellings (tracking.logger)
    out: dict[str, Any] = {"run_id": rid, "entity": entity, "project": project, "mode": mode,
                           "url": None, "sync": None, "offline_dir": None}
    if lg.get("name") == "none" or mode == "disabled":
        out["mode"] = "disabled"
        out["note"] = "W&B is disabled for this run" + (f" (run id {rid})." if rid else ".")
        return out
    if not rid:
        out["note"] = "No W&B run id in run_info.json."
        return out
    wdir = run.path / str(lg.get("dir") or ".") / "wandb"
    # run.path / wandb / offline-run-<time>-<id> (a resumed offline run adds another one)
    off = sorted(p for p in (wdir.glob(f"offline-run-*-{rid}") if wdir.is_dir() else []) if p.is_dir())
    on = sorted(p for p in (wdir.glob(f"run-*-{rid}") if wdir.is_dir() else []) if p.is_dir())
    if off or mode == "offline":
        out["mode"] = "offline"
        if off:
            rel = off[-1].relative_to(run.path) if off[-1].is_relative_to(run.path) else off[-1]
            out["offline_dir"] = str(rel)
            out["sync"] = f"wandb sync {off[-1]}"
            out["note"] = f"W&B run {rid} is offline: upload it with the command below."
        else:
            out["note"] = f"W&B run {rid} is offline (no offline-run-*-{rid} folder under this run dir)."
        return out
    if mode == "online" or on:
        out["mode"] = "online"
        if entity:
            q = lambda x: quote(str(x), safe="")  # noqa: E731 - a name never leaves its path segment
            out["url"] = f"https://wandb.ai/{q(entity)}/{q(project)}/runs/{q(rid)}"
            out["note"] = f"W&B run {rid}"
        else:
            out["note"] = (f"W&B run {rid} in project {project} (online; the entity is the account's "
                           f"default, which the run dir does not record, so no link).")
        return out
    out["note"] = f"W&B run {rid} (mode not recorded and no W&B folder under this run dir)."
    return out


def _last_checkpoint(run: RunEntry) -> dict[str, Any] | None:
    return next((r for r in reversed(run.rows) if r["kind"] == "checkpoint"), None)


def _probe_info(index: Index, run: RunEntry, row: dict[str, Any] | None) -> dict[str, Any] | None:
    st = index.store(run)
    key = row.get("probe_key") if row else None
    return st.probe_info(key) if st is not None and key else None


def probe_differences(index: Index, a: RunEntry, ra: dict[str, Any] | None, b: RunEntry,
                      rb: dict[str, Any] | None) -> list[str] | None:
    """What differs between probe row `ra` of run `a` and `rb` of run `b`: their sampling settings
    and task (boundlab.probe.alike, each probe read from its own run's store, so runs on different
    stores compare too) and the metric counted; None when either probe's settings are unknown (no
    store, or the probe is not in it)."""
    if ra is None or rb is None:
        return None
    out = []
    if ra.get("metric") != rb.get("metric"):
        out.append(f"metric {ra.get('metric')!r} vs {rb.get('metric')!r}")
    ia, ib = _probe_info(index, a, ra), _probe_info(index, b, rb)
    if ia is None or ib is None:
        return out or None
    return out + differences(ia["settings"], ib["settings"], ia["task_fp"], ib["task_fp"])


def compare(index: Index, ids: list[int]) -> dict[str, Any]:
    """Any set of indexed runs, whatever folder or sweep they are in: each run's last checkpoint
    curve with its base's, and for every pair of them whose last checkpoints (or bases) were probed
    unlike each other, what differs. A KeyError (404) for an unknown id."""
    runs = []
    for i in ids:
        r = index.run(i)
        if r not in runs:
            runs.append(r)
    entries = []
    for r in runs:
        last, base = _last_checkpoint(r), r.base
        entries.append(_clean({
            "id": r.id, "label": r.label, "sweep": r.sweep, "algo": r.info.get("algo"),
            "step": last["step"] if last else None, "metric": (last or base or {}).get("metric"),
            "last_curve": last.get("curve") if last else None,
            "base_curve": base.get("curve") if base else None,
            "base_key": base.get("probe_key") if base else None}))
    diffs, unknown = [], []
    for a, b in combinations(runs, 2):
        for what, ra, rb in (("last checkpoint", _last_checkpoint(a), _last_checkpoint(b)),
                             ("base", a.base, b.base)):
            if ra is None or rb is None:
                continue
            d = probe_differences(index, a, ra, b, rb)
            if d is None:
                unknown.append({"a": a.id, "b": b.id, "probe": what})
            elif d:
                diffs.append({"a": a.id, "b": b.id, "probe": what, "differences": d})
    index.flush()
    return {"runs": entries, "differences": diffs, "unknown": unknown}
