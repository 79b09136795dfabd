"""Seed-level intervals (issue 40): a hierarchical bootstrap of Δpass@k = arm - base.

An arm is several training runs (seeds) of one recipe, each probed on the same problems; the base
is one probe (or several draws of it). A claim "this recipe does that" is about the recipe, not
one run, so its interval resamples both sources of spread, in two stages:

1. seeds with replacement (S of the arm's S runs);
2. problems with replacement (P of the P problems), the same problem indices for the base and
   for every resampled seed (paired: a problem's difficulty cancels in the difference).

The statistic of one resample is the mean over the resampled problems of (the mean over the
resampled seeds of the arm's per-problem pass@k) minus the base's per-problem pass@k, i.e. with
seed counts m_s and problem counts m_p,

    Δ* = (1/P) Σ_p m_p [ (1/S) Σ_s m_s A[s, p] - B[p] ],

where A[s, p] and B[p] are the unbiased per-problem pass@k (`boundlab.probe.estimator`, never
rewritten here). Its mean over all resamples is the point estimate (the statistic is linear in
the counts, and each count's mean is 1); the interval is the percentile interval of Δ*, with the
inverted-CDF quantile (the smallest value whose CDF reaches the level) so that the Monte-Carlo
interval and the exact one (below) are the same functional of their distributions.

The base: draws of one model are not a random effect (the same model sampled again), so by
default (`base_draws="pool"`) the tables' counts are pooled per problem (Σ n, Σ c: the unbiased
estimator of the larger sample); `"resample"` treats draws like seeds (a third stage, resampled
with replacement), `"mean"` averages the draws' per-problem values. Per-problem value arrays
(the report's adaptive-probe matrices) take `"mean"` or `"resample"`.

Exact mode enumerates every multiset of seeds, of base draws (when resampled) and of problems,
with its multinomial weight N! / (Π m_i!) / N^N, and returns the bootstrap distribution itself:
for tiny cases (the tests check the Monte-Carlo mode against it), capped at `EXACT_MAX` points.

A single-seed arm is still bootstrapped (over problems only: the first stage is the identity),
and the result says so (`single_seed`), so a table can mark the row: its interval holds no
seed-to-seed spread.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from boundlab.probe.estimator import pass_at_k_matrix

ITERS = 10_000  # the default resamples (issue 40: at least 10,000, or exact)
EXACT_MAX = 2_000_000  # the most (seed, draw, problem) multiset combinations exact mode enumerates
_CHUNK = 1_000  # resamples per vectorized block (memory: chunk x problems x ks floats)
BASE_MODES = ("pool", "mean", "resample")


@dataclass(frozen=True)
class HierResult:
    """Δpass@k = arm - base, one entry per k in `ks`."""
    ks: tuple[int, ...]
    delta: np.ndarray       # the point estimate: mean over seeds and problems, minus the base
    lo: np.ndarray          # percentile interval at level `ci`
    hi: np.ndarray
    boot_mean: np.ndarray   # the mean of the bootstrap distribution (= delta up to Monte-Carlo error)
    seeds: int
    problems: int
    base_draws: int         # base rows resampled: 1 when the draws are pooled or averaged
    iters: int | None       # resamples; None in exact mode
    ci: float
    single_seed: bool       # one seed: the interval resamples problems only
    # Exact mode: the bootstrap distribution's support (values x len(ks)) and probabilities.
    support: np.ndarray | None = None
    probs: np.ndarray | None = None

    @property
    def exact(self) -> bool:
        return self.iters is None


@functools.lru_cache(maxsize=16)
def _multisets(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every multiset of n draws from n items, as count vectors (rows), and its probability under
    n uniform draws with replacement: n! / (Π m_i!) / n^n. Cached (read-only arrays)."""
    combos = np.array(list(itertools.combinations_with_replacement(range(n), n)), dtype=np.int64)
    counts = np.zeros((len(combos), n), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(len(combos)), n), combos.reshape(-1)), 1)
    lgf = np.array([math.lgamma(m + 1) for m in range(n + 1)])  # log m!
    w = np.exp(math.lgamma(n + 1) - lgf[counts].sum(axis=1) - n * math.log(n))
    counts.flags.writeable = False
    w.flags.writeable = False
    return counts, w


