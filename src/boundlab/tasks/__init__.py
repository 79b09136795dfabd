"""Tasks by name: `build_task(cfg)` turns a task config into a `Task`.

Adding a task: write a factory `fn(cfg) -> Task` and decorate it with `@TASKS.register("name")`
in its module, list that module in `boundlab/builtins.py`, then add `conf/task/<name>.yaml`.
This registry imports none of its entries (boundlab.builtins does).
"""

from __future__ import annotations

from typing import Any

from boundlab.registry import Registry
from boundlab.tasks.base import Problem, Task

TASKS: Registry[Task] = Registry("task")


def build_task(cfg: Any) -> Task:
    """Build the task named by `cfg.name`, then apply the generic options (limit, template...)."""
    if getattr(cfg, "slice", None) and cfg.name != "toy2":
        raise ValueError(f"task.slice={cfg.slice}: only task=toy2 has named slices")
    task = TASKS.get(cfg.name)(cfg)
    if getattr(cfg, "template", None):
        task.template = cfg.template
    if getattr(cfg, "chat", None) is not None:
        task.chat = bool(cfg.chat)
    system = getattr(cfg, "system", None)
    if system is not None:  # "" drops the task's system turn (the chat template's default applies)
        task.system = system or None
    if getattr(cfg, "verifier", None):
        task.verifier = cfg.verifier
    if getattr(cfg, "group_by", None):
        task.group_by = str(cfg.group_by)
    limit = getattr(cfg, "limit", None)
    if limit:
        task = task.with_problems(task.problems[: int(limit)])
    if not task.problems:
        from boundlab.tasks.jsonl import DataError

        raise DataError(f"task {cfg.name!r} has no problems (task.split={getattr(cfg, 'split', None)})")
    return task


__all__ = ["TASKS", "Problem", "Task", "build_task"]
