"""Boundary arithmetic on hand-made probe data: crossing k, deltas, lost and gained problems."""

import numpy as np
import pytest

from boundlab.probe.compare import compare, crossing_k
from boundlab.probe.curves import compute_curve
from boundlab.probe.runner import ProbeResult


def result(c, n=4, ids=("a", "b", "c", "d")):
    n_arr, c_arr = np.array([n] * len(c)), np.array(c)
    return ProbeResult("k", "m", "t", list(ids), n_arr, c_arr, None,
                       compute_curve(n_arr, c_arr, bootstrap_iters=200), None)


def test_crossing_interpolates_in_log_k():
    base = np.array([0.2, 0.4, 0.6, 0.8])
    other = np.array([0.5, 0.5, 0.5, 0.5])
    # d = [0.3, 0.1, -0.1, -0.3]: sign change between k=2 (d=0.1) and k=3 (d=-0.1), halfway in
    # log2: 2 ** ((1 + log2 3) / 2) = sqrt(6)
    assert crossing_k(base, other) == pytest.approx(np.sqrt(6))


def test_crossing_exactly_on_a_point_and_none_cases():
    # Meeting is not crossing: both curves reach 0.5 at k=2 and stay together.
    assert crossing_k(np.array([0.1, 0.5]), np.array([0.3, 0.5])) is None
    # d = [0.2, 0, -0.1]: it touches at k=2 and is below at k=3, so it crosses at k=2.
    assert crossing_k(np.array([0.1, 0.5, 0.7]), np.array([0.3, 0.5, 0.6])) == pytest.approx(2.0)
    assert crossing_k(np.array([0.1, 0.2]), np.array([0.3, 0.4])) is None  # always above
    assert crossing_k(np.array([0.5, 0.6]), np.array([0.3, 0.4])) is None  # starts below


def test_compare_counts_lost_and_gained_and_paired_deltas():
    base = result([1, 0, 2, 4])   # solves a, c, d
    trained = result([4, 1, 0, 4])  # solves a, b, d: lost c, gained b
    out = compare(base, trained, iters=200)
    assert out["lost"] == 1 and out["gained"] == 1
    # pass@1 = mean(c/n): base 7/16, trained 9/16
    assert out["delta_pass@1"] == pytest.approx(2 / 16)
    assert out["delta_pass@1_ci_low"] <= out["delta_pass@1"] <= out["delta_pass@1_ci_high"]
    # pass@4 (k = n): solved fraction, 3/4 both
    assert out["delta_pass@n"] == pytest.approx(0.0)


def test_compare_refuses_different_problem_sets():
    with pytest.raises(ValueError):
        compare(result([1, 1, 1, 1]), result([1, 1, 1, 1], ids=("a", "b", "c", "e")))
