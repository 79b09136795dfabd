"""G-Pass@k (Liu et al. 2024, "Are Your LLMs Capable of Stable Reasoning?", arXiv 2412.13147):
the probability that at least a share tau of k samples drawn without replacement from a problem's n
are right, from the same (n, c) as pass@k:

    G-Pass@k_tau = sum_{j = ceil(tau k)}^{min(c, k)} C(c, j) C(n - c, k - j) / C(n, k)

the upper tail of a hypergeometric distribution. Computed exactly: the binomial coefficients are
Python integers and the tail is one integer divided by another (a float64 only at the end), so n in the
thousands loses nothing. For any tau in (0, 1/k] it is pass@k; at tau = 1 every one of the k samples
must be right. Beside pass@k it separates "sometimes right" from "reliably right".
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Iterable

import numpy as np


def _need(k: int, tau: float) -> int:
    """Right samples needed among k: ceil(tau * k), at least 1, computed on the exact fraction
    (so tau = 0.7, k = 10 needs 7, not 8 from 0.7 * 10 = 7.000000000000001)."""
    return max(1, math.ceil(Fraction(str(tau)) * k))


def gpass_at_k_single(n: int, c: int, k: int, tau: float) -> float:
    """G-Pass@k_tau of one problem with c right of n samples; 0 < tau <= 1, 1 <= k <= n."""
    if not (0 <= c <= n) or n < 1:
        raise ValueError(f"need 0 <= c <= n and n >= 1, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if not 0 < tau <= 1:
        raise ValueError(f"G-Pass@k needs 0 < tau <= 1, not {tau}")
    lo = _need(k, tau)
    hi = min(c, k)
    if lo > hi:
        return 0.0
    tail = sum(math.comb(c, j) * math.comb(n - c, k - j) for j in range(lo, hi + 1))
    return float(Fraction(tail, math.comb(n, k)))


def gpass_at_k(n: Iterable[int], c: Iterable[int], k: int, tau: float) -> float:
    """Mean G-Pass@k_tau over problems (each needs n_i >= k)."""
    vals = [gpass_at_k_single(int(a), int(b), k, tau) for a, b in zip(n, c)]
    if not vals:
        raise ValueError("G-Pass@k of no problems")
    return float(np.mean(vals))


def gpass_key(k: int, tau: float) -> str:
    """Column name: `gpass@16_0.5` (G-Pass@16 at tau 0.5)."""
    return f"gpass@{k}_{tau:g}"
