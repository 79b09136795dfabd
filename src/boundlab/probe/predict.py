"""Predicted pass@k beyond n: a beta-binomial fit over problems (issue 21, optional part).

Each problem's rate p is taken as drawn from Beta(a, b); its c out of n then follows a beta-binomial,
and the mean pass@k over problems is 1 - E[(1 - p)^k] = 1 - B(a, b + k) / B(a, b), defined at any
k. (a, b) is the maximum-likelihood fit to the per-problem (n, c), which adaptive probes may feed as
they are: a stopping rule that looks only at the samples drawn so far leaves the likelihood of
(a, b) unchanged up to a constant (the likelihood principle), so uneven n from the rounds is fine.
The interval is a percentile bootstrap over problems (resample, refit).

This is a model, not a measurement: its numbers go to their own file (`passk_predicted.csv`) and a
dashed curve labelled "predicted", never into pass@k. A beta is a strong assumption on the rates'
distribution near 0, which is exactly what pass@k at large k depends on; read it as an
extrapolation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch


def _loglik(n: torch.Tensor, c: torch.Tensor, la: torch.Tensor, lb: torch.Tensor) -> torch.Tensor:
    """Sum over problems of log B(c + a, n - c + b) - log B(a, b), for a batch of (log a, log b)."""
    a, b = la.exp()[:, None], lb.exp()[:, None]
    g = torch.special.gammaln
    return (g(c + a) + g(n - c + b) - g(n + a + b) - g(a) - g(b) + g(a + b)).sum(dim=1)


def fit_beta_binomial(n: Sequence[int], c: Sequence[int]) -> tuple[float, float]:
    """Maximum-likelihood (a, b) of a beta-binomial over problems: a grid on (log a, log b), then
    a shrinking pattern search around the best point."""
    nt = torch.as_tensor(np.asarray(n, dtype=np.float64))[None, :]
    ct = torch.as_tensor(np.asarray(c, dtype=np.float64))[None, :]
    if nt.numel() == 0 or torch.any(ct < 0) or torch.any(ct > nt):
        raise ValueError("need 0 <= c <= n for at least one problem")
    grid = torch.linspace(-7.0, 7.0, 57, dtype=torch.float64)
    la, lb = torch.meshgrid(grid, grid, indexing="ij")
    ll = _loglik(nt, ct, la.reshape(-1), lb.reshape(-1))
    best = int(torch.argmax(ll))
    x = torch.tensor([float(la.reshape(-1)[best]), float(lb.reshape(-1)[best])], dtype=torch.float64)
    fx = float(ll[best])
    step = 0.25
    moves = torch.tensor([[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [-1, -1], [1, -1], [-1, 1]],
                         dtype=torch.float64)
    while step > 1e-5:
        cand = x[None, :] + step * moves
        cand = cand.clamp(-12.0, 12.0)
        fc = _loglik(nt, ct, cand[:, 0], cand[:, 1])
        j = int(torch.argmax(fc))
        if float(fc[j]) > fx:
            x, fx = cand[j], float(fc[j])
        else:
            step /= 2
    return float(x[0].exp()), float(x[1].exp())


def predicted_pass_at_k(a: float, b: float, ks: Sequence[int]) -> np.ndarray:
    """1 - B(a, b + k) / B(a, b): the mean pass@k over problems of Beta(a, b) rates."""
    k = torch.as_tensor(np.asarray(ks, dtype=np.float64))
    a_t, b_t = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    g = torch.special.gammaln
    log_ratio = g(b_t + k) + g(a_t + b_t) - g(a_t + b_t + k) - g(b_t)
    return (1.0 - log_ratio.exp()).numpy()


@dataclass
class Prediction:
    ks: np.ndarray
    value: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    a: float
    b: float


def predict(n: Sequence[int], c: Sequence[int], ks: Sequence[int], iters: int = 100,
            ci: float = 0.95, seed: int = 0) -> Prediction:
    """The fitted curve at `ks` with a percentile bootstrap interval over problems."""
    n_arr, c_arr = np.asarray(n), np.asarray(c)
    a, b = fit_beta_binomial(n_arr, c_arr)
    rng = np.random.default_rng(seed)
    boots = np.empty((iters, len(ks)))
    for i in range(iters):
        idx = rng.integers(0, len(n_arr), size=len(n_arr))
        boots[i] = predicted_pass_at_k(*fit_beta_binomial(n_arr[idx], c_arr[idx]), ks)
    alpha = 1 - ci
    return Prediction(np.asarray(ks), predicted_pass_at_k(a, b, ks),
                      np.quantile(boots, alpha / 2, axis=0), np.quantile(boots, 1 - alpha / 2, axis=0),
                      a, b)
