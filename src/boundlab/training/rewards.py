"""A task's verifier as a TRL reward function: 1.0 for a correct answer, else 0.0.

The reward is exactly what the probe counts as a pass, so training optimises pass@1 as measured:
that includes the probe's rule for cut-off completions (stopped at the length limit without an end
of sequence), which a verifier that reads them (`reads_cut_off`) never scores by a fallback.

Two controls (`reward.*`, boundlab.config.RewardConfig): `strict` pays 1 only for a right answer
reached by the canonical trace (the toy worlds' strict pass), and `shuffle_within_group` permutes
the rewards within each group of rollouts (the completions of one problem in one call), so the
reward says nothing about which completion is right while the group's sum, and so the size of the
update, is kept: the drift control. The permutation is seeded by the seed and the group's own
problem id and texts, so a resumed run draws the same permutation for the same rollouts.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Callable

from boundlab.tasks.base import Task
from boundlab.verify.base import Verifier


def cut_off_flags(completion_ids: list[list[int]] | None, max_len: int | None,
                  eos_id: int | None) -> list[bool] | None:
    """Which completions stopped at the length limit without an end of sequence. TRL (and our
    on-policy trainer) hand reward functions each completion's ids up to and including its EOS."""
    if completion_ids is None or max_len is None:
        return None
    return [len(ids) >= max_len and (not ids or ids[-1] != eos_id) for ids in completion_ids]


def shuffle_within_groups(rewards: list[float], problem_id: list[str], texts: list[str],
                          seed: int) -> list[float]:
    """`rewards` permuted within each group of equal `problem_id`, uniformly at random. The
    permutation of a group is a function of (seed, problem id, the group's texts in order) only."""
    order: dict[str, list[int]] = {}
    for i, pid in enumerate(problem_id):
        order.setdefault(pid, []).append(i)
    out = list(rewards)
    for pid, idx in order.items():
        h = hashlib.sha256(f"{seed}\x00{pid}".encode())
        for i in idx:
            h.update(b"\x00" + texts[i].encode())
        perm = list(idx)
        random.Random(int.from_bytes(h.digest()[:8], "big")).shuffle(perm)
        for dst, src in zip(idx, perm):
            out[dst] = rewards[src]
    return out


def check_strict(task: Task, verifier: Verifier) -> None:
    """reward.strict=true needs strict verdicts: refuse at start a verifier that gives none."""
    from boundlab.config import ConfigError

    if not task.problems:
        return
    if verifier.score(task.problems[0], [""])[0].strict is None:
        raise ConfigError(f"reward.strict=true: task {task.name}'s verifier ({task.verifier}) does not "
                          f"check traces, so no completion can earn a strict reward; use a toy world")


def make_reward_fn(task: Task, verifier: Verifier, max_completion_length: int | None = None,
                   eos_token_id: int | None = None, *, strict: bool = False,
                   shuffle_seed: int | None = None,
                   observe: Callable[[Any, list[str | None]], None] | None = None) -> Callable[..., list[float]]:
    """`strict`: 1 only for a right answer with a strict (canonical-trace) verdict.
    `shuffle_seed`: not None = permute the rewards within each group (`shuffle_within_groups`).
    `observe`: called with each call's `completions` and their extracted answers (the outcome bonus)."""
    reads_cut_off = bool(getattr(verifier, "reads_cut_off", False))

    def reward(prompts: list[Any], completions: list[Any], problem_id: list[str],
               completion_ids: list[list[int]] | None = None, **_: Any) -> list[float]:
        texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
        # Group by problem so duplicates share one verification.
        order: dict[str, list[int]] = {}
        for i, pid in enumerate(problem_id):
            order.setdefault(pid, []).append(i)
        items = [(task.by_id(pid), [texts[i] for i in idx]) for pid, idx in order.items()]
        cut = cut_off_flags(completion_ids, max_completion_length, eos_token_id) if reads_cut_off else None
        if cut is not None and any(cut):
            verdicts = verifier.score_many(items, cut_off=[[cut[i] for i in idx]
                                                           for idx in order.values()])
        else:
            verdicts = verifier.score_many(items)
        out = [0.0] * len(texts)
        answers: list[str | None] = [None] * len(texts)
        for (pid, idx), vs in zip(order.items(), verdicts):
            for i, v in zip(idx, vs):
                answers[i] = v.extracted
                if strict and v.strict is None:
                    raise ValueError(f"reward.strict=true: the {task.verifier} verifier does not check "
                                     f"traces (no strict verdict); use it on a toy world")
                out[i] = 1.0 if v.correct and (v.strict or not strict) else 0.0
        if shuffle_seed is not None:
            out = shuffle_within_groups(out, list(problem_id), texts, shuffle_seed)
        if observe is not None:
            observe(completions, answers)
        return out

    reward.__name__ = (f"{task.verifier}_{'strict' if strict else 'correct'}"
                       + ("_shuffled" if shuffle_seed is not None else ""))
    return reward
