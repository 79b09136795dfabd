"""Boundary tracking over training: probe the base once, then every checkpoint, against the base.

Per probe it logs pass@k (powers of two and n), the change against the base at the same k, the
base-solvable problems lost and the new ones gained, an overlay of the checkpoint's curve on the
base's, and the boundary plot (pass@1 and pass@n against the step, the paper's Figure 1 right).
`boundary.csv` and `boundary.png` in the run dir are rewritten after every probe, W&B or not.
`probes.jsonl` records each finished probe, so a resumed run neither re-probes nor loses one; it and
`boundary.csv` are replaced atomically (`boundlab.rundir.io`), and a torn last line left by an older
writer or a full disk is skipped and cut off at load.

Every probe runs inside `isolated_rng()`: sampling seeds the global torch RNG, and an inline probe in
the training process must not move the trainer's RNG (probe settings would change the trained weights,
and a killed-and-resumed run, which restores the RNG saved with the checkpoint, would diverge).
"""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path
from typing import Any, Callable

from boundlab.probe.answer_stats import summary_lines
from boundlab.probe.compare import compare
from boundlab.probe.estimator import powers_of_two
from boundlab.probe.runner import ProbeResult, probe_model
from boundlab.probe.rng import isolated_rng
from boundlab.probe.spec import ProbeSpec
from boundlab.probe.store import Store
from boundlab.rundir import BOUNDARY_CSV, BOUNDARY_PNG, PASSK_BY_STEP_PNG, PROBES_FILE
from boundlab.rundir.io import append_jsonl, atomic_write_text, read_jsonl
from boundlab.tasks.base import Task
from boundlab.tracking.names import PROBE, PROBE_STEP, TRAIN_STEP, metric_key


def build_tracker(run_dir: Path, task: Task, store: Store, verifier: Any, logger: Any,
                  make_sampler: Callable[[str], tuple[Any, Any]], spec: ProbeSpec,
                  progress: bool = True) -> "BoundaryTracker":
    """The one way training and the detached watcher build a tracker."""
    return BoundaryTracker(run_dir, task, store, verifier, logger, make_sampler, spec, progress)


