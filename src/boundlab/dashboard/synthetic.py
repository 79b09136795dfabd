"""A synthetic run dir for the dashboard's tests and benchmark, written through the project's own
store API (`Store.ensure_probe` / `add_samples`) and run-dir IO: a base probe and `checkpoints`
checkpoint probes of `problems` problems with `n` samples each. Each probe row holds the fields the
dashboard reads, computed from the stored counts with the project's estimator, so the page's
numbers can be checked against the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from boundlab.probe.compare import crossing_k
from boundlab.probe.curves import compute_curve
from boundlab.probe.store import SampleRow, Store
from boundlab.rundir import PROBES_FILE
from boundlab.rundir.io import write_jsonl


def _text(pid: str, step: int, idx: int, ok: bool) -> str:
    return f"{pid} step {step} sample {idx}: 3*6=18>18+1=19;A:{19 if ok else 20}"


def make_run(run_dir: str | Path, store: Store, checkpoints: int = 3, problems: int = 8, n: int = 4,
             seed: int = 0, text: Callable[[str, int, int, bool], str] = _text,
             bootstrap_iters: int = 50, step_every: int = 2, settings: dict | None = None,
             task_fp: str = "task") -> list[dict]:
    """Write the run's probes.jsonl and its samples; return the rows. Rates: each problem has a base
    rate; checkpoints sharpen it (easy problems up, the hardest lost), so lost and gained both occur.
    `settings` and `task_fp`: the probes' key settings (default {"n": n}) and task fingerprint in
    the store, so runs probed unlike each other can be made."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    pids = [f"p{j:04d}" for j in range(problems)]
    base_rate = rng.beta(0.6, 1.2, size=problems)
    rows: list[dict] = []
    base_c = base_curve = None
    for t in range(checkpoints + 1):
        step = t * step_every
        kind = "base" if t == 0 else "checkpoint"
        sharpen = 1 + 0.15 * t
        rate = np.clip(base_rate ** sharpen * (1 + 0.1 * t), 0, 1) if t else base_rate
        key = f"synthetic-{seed}-{step}-{kind}"
        store.ensure_probe(key, f"model-{step}", task_fp, {"n": n} if settings is None else settings, model_name=f"synthetic@{step}",
                           task_name="synthetic")
        c = np.zeros(problems, dtype=np.int64)
        batch: list[SampleRow] = []
        for j, pid in enumerate(pids):
            ok = rng.random(n) < rate[j]
            c[j] = int(ok.sum())
            batch += [SampleRow(pid, i, text(pid, step, i, bool(ok[i])), "19" if ok[i] else "20",
                                bool(ok[i]), None, "correct" if ok[i] else "wrong", 12) for i in range(n)]
            if len(batch) >= 50_000:
                store.add_samples(key, batch)
                batch = []
        store.add_samples(key, batch)
        cur = compute_curve(np.full(problems, n), c, bootstrap_iters=bootstrap_iters, seed=seed)
        row = {"step": step, "kind": kind, "metric": "answer", "n": n, "problems": problems,
               "pass@1": cur.at(1), "pass@1_ci_low": float(cur.ci_low[0]), "pass@1_ci_high": float(cur.ci_high[0]),
               "pass@n": cur.at(n), "pass@n_ci_low": float(cur.ci_low[-1]), "pass@n_ci_high": float(cur.ci_high[-1]),
               "solvable": int((c > 0).sum()), "probe_key": key, "seed": seed,
               "curve": [round(float(x), 6) for x in cur.pass_at_k]}
        if t == 0:
            base_c, base_curve = c, cur.pass_at_k
        else:
            row["lost"] = int(((base_c > 0) & (c == 0)).sum())
            row["gained"] = int(((base_c == 0) & (c > 0)).sum())
            row["delta_pass@1"] = row["pass@1"] - rows[0]["pass@1"]
            row["delta_pass@n"] = row["pass@n"] - rows[0]["pass@n"]
            row["crossing_k"] = crossing_k(base_curve, cur.pass_at_k)
        rows.append(row)
    write_jsonl(run_dir / PROBES_FILE, rows)
    return rows
