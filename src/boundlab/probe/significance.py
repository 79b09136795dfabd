"""What a Δ interval may claim (issue 40): gain, loss, unresolved, or no effect resolved.

A Δpass@k over N problems moves by at most 1/N when one problem flips (a per-problem pass@k lies
in [0, 1]). An interval that excludes 0 but whose nearer end lies within one problem of 0
(|end| <= 1/N) hangs on a single problem and on the resampling's luck: at 1,000 resamples the
pilot's "significant" cells sat exactly there and moved onto 0 at 10,000. Such a cell is
**unresolved**, not significant. The rule, for an interval [lo, hi] over N problems (the tier's or
slice's own N, not the whole report's):

- lo <= 0 <= hi: **no effect resolved** (the interval contains 0; an end exactly at 0 counts);
- else the nearer end e (lo when the interval lies above 0, hi when below) with |e| <= 1/N:
  **unresolved** (exactly one problem counts as within);
- else **gain** (above 0) or **loss** (below 0).

A relative tolerance of 1e-9 absorbs the float rounding of a mean over N problems, so an end of
exactly one problem (1/24 computed as a mean) is within one problem whichever way it rounded.
"""

from __future__ import annotations

import math

GAIN, LOSS, UNRESOLVED, NO_EFFECT = "gain", "loss", "unresolved", "no effect resolved"
LABELS = (GAIN, LOSS, UNRESOLVED, NO_EFFECT)
_REL_TOL = 1e-9


def classify(lo: float, hi: float, n_problems: int) -> str:
    """The label of a Δ interval [lo, hi] over `n_problems` problems (see the module docstring)."""
    if n_problems < 1:
        raise ValueError(f"need at least one problem, got n_problems={n_problems}")
    if any(math.isnan(float(x)) for x in (lo, hi)):
        raise ValueError(f"interval ends must be numbers, got [{lo}, {hi}]")
    if lo > hi:
        raise ValueError(f"interval has lo > hi: [{lo}, {hi}]")
    if lo <= 0 <= hi:
        return NO_EFFECT
    nearer = lo if lo > 0 else hi
    one = 1.0 / n_problems
    if abs(nearer) <= one * (1 + _REL_TOL):
        return UNRESOLVED
    return GAIN if lo > 0 else LOSS


def significant(label: str) -> bool:
    """Whether a label is a resolved effect (gain or loss)."""
    if label not in LABELS:
        raise ValueError(f"unknown label {label!r}; one of {LABELS}")
    return label in (GAIN, LOSS)