def n_multisets(n: int) -> int:
    return math.comb(2 * n - 1, n)


def _as_values(x: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 2:
        x = x[:, :, None]
    if x.ndim != 3:
        raise ValueError(f"{name} must be (draws x problems) or (draws x problems x ks), got shape {x.shape}")
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{name} needs at least one draw and one problem, got shape {x.shape}")
    if np.isnan(x).any():
        raise ValueError(f"{name} holds NaN per-problem values")
    return x


def _quantile(values: np.ndarray, probs: np.ndarray | None, q: float) -> np.ndarray:
    """Inverted-CDF quantile per column: the smallest value whose (weighted) CDF reaches q."""
    if probs is None:
        return np.quantile(values, q, axis=0, method="inverted_cdf")
    out = np.empty(values.shape[1])
    for j in range(values.shape[1]):
        order = np.argsort(values[:, j], kind="stable")
        cdf = np.cumsum(probs[order])
        # Tolerance: the weights are floats summing to 1 up to rounding.
        i = int(np.searchsorted(cdf, q - 1e-12, side="left"))
        out[j] = values[order[min(i, len(order) - 1)], j]
    return out


def hierarchical_delta_values(arm: np.ndarray, base: np.ndarray, ks: Sequence[int] | None = None,
                              iters: int | None = ITERS, ci: float = 0.95, seed: int = 0,
                              base_draws: str = "mean") -> HierResult:
    """The hierarchical bootstrap on per-problem values: `arm` (seeds x problems [x ks]) and
    `base` (draws x problems [x ks]), the same problems in the same order. `iters=None`: exact.
    `ks` only labels the last axis (the caller's k values; default 1..K)."""
    A, B = _as_values(arm, "arm"), _as_values(base, "base")
    if A.shape[1:] != B.shape[1:]:
        raise ValueError(f"arm and base must cover the same problems and ks: {A.shape[1:]} vs {B.shape[1:]}")
    if base_draws not in ("mean", "resample"):
        raise ValueError(f"base_draws for per-problem values is 'mean' or 'resample', got {base_draws!r}")
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    if iters is not None and iters < 1:
        raise ValueError(f"iters must be >= 1 (or None for exact), got {iters}")
    if base_draws == "mean":
        B = B.mean(axis=0, keepdims=True)
    S, P, K = A.shape
    D = B.shape[0]
    delta = A.mean(axis=0).mean(axis=0) - B.mean(axis=0).mean(axis=0)
    alpha = 1 - ci
    if iters is None:
        support, probs = _exact(A, B)
        lo, hi = _quantile(support, probs, alpha / 2), _quantile(support, probs, 1 - alpha / 2)
        boot_mean = probs @ support
    else:
        draws = monte_carlo_draws(A, B, iters, seed)
        support = probs = None
        lo, hi = _quantile(draws, None, alpha / 2), _quantile(draws, None, 1 - alpha / 2)
        boot_mean = draws.mean(axis=0)
    ks_t = tuple(range(1, K + 1)) if ks is None else tuple(int(k) for k in ks)
    if len(ks_t) != K:
        raise ValueError(f"{len(ks_t)} ks given for {K} columns of values")
    return HierResult(ks_t, delta, lo, hi, boot_mean, S, P, D, iters, ci, S == 1, support, probs)


def monte_carlo_draws(A: np.ndarray, B: np.ndarray, iters: int, seed: int) -> np.ndarray:
    """iters x K draws of Δ* from per-problem values A (seeds x problems x K) and B (draws x
    problems x K; one row when the draws are not resampled). One generator, drawn in fixed-size
    blocks: seed counts, base-draw counts, problem counts."""
    A, B = _as_values(A, "arm"), _as_values(B, "base")
    S, P, K = A.shape
    D = B.shape[0]
    rng = np.random.default_rng(seed)
    Af, Bf = A.reshape(S, P * K), B.reshape(D, P * K)
    out = np.empty((iters, K))
    for start in range(0, iters, _CHUNK):
        b = min(_CHUNK, iters - start)
        ms = rng.multinomial(S, np.full(S, 1.0 / S), size=b).astype(np.float64) if S > 1 else np.ones((b, 1))
        md = rng.multinomial(D, np.full(D, 1.0 / D), size=b).astype(np.float64) if D > 1 else np.ones((b, 1))
        mp = rng.multinomial(P, np.full(P, 1.0 / P), size=b).astype(np.float64)
        diff = ((ms @ Af) / S - (md @ Bf) / D).reshape(b, P, K)
        out[start:start + b] = np.einsum("bpk,bp->bk", diff, mp) / P
    return out


def _exact(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The whole bootstrap distribution: (distinct values x K, their probabilities)."""
    S, P, K = A.shape
    D = B.shape[0]
    total = n_multisets(S) * n_multisets(D) * n_multisets(P)
    if total > EXACT_MAX:
        raise ValueError(f"exact bootstrap over {S} seeds, {D} base draws and {P} problems has {total:,} "
                         f"multiset combinations (at most {EXACT_MAX:,}); use Monte-Carlo iters")
    ms, ws = _multisets(S)
    md, wd = _multisets(D)
    mp, wp = _multisets(P)
    arm = np.einsum("is,spk->ipk", ms / S, A)    # (seed multisets, P, K)
    base = np.einsum("jd,dpk->jpk", md / D, B)   # (draw multisets, P, K)
    arm_part = np.einsum("ipk,lp->ilk", arm, mp / P)
    base_part = np.einsum("jpk,lp->jlk", base, mp / P)
    vals = (arm_part[:, None, :, :] - base_part[None, :, :, :]).reshape(-1, K)
    w = (ws[:, None, None] * wd[None, :, None] * wp[None, None, :]).reshape(-1)
    # Merge equal values (to 1e-12) so the distribution is small and its atoms are explicit.
    # Each atom keeps one of its own unrounded values.
    keys = np.round(vals, 12)
    uniq, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    probs = np.bincount(inv.reshape(-1), weights=w, minlength=len(uniq))
    return vals[first], probs


def _pool(tables: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    n = sum(np.asarray(t[0], dtype=np.int64) for t in tables)
    c = sum(np.asarray(t[1], dtype=np.int64) for t in tables)
    return n, c


def _values(tables: Sequence[tuple[np.ndarray, np.ndarray]], ks: Sequence[int], name: str) -> np.ndarray:
    """(draws x problems x ks) unbiased per-problem pass@k of (n, c) tables."""
    kmax = max(ks)
    out = []
    for i, (n, c) in enumerate(tables):
        n, c = np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64)
        if int(n.min()) < kmax:
            raise ValueError(f"{name} {i}: pass@{kmax} needs n >= {kmax} on every problem "
                             f"(the smallest n is {int(n.min())})")
        out.append(pass_at_k_matrix(n, c, kmax)[:, [k - 1 for k in ks]])
    return np.stack(out)


def hierarchical_delta(arm: Sequence[tuple[np.ndarray, np.ndarray]],
                       base: Sequence[tuple[np.ndarray, np.ndarray]], ks: int | Sequence[int],
                       iters: int | None = ITERS, ci: float = 0.95, seed: int = 0,
                       base_draws: str = "pool") -> HierResult:
    """The hierarchical bootstrap of Δpass@k from per-problem (n, c) tables: `arm` one (n, c) per
    seed, `base` one per draw, every table over the same problems in the same order. `ks`: one k
    or several (every k gets the same resamples). `iters=None`: the exact distribution."""
    ks_t = (int(ks),) if np.isscalar(ks) else tuple(int(k) for k in ks)
    if not ks_t or min(ks_t) < 1:
        raise ValueError(f"ks must be >= 1, got {ks_t}")
    if not arm or not base:
        raise ValueError("need at least one arm seed and one base draw")
    if base_draws not in BASE_MODES:
        raise ValueError(f"base_draws must be one of {BASE_MODES}, got {base_draws!r}")
    sizes = {len(np.asarray(t[0])) for t in [*arm, *base]} | {len(np.asarray(t[1])) for t in [*arm, *base]}
    if len(sizes) != 1:
        raise ValueError(f"every table must cover the same problems; lengths {sorted(sizes)}")
    if base_draws == "pool":
        base, base_draws = [_pool(base)], "mean"
    A = _values(arm, ks_t, "arm seed")
    B = _values(base, ks_t, "base draw")
    return hierarchical_delta_values(A, B, ks_t, iters=iters, ci=ci, seed=seed, base_draws=base_draws)
