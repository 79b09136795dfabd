"""The unbiased pass@k estimator and bootstrap confidence intervals.

pass@k = 1 - C(n-c, k) / C(n, k)   (Chen et al. 2021), per problem, averaged over problems.

The ratio is computed in its product form, prod_{i=n-c+1}^{n} (1 - k/i), in float64, which never
forms a binomial coefficient and so neither overflows nor loses precision for n in the thousands.
`1 - (1 - c/n)^k` is biased (it samples *with* replacement); `pass_at_k_biased` exists only to be
shown beside the estimator, labelled as such.
"""

from __future__ import annotations

import numpy as np


def pass_at_k_single(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with c correct out of n samples."""
    if not (0 <= c <= n) or n < 1:
        raise ValueError(f"need 0 <= c <= n and n >= 1, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    # C(n-c, k)/C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)
    i = np.arange(n - c + 1, n + 1, dtype=np.float64)
    return float(1.0 - np.prod(1.0 - k / i))


def pass_at_k_matrix(n: np.ndarray, c: np.ndarray, kmax: int,
                     beyond: np.ndarray | None = None) -> np.ndarray:
    """pass@k for every problem (rows) and every k in 1..kmax (columns), float64.

    Uneven n: each problem contributes at every k <= its own n its own unbiased value. pass@k for
    k > n_i is not defined by the problem's samples, so it is never extrapolated: a problem with
    n_i < kmax needs a value for those k in `beyond` (adaptive probing: 1.0 for a problem whose
    pass@k is certified >= 1 - epsilon there; see boundlab.probe.adaptive), and without one (NaN,
    or no `beyond`) the call fails. Callers that have no such value report k up to min(n).
    Uses log-space sums of the product form, O(P * kmax * c) in all.
    """
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    if n.shape != c.shape or n.ndim != 1:
        raise ValueError("n and c must be 1-D arrays of the same length")
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("need 0 <= c <= n for every problem")
    if kmax < 1 or np.any(n < 1):
        raise ValueError(f"need kmax >= 1 and n >= 1 for every problem, got kmax={kmax}")
    short = n < kmax
    if np.any(short):
        fill = np.full(len(n), np.nan) if beyond is None else np.asarray(beyond, dtype=np.float64)
        bad = np.nonzero(short & np.isnan(fill))[0]
        if len(bad):
            raise ValueError(f"every problem needs n >= kmax={kmax} (problem {int(bad[0])} has "
                             f"n={int(n[bad[0]])}; pass@k for k > n is not defined by its samples)")
    out = np.empty((len(n), kmax), dtype=np.float64)
    ks = np.arange(1, kmax + 1, dtype=np.float64)
    for row, (ni, ci) in enumerate(zip(n.tolist(), c.tolist())):
        top = min(kmax, ni)  # columns the problem's own samples define
        if ci == 0:
            out[row, :top] = 0.0
        else:
            # ratio(k) = prod_{i=n-c+1}^{n} (1 - k/i); zero as soon as k > n - c.
            i = np.arange(ni - ci + 1, ni + 1, dtype=np.float64)
            free = ni - ci  # k <= free keeps every factor positive
            kk = ks[: min(top, free)]
            ratio = np.zeros(top, dtype=np.float64)
            if len(kk):
                ratio[: len(kk)] = np.exp(np.log1p(-kk[:, None] / i[None, :]).sum(axis=1))
            out[row, :top] = 1.0 - ratio
        if top < kmax:
            out[row, top:] = fill[row]
    return out


def pass_at_k_table(n: int, kmax: int) -> np.ndarray:
    """(n + 1) x kmax table: row c holds pass@k for c correct out of n, k = 1..kmax (<= n).
    The same product form as `pass_at_k_matrix`, summed cumulatively over c (for simulations)."""
    if not 1 <= kmax <= n:
        raise ValueError(f"need 1 <= kmax <= n, got kmax={kmax}, n={n}")
    ks = np.arange(1, kmax + 1, dtype=np.float64)[None, :]
    i = np.arange(n, 0, -1, dtype=np.float64)[:, None]  # the factor added by the (j+1)-th success
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(ks < i, np.log1p(-ks / i), -np.inf)
    logratio = np.vstack([np.zeros((1, kmax)), np.cumsum(terms, axis=0)])
    return 1.0 - np.exp(logratio)


def pass_at_k_curve(n: np.ndarray, c: np.ndarray, kmax: int | None = None) -> np.ndarray:
    """Mean pass@k over problems for k = 1..kmax (default: the smallest n)."""
    n = np.asarray(n)
    kmax = int(n.min()) if kmax is None else kmax
    return pass_at_k_matrix(n, c, kmax).mean(axis=0)


def pass_at_k_biased(n: np.ndarray, c: np.ndarray, kmax: int) -> np.ndarray:
    """The biased `1 - (1 - c/n)^k`, for comparison only; it is NOT the estimator."""
    p = np.asarray(c, dtype=np.float64) / np.asarray(n, dtype=np.float64)
    ks = np.arange(1, kmax + 1, dtype=np.float64)
    return (1.0 - (1.0 - p[:, None]) ** ks[None, :]).mean(axis=0)


# Columns (k values) per bootstrap pass; see bootstrap_ci.
_CI_BLOCK = 256


def bootstrap_ci(per_problem: np.ndarray, iters: int = 1000, alpha: float = 0.05,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap over problems of the column means of a (problems x k) matrix."""
    per_problem = np.asarray(per_problem, dtype=np.float64)
    if per_problem.ndim == 1:
        per_problem = per_problem[:, None]
    p, kmax = per_problem.shape
    lo = np.empty(kmax, dtype=np.float64)
    hi = np.empty(kmax, dtype=np.float64)
    # Resample problem indices; counts-weighted means avoid materialising the resampled matrix.
    # The counts are drawn once (iters x problems, int32: flat in k).
    rng = np.random.default_rng(seed)
    counts = np.empty((iters, p), dtype=np.int32)
    for b in range(iters):
        counts[b] = np.bincount(rng.integers(0, p, size=p), minlength=p)
    # Columns in blocks, so the means take iters x _CI_BLOCK, not iters x kmax (16 MB at k = 2048,
    # and np.quantile's copy as much again). Every column gets the values a single pass gives.
    for start in range(0, kmax, _CI_BLOCK):
        cols = per_problem[:, start:start + _CI_BLOCK]
        means = np.empty((iters, cols.shape[1]), dtype=np.float64)
        for b in range(iters):
            means[b] = counts[b].astype(np.float64) @ cols / p
        lo[start:start + _CI_BLOCK] = np.quantile(means, alpha / 2, axis=0)
        hi[start:start + _CI_BLOCK] = np.quantile(means, 1 - alpha / 2, axis=0)
    return lo, hi


def bootstrap_diff_ci(a: np.ndarray, b: np.ndarray, iters: int = 1000, alpha: float = 0.05,
                      seed: int = 0) -> tuple[float, float, float]:
    """Paired bootstrap CI of mean(a) - mean(b) over the same problems (a, b per-problem values)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("paired bootstrap needs values for the same problems")
    d = a - b
    lo, hi = bootstrap_ci(d, iters=iters, alpha=alpha, seed=seed)
    return float(d.mean()), float(lo[0]), float(hi[0])


def powers_of_two(n: int) -> list[int]:
    """1, 2, 4, ... up to n, plus n itself."""
    ks, k = [], 1
    while k <= n:
        ks.append(k)
        k *= 2
    if ks[-1] != n:
        ks.append(n)
    return ks
