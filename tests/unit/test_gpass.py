"""G-Pass@k (issue 39) against exact enumeration of k-subsets, and its relation to pass@k."""

import itertools
import math

import pytest

from boundlab.probe.estimator import pass_at_k_single
from boundlab.probe.gpass import gpass_at_k, gpass_at_k_single, gpass_key


def _enumerate(n, c, k, tau):
    outcomes = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    hit = sum(1 for s in subsets if sum(outcomes[i] for i in s) >= math.ceil(tau * k - 1e-12))
    return hit / len(subsets)


@pytest.mark.parametrize("n", [1, 4, 7])
@pytest.mark.parametrize("tau", [0.25, 0.5, 0.75, 1.0])
def test_matches_enumeration_of_every_subset(n, tau):
    for c in range(n + 1):
        for k in range(1, n + 1):
            want = _enumerate(n, c, k, tau) if math.ceil(tau * k - 1e-12) >= 1 else None
            if want is None:
                continue
            assert gpass_at_k_single(n, c, k, tau) == pytest.approx(want, abs=1e-15), (n, c, k, tau)


def test_hand_computed_value():
    # n = 5, c = 3, k = 3, tau = 2/3 -> at least 2 right among 3:
    # [C(3,2) C(2,1) + C(3,3) C(2,0)] / C(5,3) = (6 + 1) / 10 = 0.7.
    assert gpass_at_k_single(5, 3, 3, 2 / 3) == pytest.approx(0.7, abs=1e-15)
    # tau = 0.7 of k = 10 needs 7 right, not 8 (exact fraction, no float rounding up).
    assert gpass_at_k_single(10, 7, 10, 0.7) == 1.0


def test_small_tau_is_pass_at_k_and_large_n_is_exact():
    for n, c, k in [(16, 3, 4), (256, 5, 64), (4096, 2, 4096), (2048, 1000, 300)]:
        assert gpass_at_k_single(n, c, k, 1e-9) == pytest.approx(pass_at_k_single(n, c, k), abs=1e-12)
    # tau = 1 at k = n: all n must be right.
    assert gpass_at_k_single(4096, 4095, 4096, 1.0) == 0.0
    assert gpass_at_k_single(4096, 4096, 4096, 1.0) == 1.0


def test_mean_and_refusals_and_key():
    assert gpass_at_k([4, 4], [4, 0], 2, 0.5) == 0.5
    with pytest.raises(ValueError, match="0 < tau <= 1"):
        gpass_at_k_single(4, 2, 2, 0.0)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        gpass_at_k_single(4, 2, 5, 0.5)
    assert gpass_key(16, 0.5) == "gpass@16_0.5"
