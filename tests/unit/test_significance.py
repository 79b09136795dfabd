"""The unresolved rule (issue 40) on hand-made intervals at its edges."""

from __future__ import annotations

import numpy as np
import pytest

from boundlab.probe import significance as S


def test_interval_containing_zero_is_no_effect_resolved():
    assert S.classify(-0.1, 0.2, 24) == S.NO_EFFECT
    # An end exactly at 0 contains 0 (the pilot's "[0.000, +0.100]").
    assert S.classify(0.0, 0.1, 24) == S.NO_EFFECT
    assert S.classify(-0.25, 0.0, 24) == S.NO_EFFECT
    assert S.classify(0.0, 0.0, 24) == S.NO_EFFECT


def test_nearer_end_within_one_problem_is_unresolved():
    # N = 24: one problem is 1/24 = 0.041666...
    assert S.classify(1 / 24, 0.3, 24) == S.UNRESOLVED           # exactly one problem: within
    assert S.classify(0.01, 0.3, 24) == S.UNRESOLVED
    assert S.classify(-0.375, -1 / 24, 24) == S.UNRESOLVED        # a loss whose upper end is one problem
    # The same end computed as a mean over 24 problems (float rounding either way) is still within.
    assert S.classify(float(np.mean([1.0] + [0.0] * 23)), 0.3, 24) == S.UNRESOLVED
    assert S.classify(sum([1 / 24 / 3] * 3), 0.3, 24) == S.UNRESOLVED
    # N = 120: the pilot's overall cell, upper end -0.008 (one problem is 0.00833): unresolved.
    assert S.classify(-0.1, -0.008, 120) == S.UNRESOLVED


def test_just_beyond_one_problem_is_a_gain_or_loss():
    one = 1 / 24
    assert S.classify(one + 1e-6, 0.3, 24) == S.GAIN
    assert S.classify(-0.375, -one - 1e-6, 24) == S.LOSS
    assert S.classify(2 / 24, 0.2, 24) == S.GAIN
    # The far end does not matter: only the nearer one.
    assert S.classify(-0.9, -0.05, 24) == S.LOSS
    # N matters: 0.03 is within one problem of 24 problems, beyond one of 100.
    assert S.classify(0.03, 0.2, 24) == S.UNRESOLVED
    assert S.classify(0.03, 0.2, 100) == S.GAIN


def test_significant_and_bad_input():
    assert S.significant(S.GAIN) and S.significant(S.LOSS)
    assert not S.significant(S.UNRESOLVED) and not S.significant(S.NO_EFFECT)
    with pytest.raises(ValueError, match="unknown label"):
        S.significant("significant")
    with pytest.raises(ValueError, match="at least one problem"):
        S.classify(0.1, 0.2, 0)
    with pytest.raises(ValueError, match="lo > hi"):
        S.classify(0.2, 0.1, 10)
    with pytest.raises(ValueError, match="numbers"):
        S.classify(float("nan"), 0.1, 10)