class BoundaryTracker:
    def __init__(self, run_dir: Path, task: Task, store: Store, verifier: Any, logger: Any,
                 make_sampler: Callable[[str], tuple[Any, Any]], spec: ProbeSpec,
                 progress: bool = True):
        self.run_dir = Path(run_dir)
        self.task, self.store, self.verifier, self.logger = task, store, verifier, logger
        self.make_sampler = make_sampler  # model dir -> (sampler, tokenizer)
        self.spec = spec
        self.n, self.gen, self.seed = spec.n, spec.gen, spec.seed
        self.bootstrap_iters, self.ci, self.progress = spec.bootstrap_iters, spec.ci, progress
        self.base: ProbeResult | None = None
        self.rows: list[dict[str, Any]] = []
        self.results: dict[int, ProbeResult] = {}
        self._load_rows()
        if self.logger is not None:
            self.logger.define_step_metric(PROBE, PROBE_STEP)

    # -- bookkeeping -----------------------------------------------------------------------
    def _load_rows(self) -> None:
        # repair=True: the tracker is the file's writer (inline training or the watcher). The trainer
        # of a detached run loads it too; a torn line there can only be left by a dead writer.
        self.rows = read_jsonl(self.run_dir / PROBES_FILE, repair=True)

    def done_steps(self) -> set[int]:
        return {int(r["step"]) for r in self.rows if r.get("kind") == "checkpoint"}

    def _append_row(self, row: dict[str, Any]) -> None:
        self.rows = append_jsonl(self.run_dir / PROBES_FILE, row)

    # -- probing ---------------------------------------------------------------------------
    def _probe(self, model_dir: str, name: str) -> ProbeResult:
        from boundlab.models import model_fingerprint

        with isolated_rng():
            sampler, tok = self.make_sampler(model_dir)
            try:
                return probe_model(self.task, sampler, self.verifier, self.store,
                                   model_fingerprint(model_dir, self.store), self.n, self.gen,
                                   self.seed, tok, name, self.bootstrap_iters, self.ci, self.progress,
                                   meta={"path": model_dir})
            finally:
                sampler.close()

    def probe_base(self, model_dir: str, name: str = "base") -> ProbeResult:
        t0 = time.time()
        self.base = self._probe(model_dir, name)
        if not any(r.get("kind") == "base" for r in self.rows):
            row = self._row(0, self.base, "base", time.time() - t0)
            self._append_row(row)
            self._log(row)
        self._write_files()
        return self.base

    def probe_checkpoint(self, step: int, ckpt_dir: str) -> ProbeResult | None:
        if step in self.done_steps():
            return None  # finished before a crash or restart: never probe twice
        if self.base is None:
            raise RuntimeError("probe the base model first")
        t0 = time.time()
        res = self._probe(ckpt_dir, f"step {step}")
        row = self._row(step, res, "checkpoint", time.time() - t0)
        row.update(compare(self.base, res, self.bootstrap_iters))
        self.results[step] = res
        self._append_row(row)
        self._log(row)
        self._write_files()
        return res

    def _row(self, step: int, res: ProbeResult, kind: str, seconds: float) -> dict[str, Any]:
        cur = res.curve
        row: dict[str, Any] = {
            "step": step, "kind": kind, "n": cur.kmax, "problems": len(res.problem_ids),
            "pass@1": cur.at(1), "pass@1_ci_low": float(cur.ci_low[0]), "pass@1_ci_high": float(cur.ci_high[0]),
            "pass@n": cur.at(cur.kmax), "pass@n_ci_low": float(cur.ci_low[-1]),
            "pass@n_ci_high": float(cur.ci_high[-1]), "solvable": len(res.solvable),
            "probe_key": res.key, "probe_seconds": round(seconds, 2),
            "curve": [round(float(x), 6) for x in cur.pass_at_k],
        }
        if res.answers is not None:
            # Answer format per probe: a "shrinkage" that is really a change of format (or a
            # length limit) shows here. Printed too, so no probe's truncation goes unseen.
            row["boxed_share"] = res.answers.boxed_share
            row["truncated_share"] = res.answers.truncated_share
            for line in summary_lines(res.answers, self.gen.max_new_tokens):
                print(f"[boundlab] probe {kind} step {step}: {line.strip()}", flush=True)
        if res.curve_strict is not None:
            row["strict_pass@1"] = res.curve_strict.at(1)
            row["strict_pass@n"] = res.curve_strict.at(cur.kmax)
            row["strict_curve"] = [round(float(x), 6) for x in res.curve_strict.pass_at_k]
        return row

    # -- outputs ---------------------------------------------------------------------------
    def _log(self, row: dict[str, Any]) -> None:
        """Log one probe row (everything is derived from the row, so a resumed run can re-log
        probes whose W&B records died with a hard-killed process)."""
        if self.logger is None:
            return
        step, curve = int(row["step"]), row["curve"]
        base = next((r for r in self.rows if r.get("kind") == "base"), None)
        kmax = len(curve)
        m: dict[str, Any] = {PROBE_STEP: step, TRAIN_STEP: step}
        for k in powers_of_two(kmax):
            m[metric_key(PROBE, f"pass@{k}")] = curve[k - 1]
            if base is not None and row["kind"] == "checkpoint" and k <= len(base["curve"]):
                m[metric_key(PROBE, "delta", f"pass@{k}")] = curve[k - 1] - base["curve"][k - 1]
            if row.get("strict_curve"):
                m[metric_key(PROBE, "strict", f"pass@{k}")] = row["strict_curve"][k - 1]
        m[metric_key(PROBE, "pass@n")] = curve[-1]
        m[metric_key(PROBE, "solvable")] = row["solvable"]
        for share in ("boxed_share", "truncated_share"):
            if row.get(share) is not None:
                m[metric_key(PROBE, share)] = row[share]
        if row["kind"] == "checkpoint":
            m[metric_key(PROBE, "lost")] = row["lost"]
            m[metric_key(PROBE, "gained")] = row["gained"]
            if row.get("crossing_k") is not None:
                m[metric_key(PROBE, "crossing_k")] = row["crossing_k"]
        self.logger.log(m)
        if base is not None:
            series = {"base": base["curve"][:kmax]}
            if row["kind"] == "checkpoint":
                series[f"step {step}"] = curve
            self.logger.log_line_plot(metric_key(PROBE, "curve_vs_base"), list(range(1, kmax + 1)),
                                      series,
                                      title=f"pass@k at step {step} vs base", xname="k",
                                      step_metrics={PROBE_STEP: step})
        png = self.run_dir / BOUNDARY_PNG
        if png.exists():
            self.logger.log_image(metric_key(PROBE, "boundary"), png, extra={PROBE_STEP: step})

    def relog_missing(self, logged_steps: set[int]) -> list[int]:
        """Re-log finished probes that the W&B run does not hold (lost in a hard kill)."""
        missing = [r for r in self.rows if int(r["step"]) not in logged_steps]
        for r in missing:
            self._log(r)
        return [int(r["step"]) for r in missing]

    def _write_files(self) -> None:
        from boundlab.tracking.plots import plot_boundary, plot_passk

        rows = sorted(self.rows, key=lambda r: (r["kind"] != "base", r["step"]))
        cols = ["step", "kind", "n", "problems", "pass@1", "pass@1_ci_low", "pass@1_ci_high", "pass@n",
                "pass@n_ci_low", "pass@n_ci_high", "delta_pass@1", "delta_pass@1_ci_low",
                "delta_pass@1_ci_high", "delta_pass@n", "delta_pass@n_ci_low", "delta_pass@n_ci_high",
                "lost", "gained", "solvable", "crossing_k", "strict_pass@1", "strict_pass@n",
                "boxed_share", "truncated_share", "probe_seconds"]
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6f}" if isinstance(v, float) else v) for k, v in r.items()})
        atomic_write_text(self.run_dir / BOUNDARY_CSV, buf.getvalue())
        base = next((r for r in rows if r["kind"] == "base"), None)
        ck = [r for r in rows if r["kind"] == "checkpoint"]
        if base is None:
            return
        steps = [0] + [r["step"] for r in ck]
        plot_boundary(steps, [base["pass@1"]] + [r["pass@1"] for r in ck],
                      [base["pass@n"]] + [r["pass@n"] for r in ck], base["pass@1"], base["pass@n"],
                      self.run_dir / BOUNDARY_PNG, n=base["n"])
        curves = {"base": (list(range(1, base["n"] + 1)), base["curve"], None, None)}
        for r in ck:
            curves[f"step {r['step']}"] = (list(range(1, r["n"] + 1)), r["curve"], None, None)
        plot_passk(curves, self.run_dir / PASSK_BY_STEP_PNG, title="pass@k: base and checkpoints")
