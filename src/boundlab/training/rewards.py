"""A task's verifier as a TRL reward function: 1.0 for a correct answer, else 0.0.

The reward is exactly what the probe counts as a pass, so training optimises pass@1 as measured:
that includes the probe's rule for cut-off completions (stopped at the length limit without an end
of sequence), which a verifier that reads them (`reads_cut_off`) never scores by a fallback.
"""

from __future__ import annotations

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


def make_reward_fn(task: Task, verifier: Verifier, max_completion_length: int | None = None,
                   eos_token_id: int | None = None) -> Callable[..., list[float]]:
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
        for (pid, idx), vs in zip(order.items(), verdicts):
            for i, v in zip(idx, vs):
                out[i] = 1.0 if v.correct else 0.0
        return out

    reward.__name__ = f"{task.verifier}_correct"
    return reward
