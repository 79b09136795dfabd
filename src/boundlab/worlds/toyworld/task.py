"""The `toy_arith` task: the toy world's fixed test (200) or RL-train (1000) split.

The template is exactly the pretraining prompt, `Q:{question};`, with no chat template, so the
base model sees what it was trained on. Problem ids are stable: `toy-test-0000`, `toy-train-0000`.
`meta` carries `hard` (precedence changes the value), `ops` (e.g. "-*") and `left_to_right` (the
answer a left-to-right evaluator would give) for breakdowns.
"""

from __future__ import annotations

from boundlab.config import TaskConfig
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task
from boundlab.worlds.toyworld.world import PROMPT_TEMPLATE, splits


def toy_problems(split: str = "test") -> list[Problem]:
    if split not in ("test", "train"):
        raise ValueError(f"toy_arith split must be 'test' or 'train', not {split!r}")
    return [
        Problem(f"toy-{split}-{i:04d}", e.question, str(e.value),
                {"hard": e.hard, "ops": e.ops, "left_to_right": e.left_to_right_value})
        for i, e in enumerate(splits()[split])
    ]


@TASKS.register("toy_arith")
def build_toy_arith(cfg: TaskConfig) -> Task:
    return Task("toy_arith", toy_problems(cfg.split or "test"), template=PROMPT_TEMPLATE, verifier="toy",
                chat=False)
