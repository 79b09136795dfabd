"""The verdict on the paper's findings (issue 40 item 8): each finding's statistic, its interval
and the rule that turns the interval into reproduced / not reproduced / unresolved at this power.

Pure functions of per-problem pass@k matrices (problems x k, from `boundlab.probe.estimator`);
`boundlab.report.sections.verdict` gathers the arms and writes the table.

Terms. An *arm* is the runs sharing a recipe (`remedies.arm_of`), read at the latest checkpoint
step every one of its seeds probed. An RL arm is any arm whose algorithm is not distillation; a
distill arm is one whose algorithm names `distill` (`sft_distill`, `onpolicy_distill`). P is the
number of report problems. **k_max** is the largest k that the base and every probe a statistic
reads were sampled at on every problem (the smallest per-problem n among them): no side's pass@k
is ever extrapolated beyond its own samples. Every interval is the hierarchical bootstrap of
`boundlab.probe.hierarchical` (seeds, then problems, paired with the base) when the arm has >= 2
seeds, and the paired problem bootstrap when it has one (the row says "single seed": no
seed-to-seed spread is in it); exact where every multiset can be enumerated, else
`report.delta_bootstrap_iters` resamples. One problem is 1/P (`boundlab.probe.significance`).

The findings and their decision rules (Δ = arm − base; "label" is `significance.classify` of
the interval: gain / loss beyond one problem, unresolved within one problem, no effect resolved
when it contains 0):

1. **RL raises pass@1.** Δpass@1 of the RL arm's final checkpoint. Reproduced when the label is
   gain; not reproduced when loss; else unresolved at this power.
2. **At large k the base matches or beats RL.** Δpass@k_max. Reproduced when the label is loss
   (the whole interval below 0, beyond one problem); not reproduced when gain; an interval that
   contains 0 or excludes it within one problem is unresolved at this power ("matches" cannot be
   shown without an equivalence margin, and a saturated pair, both at pass@k_max = 1, says so).
3. **A crossing exists.** The crossing k of the arm's mean pass@k curve (the mean over seeds of
   the per-problem curves) below the base's, k <= k_max, with its interval
   (`boundlab.probe.compare.crossing_with_ci`: problems resampled, `report.bootstrap_iters`, the
   same function and seed as the crossing table, so a single-seed arm's crossing is that table's).
   Reproduced when the curves cross and the interval's upper end is at most k_max (fewer than
   (1-ci)/2 of the resamples fail to cross by k_max); not reproduced when the lower end is beyond
   k_max (the curves stay apart up to k_max in nearly every resample) or when the arm is at or
   below the base at every resampled k = 1 (there is nothing to cross from above); else
   unresolved. This interval resamples problems only: the seeds are averaged, not resampled.
4. **RL's solvable set is (nearly) a subset of the base's.** The expected number of problems the
   arm solves within k_max samples that the base does not: G = Σ_p a_p (1 − b_p), with a_p, b_p
   the per-problem pass@k_max (the mean over seeds for a_p). With n = k_max on both sides a_p and
   b_p are 0 or 1 and G is the coverage table's `model_only` count; with more samples it stays at
   k_max, where the realised count would credit the side sampled more. The null's G0 is the same
   sum for the base-vs-base null (a second base draw; several distinct null probes averaged).
   Statistic: G − G0 in problems, with the interval of the paired difference. Reproduced when the
   interval's upper end is at most one problem (even at its top, RL adds at most one problem
   beyond what a second base draw adds); not reproduced when the label is gain; else unresolved.
   k_max here also bounds the null's n.
5. **Large-k pass@k declines over training.** pass@k_max of the arm's last probed step minus its
   first (steps every seed probed; each seed's difference paired by seed and problem; k_max over
   those checkpoints). Reproduced when the label is loss; not reproduced when gain; else
   unresolved. Two steps, not a slope: a decline that reverses in between is not seen.
6. **Distillation expands the boundary** (each distill arm). Δpass@k_max against the base.
   Reproduced when the label is gain; not reproduced when loss; else unresolved.

A finding whose inputs are absent (no RL arm, no null, one probed step, no distill arm) gets a row
"not measured" with the reason; it is never dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from boundlab.probe import hierarchical as H
from boundlab.probe.compare import CROSSES, NOT_ABOVE_AT_1, Crossing
from boundlab.probe.significance import GAIN, LOSS, NO_EFFECT, UNRESOLVED, classify

REPRODUCED, NOT_REPRODUCED, UNRESOLVED_HERE, NOT_MEASURED = (
    "reproduced", "not reproduced", "unresolved at this power", "not measured")
VERDICTS = (REPRODUCED, NOT_REPRODUCED, UNRESOLVED_HERE, NOT_MEASURED)

CLAIMS = {
    1: "RL raises pass@1 over the base",
    2: "At large k the base matches or beats RL",
    3: "RL's pass@k curve crosses below the base's at some k <= k_max",
    4: "RL's solvable set is (nearly) a subset of the base's",
    5: "Large-k pass@k declines over training",
    6: "Distillation expands the boundary",
}
_TOL = 1e-9  # relative: one problem computed as a mean is still one problem


def is_distill(algo: str) -> bool:
    """A distillation algorithm by name (the registered distill family: sft_distill,
    onpolicy_distill)."""
    return "distill" in str(algo)


@dataclass(frozen=True)
class Interval:
    """A statistic with its interval, and how the interval was made."""
    value: float
    lo: float
    hi: float
    seeds: int
    problems: int
    exact: bool
    iters: int | None

    def how(self) -> str:
        res = "exact" if self.exact else f"{self.iters:,} resamples"
        if self.seeds > 1:
            return f"hierarchical bootstrap: {self.seeds} seeds x {self.problems} problems, {res}"
        return f"problem bootstrap: {self.problems} problems, {res}; single seed"


def iters_for(seeds: int, problems: int, iters: int) -> int | None:
    """None (exact) when every seed and problem multiset can be enumerated, else `iters`."""
    return None if H.n_multisets(seeds) * H.n_multisets(problems) <= H.EXACT_MAX else iters


def hier(arm: np.ndarray, base: np.ndarray, iters: int, ci: float, seed: int,
         scale: float = 1.0) -> Interval:
    """Δ = mean over seeds and problems of `arm` (seeds x problems) minus `base` (draws x
    problems, averaged), with the hierarchical (or single-seed problem) bootstrap; times `scale`."""
    arm, base = np.atleast_2d(np.asarray(arm, float)), np.atleast_2d(np.asarray(base, float))
    S, P = arm.shape
    it = iters_for(S, P, iters)
    h = H.hierarchical_delta_values(arm, base, iters=it, ci=ci, seed=seed)
    return Interval(float(h.delta[0]) * scale, float(h.lo[0]) * scale, float(h.hi[0]) * scale, S, P,
                    h.exact, h.iters)


def k_max(*pps: np.ndarray) -> int:
    """The largest k every one of these per-problem matrices (problems x n) reaches."""
    return int(min(np.asarray(pp).shape[1] for pp in pps))


def delta_at(arm_pps: Sequence[np.ndarray], base_pp: np.ndarray, k: int, iters: int, ci: float,
             seed: int) -> Interval:
    """Δpass@k of the arm's seeds against the base (findings 1, 2, 6)."""
    if k > k_max(base_pp, *arm_pps):
        raise ValueError(f"pass@{k} is beyond what some probe sampled (k_max {k_max(base_pp, *arm_pps)})")
    return hier(np.stack([pp[:, k - 1] for pp in arm_pps]), base_pp[None, :, k - 1], iters, ci, seed)


