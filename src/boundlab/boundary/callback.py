"""The TrainerCallback that marks each checkpoint complete, probes it (inline) or leaves it to the
`probe.py watch=RUN_DIR` worker (detached), and then applies `train.save_total_limit`.

Rotation is ours, not HF's (HF rotates inside its save, before callbacks run, so it would delete
checkpoints nobody probed): only checkpoints already in probes.jsonl are deleted. The watcher finds
work by listing complete checkpoints, so there is no queue file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from boundlab.rundir.checkpoints import mark_complete, rotate


class ProbeCallback(TrainerCallback):
    def __init__(self, tracker: Any, mode: str = "inline", save_total_limit: int | None = None):
        if mode not in ("inline", "detached"):
            raise ValueError(f"train.probe_mode must be inline or detached, not {mode!r}")
        self.tracker = tracker
        self.mode = mode
        self.save_total_limit = save_total_limit

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
        if self.save_total_limit:
            keep = {state.best_model_checkpoint} if state.best_model_checkpoint else set()
            rotate(Path(args.output_dir), self.save_total_limit, probed_steps(self.tracker.run_dir),
                   keep)
        return control


def probed_steps(run_dir: Path) -> set[int]:
    """Checkpoint steps in probes.jsonl as it is on disk now (a detached watcher adds to it)."""
    from boundlab.rundir import PROBES_FILE
    from boundlab.rundir.io import read_jsonl

    return {int(r["step"]) for r in read_jsonl(Path(run_dir) / PROBES_FILE)
            if r.get("kind") == "checkpoint"}
