"""The TrainerCallback that probes every checkpoint (inline) or queues it (detached)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from boundlab.training.checkpoints import mark_complete

QUEUE_FILE = "probe_queue.jsonl"


class ProbeCallback(TrainerCallback):
    def __init__(self, tracker: Any, mode: str = "inline"):
        if mode not in ("inline", "detached"):
            raise ValueError(f"train.probe_mode must be inline or detached, not {mode!r}")
        self.tracker = tracker
        self.mode = mode

    def on_step_end(self, args, state, control, **kwargs):
        # Always save the final step, so the last policy is probed even when max_steps is not a
        # multiple of save_steps.
        if state.global_step >= state.max_steps:
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return control
        ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if not ckpt.is_dir():
            return control
        # on_save runs after the Trainer's save returned: only now is the checkpoint complete.
        mark_complete(ckpt)
        if self.mode == "inline":
            self.tracker.probe_checkpoint(state.global_step, str(ckpt))
        else:
            with (self.tracker.run_dir / QUEUE_FILE).open("a") as f:
                f.write(json.dumps({"step": state.global_step, "path": str(ckpt)}) + "\n")
        return control
