"""Ctrl-C during training: one line naming the step reached, the checkpoint a resume starts from and
the exact command that resumes, instead of a traceback through TRL, torch and W&B."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from boundlab.errors import Interrupted
from boundlab.rundir import checkpoints as ck


def interrupted_line(run_dir: Path, step: int, max_steps: int | None, ckpt_dir: Path) -> str:
    last = ck.latest_complete(ckpt_dir)
    where = (f"the last checkpoint is {last.name}, so it continues from step {ck.step_of(last)}"
             if last is not None else "no checkpoint was saved yet, so it starts again from step 0")
    of = f" of {max_steps}" if max_steps else ""
    cmd = f"python train.py resume={shlex.quote(str(run_dir))}"
    return f"interrupted at step {step}{of} ({where}); resume with: {cmd}"


def interrupted(run_dir: Path, trainer: Any, max_steps: int | None, ckpt_dir: Path) -> Interrupted:
    # Close the progress bars now: left open, tqdm redraws them at exit, after the line.
    try:
        from tqdm import tqdm

        for bar in list(getattr(tqdm, "_instances", ())):
            bar.close()
    except Exception:  # noqa: BLE001 - a bar that cannot close must not hide the line
        pass
    state = getattr(trainer, "state", None)
    step = int(getattr(state, "global_step", 0) or 0)
    return Interrupted(interrupted_line(run_dir, step, max_steps, ckpt_dir))
