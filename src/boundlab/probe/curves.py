"""pass@k curves with bootstrap confidence intervals, and their files (CSV, PNG)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from boundlab.probe.estimator import (bootstrap_ci, pass_at_k_biased, pass_at_k_matrix,
                                      powers_of_two)


@dataclass
class Curve:
    ks: np.ndarray          # 1..kmax
    pass_at_k: np.ndarray   # mean over problems, unbiased estimator
    ci_low: np.ndarray
    ci_high: np.ndarray
    per_problem: np.ndarray  # problems x kmax, for paired comparisons
    biased: np.ndarray      # 1-(1-c/n)^k, comparison only

    @property
    def kmax(self) -> int:
        return int(self.ks[-1])

    def at(self, k: int) -> float:
        return float(self.pass_at_k[k - 1])

    def summary_ks(self) -> list[int]:
        return powers_of_two(self.kmax)


def compute_curve(n: Sequence[int], c: Sequence[int], kmax: int | None = None,
                  bootstrap_iters: int = 1000, ci: float = 0.95, seed: int = 0) -> Curve:
    n_arr = np.asarray(n, dtype=np.int64)
    c_arr = np.asarray(c, dtype=np.int64)
    if len(n_arr) == 0:
        raise ValueError("no problems to compute pass@k over")
    kmax = int(n_arr.min()) if kmax is None else int(kmax)
    if kmax < 1:
        raise ValueError("every problem needs at least one sample")
    return curve_from_matrix(pass_at_k_matrix(n_arr, c_arr, kmax), n_arr, c_arr, bootstrap_iters,
                             ci, seed)


def curve_from_matrix(mat: np.ndarray, n: Sequence[int], c: Sequence[int],
                      bootstrap_iters: int = 1000, ci: float = 0.95, seed: int = 0) -> Curve:
    """A curve from a per-problem pass@k matrix built elsewhere (adaptive probes: see
    boundlab.probe.adaptive.matrix); n and c give the labelled biased comparison only."""
    kmax = mat.shape[1]
    lo, hi = bootstrap_ci(mat, iters=bootstrap_iters, alpha=1 - ci, seed=seed)
    return Curve(np.arange(1, kmax + 1), mat.mean(axis=0), lo, hi, mat,
                 pass_at_k_biased(np.asarray(n), np.asarray(c), kmax))


def write_passk_csv(curve: Curve, path: str | Path) -> Path:
    path = Path(path)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["k", "pass_at_k", "ci_low", "ci_high"])
        for k, p, lo, hi in zip(curve.ks, curve.pass_at_k, curve.ci_low, curve.ci_high):
            w.writerow([int(k), f"{p:.10f}", f"{lo:.10f}", f"{hi:.10f}"])
    return path


def write_problems_csv(problem_ids: Sequence[str], n: Sequence[int], c: Sequence[int],
                       path: str | Path, stops: Sequence[tuple[str, int]] | None = None) -> Path:
    """`problem_id,n,c`, plus `stop,round` for an adaptive probe (why and when each problem
    stopped: certified, cap or budget)."""
    path = Path(path)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["problem_id", "n", "c"] + (["stop", "round"] if stops is not None else []))
        for i, row in enumerate(zip(problem_ids, n, c)):
            w.writerow(list(row) + (list(stops[i]) if stops is not None else []))
    return path


def read_passk_csv(path: str | Path) -> dict[str, np.ndarray]:
    with Path(path).open() as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) for r in rows]) for k in ("k", "pass_at_k", "ci_low", "ci_high")}