def gains(arm_pps: Sequence[np.ndarray], base_pp: np.ndarray, null_pps: Sequence[np.ndarray], k: int,
          iters: int, ci: float, seed: int) -> tuple[Interval, float, float]:
    """Finding 4: (G − G0 in problems with its interval, G, G0) at k."""
    if k > k_max(base_pp, *arm_pps, *null_pps):
        raise ValueError(f"pass@{k} is beyond what some probe sampled")
    miss = 1.0 - base_pp[:, k - 1]
    a = np.stack([pp[:, k - 1] * miss for pp in arm_pps])
    z = np.stack([pp[:, k - 1] * miss for pp in null_pps])
    P = base_pp.shape[0]
    iv = hier(a, z, iters, ci, seed, scale=P)
    return iv, float(a.mean(axis=0).sum()), float(z.mean(axis=0).sum())


def change(first_pps: Sequence[np.ndarray], last_pps: Sequence[np.ndarray], k: int, iters: int,
           ci: float, seed: int) -> Interval:
    """Finding 5: pass@k of the last step minus the first, paired by seed and problem."""
    if k > k_max(*first_pps, *last_pps):
        raise ValueError(f"pass@{k} is beyond what some checkpoint sampled")
    d = np.stack([b[:, k - 1] - a[:, k - 1] for a, b in zip(first_pps, last_pps)])
    return hier(d, np.zeros((1, d.shape[1])), iters, ci, seed)


# -- the rules ------------------------------------------------------------------------------------
def directional(iv: Interval, predicted: str) -> tuple[str, str]:
    """(verdict, why) for a finding that predicts a gain or a loss of Δ."""
    label = classify(iv.lo, iv.hi, iv.problems)
    want = "above" if predicted == GAIN else "below"
    if label == predicted:
        return REPRODUCED, f"interval {want} 0 by more than one problem (1/{iv.problems})"
    if label in (GAIN, LOSS):
        other = "below" if predicted == GAIN else "above"
        return NOT_REPRODUCED, f"interval {other} 0 by more than one problem (1/{iv.problems})"
    if label == UNRESOLVED:
        return UNRESOLVED_HERE, f"interval excludes 0 by at most one problem (1/{iv.problems})"
    assert label == NO_EFFECT
    return UNRESOLVED_HERE, "interval contains 0"


def subset_rule(iv: Interval) -> tuple[str, str]:
    """Finding 4, on G − G0 in problems: reproduced when its upper end is at most one problem."""
    if iv.hi <= 1.0 * (1 + _TOL):
        return REPRODUCED, "upper end at most one problem above the null's gains"
    label = classify(iv.lo / iv.problems, iv.hi / iv.problems, iv.problems)
    if label == GAIN:
        return NOT_REPRODUCED, "lower end more than one problem above the null's gains"
    return UNRESOLVED_HERE, ("interval reaches more than one problem above the null's gains but does not "
                             "exclude them")


def crossing_rule(cr: Crossing) -> tuple[str, str]:
    """Finding 3, on the crossing k's interval (k_max = cr.n)."""
    if cr.status == CROSSES and math.isfinite(cr.ci_high) and cr.ci_high <= cr.n:
        return REPRODUCED, f"curves cross, interval's upper end within k_max = {cr.n}"
    if math.isinf(cr.ci_low):
        return NOT_REPRODUCED, f"curves do not cross by k_max = {cr.n} in nearly every resample"
    if cr.status == NOT_ABOVE_AT_1 and cr.ci_high <= 1.0:
        return NOT_REPRODUCED, "RL is at or below the base at k = 1 in nearly every resample: nothing to cross"
    return UNRESOLVED_HERE, "some resamples cross by k_max and some do not"
