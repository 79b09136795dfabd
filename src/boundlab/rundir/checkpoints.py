"""Checkpoints that are known to be complete.

HF Trainer writes `checkpoint-N` folders non-atomically and `get_last_checkpoint` picks the highest
N whether or not it finished. Our callback drops a marker file into a checkpoint only after the
Trainer's save returned; resuming and probing only ever use marked checkpoints. Before the marker is
written the checkpoint's files are fsynced, and the marker itself is written atomically, so a marker
never vouches for data still in the page cache when the machine dies.

`train.save_total_limit` is applied here, not by HF: the Trainer rotates inside its save, before any
callback runs, so it would delete checkpoints no probe has seen yet. `rotate` deletes only old
checkpoints that are already probed and keeps the unprobed ones (with a note) until they are.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from boundlab.rundir import CHECKPOINT_COMPLETE as MARKER
from boundlab.rundir import CHECKPOINTS_DIR
from boundlab.rundir.io import atomic_write_text
_CKPT = re.compile(r"^checkpoint-(\d+)$")


def _fsync_tree(root: Path) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def mark_complete(ckpt: Path) -> None:
    _fsync_tree(ckpt)
    atomic_write_text(ckpt / MARKER, "ok\n")


def is_complete(ckpt: Path) -> bool:
    return (ckpt / MARKER).is_file()


def checkpoints(output_dir: Path, complete_only: bool = True) -> list[tuple[int, Path]]:
    """(step, path) of checkpoints under output_dir, by step."""
    out = []
    if not output_dir.is_dir():
        return out
    for p in output_dir.iterdir():
        m = _CKPT.match(p.name)
        if m and p.is_dir() and (is_complete(p) or not complete_only):
            out.append((int(m.group(1)), p))
    return sorted(out)


def step_of(ckpt: Path) -> int:
    m = _CKPT.match(Path(ckpt).name)
    if not m:
        raise ValueError(f"{ckpt} is not a checkpoint-N folder")
    return int(m.group(1))


def latest_complete(output_dir: Path) -> Path | None:
    done = checkpoints(output_dir)
    return done[-1][1] if done else None


def incomplete(output_dir: Path) -> list[Path]:
    return [p for _, p in checkpoints(output_dir, complete_only=False) if not is_complete(p)]


def rotate(output_dir: Path, limit: int | None, probed: set[int], keep: set[Path] = frozenset()) -> list[Path]:
    """Delete complete checkpoints older than the newest `limit`, but only those whose step is in
    `probed` (and none in `keep`, e.g. the Trainer's best checkpoint). Returns what was deleted."""
    if not limit or limit < 1:
        return []
    done = checkpoints(output_dir)
    old = done[:-limit]
    keep = {Path(p).resolve() for p in keep}
    deleted, waiting = [], []
    for step, path in old:
        if path.resolve() in keep:
            continue
        if step not in probed:
            waiting.append(step)
            continue
        # Unmark first: a kill during rmtree leaves an incomplete checkpoint, which nothing uses.
        (path / MARKER).unlink(missing_ok=True)
        shutil.rmtree(path, ignore_errors=True)
        deleted.append(path)
    if waiting:
        print(f"[boundlab] save_total_limit={limit}: keeping {len(done) - len(deleted)} checkpoints; "
              f"steps {waiting} are not probed yet and are deleted once they are", flush=True)
    return deleted


def finished_line(run_dir: Path, max_steps: int) -> str:
    """The one line a resumed, already finished run prints before it exits 0 (`max_steps` is
    train.max_steps)."""
    last = latest_complete(run_dir / CHECKPOINTS_DIR)
    at = f"its latest checkpoint is step {step_of(last)}" if last is not None else "no checkpoint"
    return (f"[boundlab] {run_dir} already finished training (max_steps={max_steps}; "
            f"{at}): nothing to train")
