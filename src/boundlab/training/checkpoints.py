"""Checkpoints that are known to be complete.

HF Trainer writes `checkpoint-N` folders non-atomically and `get_last_checkpoint` picks the highest
N whether or not it finished. Our callback drops a marker file into a checkpoint only after the
Trainer's save returned; resuming and probing only ever use marked checkpoints.
"""

from __future__ import annotations

import re
from pathlib import Path

MARKER = "boundlab_complete"
_CKPT = re.compile(r"^checkpoint-(\d+)$")


def mark_complete(ckpt: Path) -> None:
    tmp = ckpt / (MARKER + ".tmp")
    tmp.write_text("ok\n")
    tmp.rename(ckpt / MARKER)


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
