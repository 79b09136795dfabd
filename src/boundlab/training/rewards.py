"""A task's verifier as a TRL reward function: 1.0 for a correct answer, else 0.0.

The reward is exactly what the probe counts as a pass, so training optimises pass@1 as measured.
"""

from __future__ import annotations

from typing import Any, Callable

from boundlab.tasks.base import Task
from boundlab.verify.base import Verifier


def make_reward_fn(task: Task, verifier: Verifier) -> Callable[..., list[float]]:
    def reward(prompts: list[Any], completions: list[Any], problem_id: list[str],
               **_: Any) -> list[float]:
        texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
        # Group by problem so duplicates share one verification.
        order: dict[str, list[int]] = {}
        for i, pid in enumerate(problem_id):
            order.setdefault(pid, []).append(i)
        verdicts = verifier.score_many([(task.by_id(pid), [texts[i] for i in idx])
                                        for pid, idx in order.items()])
        out = [0.0] * len(texts)
        for (pid, idx), vs in zip(order.items(), verdicts):
            for i, v in zip(idx, vs):
                out[i] = 1.0 if v.correct else 0.0
        return out

    reward.__name__ = f"{task.verifier}_correct"
    return reward
