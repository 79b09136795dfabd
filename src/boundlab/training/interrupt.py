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


class InterruptGuard:
    """Ctrl-C that always stops training. Python raises KeyboardInterrupt wherever the main thread
    happens to be when SIGINT arrives; inside a `__del__` or a weakref callback (torch and tokenizer
    objects are collected all the time) it is printed as "Exception ignored" and lost, and the run
    trained on to the end (seen under load). The handler also records the request, and a trainer
    callback raises KeyboardInterrupt again at the next step, save or log, so it cannot be lost."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        self.requested = True
        raise KeyboardInterrupt

    def __enter__(self) -> "InterruptGuard":
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def callback(self) -> Any:
        from transformers import TrainerCallback

        guard = self

        class _Recheck(TrainerCallback):
            def _check(self, *args: Any, **kwargs: Any) -> None:
                if guard.requested:
                    raise KeyboardInterrupt

            on_step_begin = on_step_end = on_save = on_log = on_substep_end = _check  # type: ignore[assignment]

        return _Recheck()
