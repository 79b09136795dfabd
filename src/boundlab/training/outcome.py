"""`reward.outcome_bonus`: outcome-based exploration (Song et al. 2025, "Outcome-based Exploration for
LLM Reasoning", arXiv 2509.06941) for any group algorithm, on TRL's trainers and on our own.

Exactly what is paid, per completion i of problem x whose final answer is a_i (the verifier's
`extracted` answer, stripped; a completion with none gets neither bonus nor penalty and is not
counted):

    bonus_i   = ucb_coef / sqrt(1 + N(x, a_i))                    (historical exploration, UCB)
    penalty_i = -repeat_penalty * (m_i - 1) / (G - 1)             (batch exploration; 0 when G = 1)

N(x, a) is how many completions of x had answer a in all *earlier* reward calls of the run (one call
= one scored batch of rollouts; the counts are updated after the call, so every completion of one
call with the same answer gets the same bonus). G is the number of completions of x in the call (its
group), m_i how many of them share a_i. The two are added to the task reward as one more reward
function, `outcome_bonus` (TRL sums reward functions; `rewards/outcome_bonus/mean` is logged).

Departures, and why: the paper's bonus is 1/sqrt(N) after the answer is counted; `1 + N` before is the
same ranking and keeps a never-seen answer finite (= ucb_coef). The bonus is paid to wrong and right
answers alike (the paper's historical bonus is on outcomes, not on correctness); with
`reward.shuffle_within_group` only the task reward is shuffled. Shapers that rescale the summed
reward (`algo.shaping.unlikeliness`) see the sum including the bonus.

The counts are training state: `OutcomeCounts` saves them in each checkpoint
(`checkpoint-N/outcome_counts.json`) before it is marked complete and a resumed run loads them, so it
rewards exactly as an uninterrupted one. Refused: ReMax (its greedy baseline is scored by the same
reward functions and would be counted), distillation (no reward), several processes (each would
count only its own share).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from transformers import TrainerCallback

from boundlab.config import ConfigError

if TYPE_CHECKING:
    from boundlab.config import OutcomeBonusConfig, TrainMain

COUNTS_FILE = "outcome_counts.json"
NAME = "outcome_bonus"

Counts = dict[str, dict[str, int]]


def outcome_bonuses(problem_id: list[str], answers: list[Optional[str]], counts: Counts,
                    ucb_coef: float, repeat_penalty: float) -> tuple[list[float], Counts]:
    """The bonus (+ penalty) of each completion and the counts after this call (`counts` is not
    changed). See the module docstring for the definition."""
    groups: dict[str, list[int]] = {}
    for i, pid in enumerate(problem_id):
        groups.setdefault(pid, []).append(i)
    out = [0.0] * len(answers)
    new = {pid: dict(seen) for pid, seen in counts.items()}
    for pid, idx in groups.items():
        seen = counts.get(pid, {})
        g = len(idx)
        in_group: dict[str, int] = {}
        for i in idx:
            if answers[i] is not None:
                in_group[answers[i]] = in_group.get(answers[i], 0) + 1
        for i in idx:
            a = answers[i]
            if a is None:
                continue
            bonus = ucb_coef / math.sqrt(1 + seen.get(a, 0)) if ucb_coef else 0.0
            if repeat_penalty and g > 1:
                bonus -= repeat_penalty * (in_group[a] - 1) / (g - 1)
            out[i] = bonus
        if in_group:
            tally = new.setdefault(pid, {})
            for a, m in in_group.items():
                tally[a] = tally.get(a, 0) + m
    return out, new


def answer_key(extracted: Optional[str]) -> Optional[str]:
    """The answer a completion is counted under: the verifier's extraction, stripped; None if none."""
    if extracted is None:
        return None
    key = str(extracted).strip()
    return key or None


def enabled(ob: OutcomeBonusConfig) -> bool:
    """Whether `reward.outcome_bonus` adds anything (both coefficients 0 = off)."""
    return ob.ucb_coef != 0 or ob.repeat_penalty != 0


def check_outcome(cfg: TrainMain, family: str) -> None:
    """The settings and combinations reward.outcome_bonus cannot honour, each one line."""
    ob = cfg.reward.outcome_bonus
    if ob.ucb_coef < 0 or ob.repeat_penalty < 0:
        raise ConfigError(f"reward.outcome_bonus: ucb_coef ({ob.ucb_coef}) and repeat_penalty "
                          f"({ob.repeat_penalty}) must be >= 0 (0 = off)")
    if not enabled(ob):
        return
    if family == "distill":
        raise ConfigError(f"reward.outcome_bonus: algo={cfg.algo.name} distils from a teacher and has no reward "
                          f"to add a bonus to")
    if cfg.algo.name == "remax":
        raise ConfigError("reward.outcome_bonus: algo=remax scores its greedy baseline with the same reward "
                          "functions, which would count its answers; use another group algorithm")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ConfigError("reward.outcome_bonus: the answer counts are kept per process, so several "
                          "processes would each count only their share; train with one process")


class OutcomeBonus:
    """The reward function (appended after the task's) plus the counts. The task reward function
    hands it each call's answers through `observe` (so nothing is verified twice)."""

    def __init__(self, ucb_coef: float, repeat_penalty: float, counts: Optional[Counts] = None):
        self.ucb_coef, self.repeat_penalty = float(ucb_coef), float(repeat_penalty)
        self.counts: Counts = counts or {}
        self._last: Optional[tuple[Any, list[Optional[str]]]] = None
        self.__name__ = NAME

    def observe(self, completions: Any, answers: list[Optional[str]]) -> None:
        self._last = (completions, [answer_key(a) for a in answers])

    def __call__(self, prompts: list[Any], completions: list[Any], problem_id: list[str],
                 **_: Any) -> list[float]:
        last, self._last = self._last, None
        if last is None or last[0] is not completions:
            raise RuntimeError("reward.outcome_bonus: the task reward did not score this call's completions "
                               "before the bonus (it must come first in the reward functions)")
        out, self.counts = outcome_bonuses(list(problem_id), last[1], self.counts, self.ucb_coef,
                                           self.repeat_penalty)
        return out

    def callback(self, resume_from: Optional[Path]) -> "OutcomeCounts":
        return OutcomeCounts(self, resume_from)


class OutcomeCounts(TrainerCallback):
    """Saves the counts with each checkpoint; on resume, loads them from the checkpoint resumed."""

    def __init__(self, bonus: OutcomeBonus, resume_from: Optional[Path] = None):
        self.bonus = bonus
        if resume_from is not None:
            from boundlab.rundir.io import read_json

            f = Path(resume_from) / COUNTS_FILE
            if not f.is_file():
                raise ConfigError(f"reward.outcome_bonus: {f} is missing, so a resumed run cannot reward as "
                                  f"the uninterrupted one; resume from a checkpoint saved with the bonus on")
            saved = read_json(f, {}, "the outcome bonus's answer counts")
            bonus.counts = {str(p): {str(a): int(n) for a, n in seen.items()}
                            for p, seen in saved.get("counts", {}).items()}

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        from boundlab.rundir.io import atomic_write_json

        out = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if out.is_dir():
            atomic_write_json(out / COUNTS_FILE, {"step": state.global_step, "counts": self.bonus.counts})
