"""The predicted pass@k beyond n (beta-binomial fit over problems, boundlab.probe.predict)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from boundlab.probe.predict import fit_beta_binomial, predict, predicted_pass_at_k


def exact(a: float, b: float, k: int) -> float:
    return 1 - math.exp(math.lgamma(b + k) + math.lgamma(a + b) - math.lgamma(a + b + k)
                        - math.lgamma(b))


def test_the_closed_form_is_the_mean_pass_at_k_of_beta_rates():
    rates = np.random.default_rng(1).beta(0.5, 2.0, size=200_000)
    for k in (1, 16, 256):
        assert predicted_pass_at_k(0.5, 2.0, [k])[0] == pytest.approx(exact(0.5, 2.0, k), abs=1e-12)
        assert exact(0.5, 2.0, k) == pytest.approx((1 - (1 - rates) ** k).mean(), abs=3e-3)
    assert predicted_pass_at_k(0.5, 2.0, [1])[0] == pytest.approx(0.5 / 2.5)


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_fit_recovers_the_rates_and_predicts_beyond_n_even_from_uneven_adaptive_n():
    rng = np.random.default_rng(0)
    a, b = 0.58, 1.10  # the base setting of bench/bench_adaptive.py
    rates = rng.beta(a, b, size=1500)
    n = np.full(len(rates), 64)
    c = rng.binomial(64, rates)
    fa, fb = fit_beta_binomial(n, c)
    assert fa == pytest.approx(a, rel=0.15) and fb == pytest.approx(b, rel=0.15)
    pr = predict(n, c, [1024], iters=30)
    truth = (1 - (1 - rates) ** 1024).mean()
    assert pr.ci_low[0] <= truth <= pr.ci_high[0]
    assert abs(pr.value[0] - truth) < 0.01
    # Optional stopping (stop at the first success, or 64): the likelihood is unchanged, so the
    # fit still recovers the rates, where plain c / n would not.
    first = rng.geometric(np.clip(rates, 1e-12, 1))
    n2 = np.minimum(first, 64)
    c2 = (first <= 64).astype(int)
    fa2, fb2 = fit_beta_binomial(n2, c2)
    assert fa2 == pytest.approx(a, rel=0.25) and fb2 == pytest.approx(b, rel=0.25)
    assert (c2 / n2).mean() - rates.mean() > 0.1  # the naive mean is far off
