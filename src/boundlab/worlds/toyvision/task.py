"""The `toy_vision` task: toyworld2's problems (same splits, tiers, families, tags and ids, `tv-` for
`tw2-`), each shown as a picture (`render`), the prompt text `Q:<image>;` in place of `Q:{question};`.

The question stays in `Problem.question`, which the prompt never shows: toyworld2's strict verifier
replays the trace against it unchanged. The pictures are drawn once into `task.toy_vision.render_dir`
(default `$BOUNDLAB_CACHE/toy_vision`, else `~/.cache/boundlab/toy_vision`), deterministically, so
the probe's fingerprint (which hashes their bytes) is stable across machines and reruns.

Which problems is toy2's choice, read from the same block (`task.toy2`: tiers, per_tier, train_mix),
so the two worlds' runs pick problems alike; only the drawing is this task's own (`task.toy_vision`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from boundlab.config import TaskConfig
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task
from boundlab.worlds.toyvision import render
from boundlab.worlds.toyworld2 import task as tw2

# The image token is the model's (`model.IMAGE_TOKEN`); the processor expands it to 16 tokens.
TEMPLATE = "Q:<image>;"


def default_render_dir() -> Path:
    root = os.environ.get("BOUNDLAB_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "boundlab")
    return Path(root) / "toy_vision"


def visual(problems: list[Problem], folder: Path, distractors: int = 0) -> list[Problem]:
    """toyworld2 problems as visual ones: same question, answer and tags, a picture each."""
    out = []
    for p in problems:
        png = render.render_to(folder, p.question, distractors)
        out.append(replace(p, problem_id="tv-" + p.problem_id.removeprefix("tw2-"),
                           meta={**p.meta, "distractors": distractors}, images=[str(png)]))
    return out


@TASKS.register("toy_vision")
def build_toy_vision(cfg: TaskConfig) -> Task:
    base = tw2.build_toy2(cfg)  # toy2's problems, as task.toy2 picks them
    folder = Path(os.path.expanduser(cfg.toy_vision.render_dir or default_render_dir()))
    distractors = int(cfg.toy_vision.distractors)
    if distractors < 0:
        raise ValueError(f"task.toy_vision.distractors must be >= 0, got {distractors}")
    return Task("toy_vision", visual(base.problems, folder, distractors), template=TEMPLATE,
                verifier="toy2", chat=False, group_by="tier")
