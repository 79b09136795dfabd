"""The mechanism, per problem: why an arm loses (or gains) a problem against the base, from the
stored samples' failure types (`boundlab.probe.failures`), and the luck check of every probe.

For every problem an arm loses (strict c > 0 at the base, 0 at the arm, each over its first n
samples: the coverage section's base-only cell) or gains (the reverse), the failure-type mix of
the base's and of the arm's samples on it, and the share of decisions taken the right way.

The per-arm summary says how much of the loss is *strategy narrowing* (right decisions no longer
taken) and how much *execution regression* (slips, bad states, invalid moves, malformed traces). It
is read from the arm's failing samples on its lost problems: strategy share = wrong-decision samples
/ (wrong-decision + execution samples), execution share the rest; lucky samples (answer right,
trace not strict) are counted beside them, outside both shares, as they carry no strict success
either. Each lost problem is also called by its dominant group (`strategy` when at least half of
its failing samples are wrong decisions, else `execution`), so a reader sees whether a pooled share
comes from many problems or a few large ones. A failure label is the first thing that went wrong in
the trace, so an execution failure after a wrong decision counts as narrowing.

The luck check is answer-right, trace-wrong pass@1 (answer-only pass@1 minus strict pass@1: the
share of samples a strict count rejects though their answer is right), for every probe the report
reads, checkpoints and nulls included, not only the base. From counts only (no text). For an
adaptive probe only each problem's first round (n0 samples) counts: later rounds are drawn only for
problems still open, and their plain c/n would be biased.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from boundlab.probe import failures as F


@dataclass
class Side:
    """One probe's samples on one problem (its first n): label counts and decisions."""
    n: int
    c_strict: int
    mix: dict[str, int]
    decisions_right: int
    decisions_met: int

    @property
    def failing(self) -> int:
        """Samples that failed before any right answer: strategy and execution labels."""
        return sum(self.mix[lab] for lab in F.STRATEGY + F.EXECUTION)

    @property
    def strategy(self) -> int:
        return sum(self.mix[lab] for lab in F.STRATEGY)

    @property
    def execution(self) -> int:
        return sum(self.mix[lab] for lab in F.EXECUTION)

    @property
    def decision_rate(self) -> float:
        return self.decisions_right / self.decisions_met if self.decisions_met else float("nan")


@dataclass
class ProblemMechanism:
    problem_id: str
    direction: str  # "lost" or "gained"
    tag: str | None
    base: Side
    arm: Side

    @property
    def explaining(self) -> str:
        """The side whose failures explain the change: the arm's on a lost problem, the base's on
        a gained one."""
        return "arm" if self.direction == "lost" else "base"

    @property
    def cause(self) -> str:
        """On a lost problem: what the arm's failures mostly are (`strategy` or `execution`); on a
        gained one, what the base's were. `none` when that side has no failing sample (all lucky)."""
        side = getattr(self, self.explaining)
        if side.failing == 0:
            return "none"
        return "strategy" if 2 * side.strategy >= side.failing else "execution"


@dataclass
class ArmMechanism:
    label: str
    problems: list[ProblemMechanism] = field(default_factory=list)

    def of(self, direction: str) -> list[ProblemMechanism]:
        return [p for p in self.problems if p.direction == direction]

    def summary(self) -> dict[str, Any]:
        """Counts and shares over the lost problems (the arm's samples) and the gained ones (the
        base's samples: why the base failed what the arm now solves)."""
        out: dict[str, Any] = {"arm": self.label}
        for direction, who in (("lost", "arm"), ("gained", "base")):
            probs = self.of(direction)
            sides = [getattr(p, who) for p in probs]
            strat = sum(s.strategy for s in sides)
            execu = sum(s.execution for s in sides)
            fail = strat + execu
            out.update({
                f"{direction}": len(probs),
                f"{direction}_strategy_samples": strat,
                f"{direction}_execution_samples": execu,
                f"{direction}_lucky_samples": sum(s.mix[F.LUCKY] for s in sides),
                f"{direction}_strategy_share": strat / fail if fail else float("nan"),
                f"{direction}_execution_share": execu / fail if fail else float("nan"),
                f"{direction}_strategy_problems": sum(p.cause == "strategy" for p in probs),
                f"{direction}_execution_problems": sum(p.cause == "execution" for p in probs),
                # Right decisions among those met on these problems, the base's and the arm's.
                f"{direction}_base_decision_rate": _rate([p.base for p in probs]),
                f"{direction}_arm_decision_rate": _rate([p.arm for p in probs]),
            })
        return out


