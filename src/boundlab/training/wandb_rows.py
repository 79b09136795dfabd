"""A resumed trainer does not log again the training steps a finished W&B segment already holds.

A run stopped cleanly (Ctrl-C, an exception) closes its W&B file holding every step it trained,
some of them after its last checkpoint; the resume trains those steps again from that checkpoint.
The run dir's segment records (`boundlab.tracking.segments`) say which steps a kept segment holds,
so HF's `WandbCallback` is swapped for one that skips them: W&B keeps each step once, as a run never
stopped does. (A killed segment is set aside instead, so nothing it logged is skipped.)
"""

from __future__ import annotations

from typing import Any, Callable


def skip_kept_steps(trainer: Any, kept: Callable[[int], bool]) -> bool:
    """Swap the trainer's WandbCallback for one that does not log at a step `kept(step)` says W&B
    holds. Returns whether there was one to swap."""
    from transformers.integrations import WandbCallback

    if not any(isinstance(cb, WandbCallback) for cb in trainer.callback_handler.callbacks):
        return False

    class SkipKept(WandbCallback):
        def on_log(self, args, state, control, model=None, logs=None, **kwargs):
            if kept(int(state.global_step)):
                return
            super().on_log(args, state, control, model=model, logs=logs, **kwargs)

    trainer.remove_callback(WandbCallback)
    trainer.add_callback(SkipKept())
    return True
