"""Adaptive probing (issue 21): the same pass@k curve for a fraction of the samples.

The design, and why each reported pass@k stays honest:

- Round 0 samples n0 completions for every problem. pass@k for k <= n0 is computed from these first
  n0 samples of every problem only: a fixed design, so it is exactly the unbiased estimator.
- Then rounds double n (n0, 2 n0, 4 n0, ... up to the cap `probe.n`) for the problems still open.
  At each look a problem is *certified* when its pass@k is >= 1 - epsilon for every k > n0 with
  confidence: the one-sided Clopper-Pearson lower bound p_lo of its rate (on the strict count where
  the verifier checks traces, so both curves are covered) satisfies (1 - p_lo)^(n0 + 1) <= epsilon.
  pass@k is increasing in k, so k = n0 + 1 is the worst case. The confidence is split Bonferroni-wise
  over every problem and every look, delta / (P * looks), so with probability >= 1 - delta no
  certified problem anywhere is certified wrongly.
- A certified problem stops, and counts 1.0 at every k > n0 (its truth is in [1 - epsilon, 1]); every
  other problem runs to the cap and contributes its unbiased value from all `probe.n` samples. So
  each reported pass@k is within epsilon of the fixed-n design's (bias measured, not argued, in
  bench/bench_adaptive.py; the exact small-design check is tests/unit/test_adaptive.py).
- With `probe.budget` (total samples), what the rounds leave goes to the problems still
  uncertified at the cap, lowest count first (c = 0 first), doubling up to `probe.budget_cap`. Those
  extra samples change no reported pass@k (k <= probe.n reads each problem's first probe.n samples:
  samples bought *because* a problem looked hard would bias it); they refine the solvable set
  (c > 0 within n_i) and the per-problem table.

Every decision is a pure function of the stored samples (the first L samples of each problem at
look L), so a probe killed mid-round resumes by recomputing the state: nothing is lost or sampled
twice, and the stored state table (n, c, stop reason, round) is a record, not the source of truth.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from boundlab.probe.binom import cp_lower
from boundlab.probe.estimator import pass_at_k_matrix
from boundlab.probe.store import ProblemCounts, Store

OPEN, CERTIFIED, CAP, BUDGET = "open", "certified", "cap", "budget"


@dataclass(frozen=True)
class AdaptivePlan:
    n0: int
    cap: int  # probe.n: the largest n of the rounds, and the largest k reported
    epsilon: float = 1e-3
    delta: float = 0.01
    budget: int | None = None
    budget_cap: int = 4096

    def __post_init__(self) -> None:
        if not 1 <= self.n0 <= self.cap:
            raise ValueError(f"adaptive probing needs 1 <= probe.n0 <= probe.n, got n0={self.n0}, "
                             f"n={self.cap}")
        if not (0 < self.epsilon < 1 and 0 < self.delta < 1):
            raise ValueError(f"probe.epsilon and probe.delta must be in (0, 1), got "
                             f"{self.epsilon}, {self.delta}")
        if self.budget is not None and self.budget_cap < self.cap:
            raise ValueError(f"probe.budget_cap={self.budget_cap} must be >= probe.n={self.cap}")

    @classmethod
    def from_config(cls, p: Any) -> "AdaptivePlan | None":
        if not getattr(p, "adaptive", False):
            return None
        return cls(n0=int(p.n0), cap=int(p.n), epsilon=float(p.epsilon), delta=float(p.delta),
                   budget=None if p.budget is None else int(p.budget), budget_cap=int(p.budget_cap))

    def key_settings(self) -> dict[str, Any]:
        """The part of the probe key: every setting changes which samples exist."""
        d = asdict(self)
        if self.budget is None:
            d.pop("budget_cap")
        return d

    def looks(self) -> list[int]:
        """n at each look: n0, 2 n0, 4 n0, ..., then the cap."""
        out, n = [], self.n0
        while n < self.cap:
            out.append(n)
            n *= 2
        return out + [self.cap]

    def look_alpha(self, problems: int) -> float:
        return self.delta / (max(problems, 1) * len(self.looks()))

    def min_certified_c(self, n: int, problems: int) -> int:
        """The smallest c out of n that certifies (n + 1 when none does)."""
        return _min_c(n, self.n0, self.epsilon, self.look_alpha(problems))

    def certified(self, c: int, n: int, problems: int) -> bool:
        return c >= self.min_certified_c(n, problems)


def certifies(c: int, n: int, n0: int, epsilon: float, alpha: float) -> bool:
    """The rule: one-sided CP lower bound p_lo at level alpha, (1 - p_lo)^(n0 + 1) <= epsilon."""
    p_lo = cp_lower(c, n, alpha)
    return (n0 + 1) * math.log1p(-p_lo) <= math.log(epsilon) if p_lo < 1 else True


@lru_cache(maxsize=4096)
def _min_c(n: int, n0: int, epsilon: float, alpha: float) -> int:
    # cp_lower is increasing in c, so the certified counts are c >= some threshold.
    if not certifies(n, n, n0, epsilon, alpha):
        return n + 1
    lo, hi = 0, n  # certifies(hi) holds
    while lo < hi:
        mid = (lo + hi) // 2
        if certifies(mid, n, n0, epsilon, alpha):
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass
class ProblemState:
    problem_id: str
    n: int        # samples the design uses for this problem (certified: its look; else the cap)
    c: int        # correct among them (the metric certified: strict where known)
    reason: str   # open / certified / cap / budget
    round: int    # the look it stopped at (or is sampling towards), 0 = the first n0
    target: int   # the n it is sampled to next (= n when it stopped)


def _certify_count(pc: ProblemCounts) -> int:
    return pc.c if pc.c_strict is None else pc.c_strict


def states(store: Store, key: str, ids: Sequence[str], plan: AdaptivePlan,
           problems: int | None = None) -> list[ProblemState]:
    """Each problem's state, recomputed from the stored samples (the first L of each at look L).
    `problems`: how many problems the probe certified over (default len(ids); a reader of a
    subset, such as the report, passes the probe's own count: the Bonferroni split depends on it)."""
    looks = plan.looks()
    P = len(ids) if problems is None else problems
    by_look = [{pc.problem_id: pc for pc in store.counts(key, ids, n_max=L)} for L in looks]
    out = []
    for pid in ids:
        for r, L in enumerate(looks):
            pc = by_look[r][pid]
            if pc.n < L:
                out.append(ProblemState(pid, pc.n, _certify_count(pc), OPEN, r, L))
                break
            if L < plan.cap and plan.certified(_certify_count(pc), L, P):
                out.append(ProblemState(pid, L, _certify_count(pc), CERTIFIED, r, L))
                break
        else:
            out.append(ProblemState(pid, plan.cap, _certify_count(pc), CAP, len(looks) - 1, plan.cap))
    return out


def extension_targets(plan: AdaptivePlan, st: Sequence[ProblemState]) -> dict[str, int]:
    """probe.budget: the n each problem uncertified at the cap is extended to. A pure function of
    the rounds' outcome: lowest count first, doubling, while the budget covers a whole doubling."""
    if plan.budget is None or any(s.reason == OPEN for s in st):
        return {}
    left = plan.budget - sum(s.n for s in st)
    cands = sorted((s for s in st if s.reason == CAP), key=lambda s: (s.c, s.problem_id))
    target = {s.problem_id: s.n for s in cands}
    level = plan.cap
    while level < plan.budget_cap:
        nxt = min(2 * level, plan.budget_cap)
        grew = False
        for s in cands:
            if target[s.problem_id] == level and left >= nxt - level:
                target[s.problem_id] = nxt
                left -= nxt - level
                grew = True
        if not grew:
            break
        level = nxt
    return target


def final_states(plan: AdaptivePlan, st: list[ProblemState],
                 done: dict[str, int]) -> list[ProblemState]:
    """The states with the budget phase applied: extended problems get their stored n and stop
    reason cap (reached probe.budget_cap) or budget (the budget ran out first)."""
    ext = extension_targets(plan, st)
    if not ext:
        return st
    out = []
    for s in st:
        if s.problem_id in ext and s.reason == CAP:
            t = ext[s.problem_id]
            n = min(done.get(s.problem_id, 0), t)
            reason = OPEN if n < t else (CAP if t >= plan.budget_cap else BUDGET)
            rnd = s.round + int(round(math.log2(t / plan.cap))) if t > plan.cap else s.round
            out.append(ProblemState(s.problem_id, n, s.c, reason, rnd, t))
        else:
            out.append(s)
    return out


def matrix(store: Store, key: str, ids: Sequence[str], plan: AdaptivePlan, strict: bool,
           problems: int | None = None) -> np.ndarray:
    """Problems x k (k = 1..probe.n) pass@k of a finished adaptive probe, as the module docstring
    says: k <= n0 from the first n0 samples, k > n0 from the first probe.n samples, or 1.0 for a
    certified problem."""
    st = states(store, key, ids, plan, problems)
    if any(s.reason == OPEN for s in st):
        raise ValueError(f"adaptive probe {key} is not finished: rerun the same command")
    K, n0 = plan.cap, plan.n0

    def arrays(n_max: int) -> tuple[np.ndarray, np.ndarray]:
        cs = store.counts(key, ids, n_max=n_max)
        c = [(pc.c_strict if strict else pc.c) for pc in cs]
        return np.array([pc.n for pc in cs]), np.array([0 if x is None else x for x in c])

    n_first, c_first = arrays(n0)
    n_all, c_all = arrays(K)
    cert = np.array([s.reason == CERTIFIED for s in st])
    out = np.empty((len(ids), K), dtype=np.float64)
    out[:, : min(n0, K)] = pass_at_k_matrix(n_first, c_first, min(n0, K))
    if K > n0:
        # Certified rows: 1.0 beyond n0 (their own samples would cover k <= their n only).
        n_use = np.where(cert, np.maximum(n_all, 1), n_all)
        c_use = np.where(cert, 0, c_all)
        rest = pass_at_k_matrix(n_use, c_use, K, beyond=np.where(cert, 1.0, np.nan))
        rest[cert] = 1.0
        out[:, n0:] = rest[:, n0:]
    return out


def plan_of(settings: dict[str, Any]) -> AdaptivePlan | None:
    """The plan of a stored probe from its settings (None: a fixed-n probe)."""
    a = settings.get("adaptive")
    return None if a is None else AdaptivePlan(**a)


def describe(plan: AdaptivePlan, st: Sequence[ProblemState], fixed: int) -> str:
    """The one line every adaptive summary carries: how k > n_i is handled, and the savings."""
    used = sum(s.n for s in st)
    cert = sum(s.reason == CERTIFIED for s in st)
    return (f"adaptive (n0={plan.n0}, cap={plan.cap}, epsilon={plan.epsilon:g}, delta={plan.delta:g}): "
            f"pass@k for k <= {plan.n0} from every problem's first {plan.n0} samples; for k > "
            f"{plan.n0}, {cert} problem(s) certified early count 1 (pass@k >= 1 - epsilon, "
            f"Clopper-Pearson), the rest use their first {plan.cap}; {used} samples vs {fixed} "
            f"fixed-n ({fixed / max(used, 1):.2f}x fewer)")