def has_replay(store: Any, key: str) -> bool:
    """Whether the probe's samples carry a toy2 replay (`info["strategy"]`), judged on one sample."""
    row = store.db.execute("SELECT info FROM samples WHERE key=? LIMIT 1", (key,)).fetchone()
    return bool(row and row[0] and "strategy" in json.loads(row[0]))


def _rate(sides: Sequence[Side]) -> float:
    met = sum(s.decisions_met for s in sides)
    return sum(s.decisions_right for s in sides) / met if met else float("nan")


def first_n_verdicts(store: Any, key: str, problem_ids: Sequence[str], n_max: int | None
                     ) -> dict[str, list[tuple[bool, bool | None, dict | None]]]:
    """Per problem, its first n_max samples' (correct, strict, info), by index; no text read."""
    wanted = set(problem_ids)
    out: dict[str, list] = {pid: [] for pid in problem_ids}
    q = ("SELECT problem_id, correct, strict, info FROM (SELECT problem_id, idx, correct, strict, "
         "info, ROW_NUMBER() OVER (PARTITION BY problem_id ORDER BY idx) AS rn FROM samples "
         "WHERE key=?) WHERE rn <= ? ORDER BY problem_id, idx")
    for pid, c, s, info in store.db.execute(q, (key, n_max or 2**62)):
        if pid in wanted:
            out[pid].append((bool(c), None if s is None else bool(s),
                             json.loads(info) if info else None))
    return out


def side(verdicts: Sequence[tuple[bool, bool | None, dict | None]]) -> Side:
    labels = [F.classify_verdict(c, s, info) for c, s, info in verdicts]
    taken = [F.decisions_taken(info) for _c, _s, info in verdicts]
    return Side(len(verdicts), sum(1 for lab in labels if lab == F.STRICT_CORRECT), F.mix(labels),
                sum(t[0] for t in taken), sum(t[1] for t in taken))


def arm_mechanism(store: Any, label: str, base_key: str, arm_key: str, lost: Sequence[str],
                  gained: Sequence[str], n_max: int | None,
                  tags: dict[str, str] | None = None) -> ArmMechanism:
    """The mechanism rows of one arm: every lost and gained problem, both sides' mixes."""
    ids = list(lost) + list(gained)
    b = first_n_verdicts(store, base_key, ids, n_max)
    a = first_n_verdicts(store, arm_key, ids, n_max)
    out = ArmMechanism(label)
    for direction, pids in (("lost", lost), ("gained", gained)):
        for pid in pids:
            out.problems.append(ProblemMechanism(pid, direction, (tags or {}).get(pid),
                                                 side(b[pid]), side(a[pid])))
    return out


@dataclass
class Luck:
    label: str
    key: str
    problems: int
    n: int  # samples per problem used (the smallest, when they differ)
    answer_pass1: float
    strict_pass1: float

    @property
    def lucky_pass1(self) -> float:
        """Answer-right, trace-wrong pass@1: answer-only minus strict."""
        return self.answer_pass1 - self.strict_pass1


def luck(store: Any, label: str, key: str, problem_ids: Sequence[str], n_max: int | None) -> Luck | None:
    """The luck check of one probe on these problems; None when the store has no strict counts for
    it (a task whose verifier does not check traces). An adaptive probe counts its first round."""
    from boundlab.probe import adaptive as AD

    info = store.probe_info(key)
    plan = None if info is None else AD.plan_of(info["settings"])
    if plan is not None:
        n_max = plan.n0 if n_max is None else min(int(n_max), plan.n0)
    counts = {pc.problem_id: pc for pc in store.counts(key, n_max=n_max)}
    got = [counts.get(pid) for pid in problem_ids]
    if not got or any(pc is None or pc.n == 0 or pc.c_strict is None for pc in got):
        return None
    ans = sum(pc.c / pc.n for pc in got) / len(got)
    strict = sum(pc.c_strict / pc.n for pc in got) / len(got)
    return Luck(label, key, len(got), min(pc.n for pc in got), ans, strict)
