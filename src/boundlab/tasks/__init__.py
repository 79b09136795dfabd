"""Tasks by name: `build_task(cfg)` turns a task config into a `Task`.

Adding a task: write a factory `fn(cfg) -> Task` and decorate it with `@TASKS.register("name")`
in its module, list that module in `boundlab/builtins.py`, then add `conf/task/<name>.yaml`.
This registry imports none of its entries (boundlab.builtins does).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Mapping

from boundlab.config import TaskConfig, as_typed
from boundlab.registry import Registry
from boundlab.tasks.base import Problem, Task

if TYPE_CHECKING:
    from omegaconf import DictConfig

TASKS: Registry[Task] = Registry("task")


def build_task(cfg: TaskConfig | DictConfig | SimpleNamespace | Mapping[str, Any]) -> Task:
    """Build the task named by `cfg.name`, then apply the generic options (template, chat...).

    `cfg` is the `task` group: a `TaskConfig`, or anything `as_typed` turns into one (a DictConfig,
    a run's saved config, a namespace or mapping with some of its fields); factories get the
    `TaskConfig` and read their own block of it (`task.toy2`, `task.evalplus`, ...)."""
    if getattr(cfg, "name", None) is None and not (isinstance(cfg, Mapping) and cfg.get("name")):
        raise ValueError("a task config needs a name (task=<name>)")
    cfg = as_typed(cfg, TaskConfig)
    if cfg.toy2.slice and cfg.name != "toy2":
        raise ValueError(f"task.toy2.slice={cfg.toy2.slice}: only task=toy2 has named slices")
    task = TASKS.get(cfg.name)(cfg)
    if cfg.template:
        task.template = cfg.template
    if cfg.chat is not None:
        task.chat = bool(cfg.chat)
    if cfg.system is not None:  # "" drops the task's system turn (the chat template's default applies)
        task.system = cfg.system or None
    if cfg.verifier:
        task.verifier = cfg.verifier
    if cfg.group_by:
        task.group_by = str(cfg.group_by)
    if not task.problems:
        from boundlab.tasks.jsonl import DataError

        raise DataError(f"task {cfg.name!r} has no problems (task.split={cfg.split})")
    if cfg.problems_from:
        task = _only(task, cfg.problems_from, f"task {cfg.name!r} (task.split={cfg.split})")
    return task


def _only(task: Task, path: str, what: str) -> Task:
    """`task` cut to the problem ids listed in the file `path` (one a line), in the task's order."""
    from pathlib import Path

    from boundlab.tasks.jsonl import DataError

    try:
        wanted = {line.strip() for line in Path(path).expanduser().read_text().splitlines() if line.strip()}
    except OSError as e:
        raise DataError(f"task.problems_from={path}: cannot read it ({e.strerror})") from None
    if not wanted:
        raise DataError(f"task.problems_from={path} holds no problem ids")
    missing = sorted(wanted - {p.problem_id for p in task.problems})
    if missing:
        raise DataError(f"task.problems_from={path}: {len(missing)} id(s) are not problems of {what}, "
                        f"e.g. {missing[0]}")
    return task.with_problems([p for p in task.problems if p.problem_id in wanted])


__all__ = ["TASKS", "Problem", "Task", "build_task"]
