"""The TrainerCallback that marks each checkpoint complete, probes it (inline) or leaves it to the
`probe.py watch=RUN_DIR` worker (detached), and then applies `train.save_total_limit`.

Rotation is ours, not HF's (HF rotates inside its save, before callbacks run, so it would delete
checkpoints nobody probed): only checkpoints already in probes.jsonl are deleted. With
`train.stop_on_shrink` training stops at the first boundary alarm, and rotation never deletes the
best-boundary checkpoint. The watcher finds
work by listing complete checkpoints, so there is no queue file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from boundlab.boundary.alarm import best_boundary, best_boundary_path, stop_requested
from boundlab.rundir import ALARMS_FILE
from boundlab.rundir.checkpoints import mark_complete, rotate


class ProbeCallback(TrainerCallback):
    def __init__(self, tracker: Any, mode: str = "inline", save_total_limit: int | None = None,
                 stop_on_shrink: bool = False):
        if mode not in ("inline", "detached"):
            raise ValueError(f"train.probe_mode must be inline or detached, not {mode!r}")
        self.tracker = tracker
        self.mode = mode
        self.save_total_limit = save_total_limit
        self.stop_on_shrink = stop_on_shrink
        self.stopped = False

    def on_step_end(self, args, state, control, **kwargs):
        # Always save the final step, so the last policy is probed even when max_steps is not a
        # multiple of save_steps.
        if state.global_step >= state.max_steps:
            control.should_save = True
        # Read from disk: a detached watcher raises the alarm in another process, and a resumed
        # run may carry one from before.
        if self.stop_on_shrink and stop_requested(self.tracker.run_dir):
            self._stop(control, state.global_step)
        return control

    def _stop(self, control, step: int) -> None:
        control.should_training_stop = True
        if not self.stopped:
            self.stopped = True
            best = best_boundary(probe_rows(self.tracker.run_dir))
            where = f"; the best boundary is checkpoint-{best['step']}" if best else ""
            print(f"[boundlab] train.stop_on_shrink: stopping at step {step} after the boundary alarm "
                  f"({ALARMS_FILE}){where}", flush=True)

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
            if self.stop_on_shrink and stop_requested(self.tracker.run_dir):
                self._stop(control, state.global_step)
        if self.save_total_limit:
            keep = {state.best_model_checkpoint} if state.best_model_checkpoint else set()
            rows = probe_rows(self.tracker.run_dir)  # as on disk: a detached watcher appends to it
            if self.stop_on_shrink:  # the run may stop on a shrink: keep the widest boundary seen
                keep |= best_boundary_path(self.tracker.run_dir, rows)
            rotate(Path(args.output_dir), self.save_total_limit,
                   checkpoint_steps(rows), keep)
        return control


def probe_rows(run_dir: Path) -> list[dict]:
    """probes.jsonl as it is on disk now (a detached watcher adds to it)."""
    from boundlab.rundir import PROBES_FILE
    from boundlab.rundir.io import read_jsonl

    return read_jsonl(Path(run_dir) / PROBES_FILE)


def checkpoint_steps(rows: list[dict]) -> set[int]:
    """The training steps of the checkpoint rows among probe rows."""
    return {int(r["step"]) for r in rows if r.get("kind") == "checkpoint"}


def probed_steps(run_dir: Path) -> set[int]:
    """Checkpoint steps in probes.jsonl as it is on disk now."""
    return checkpoint_steps(probe_rows(run_dir))
