"""What each W&B process logged, kept in the run dir, so a resume decides what to re-log from the
run dir's own files and never from W&B's private file format.

A *segment* is one process's part of a W&B run: with `resume="allow"` every process that logs into
the run (the trainer, each resume of it, a detached probe worker) writes its own
`wandb/offline-run-*` folder. For each, `wandb_segments/<folder>.json` holds (strict JSON, replaced
atomically like every run-dir file; one file per segment, so no two processes write one file):

    {"segment": "offline-run-...", "dir": "wandb/offline-run-...", "run_id": ..., "mode": "offline",
     "role": "train" | "probe", "from_step": 2, "probes": [["base", 0], ["checkpoint", 2]],
     "train_relogged": [1, 2], "train_to": 6, "closed": true}

`probes` is written right after a probe row is handed to W&B, `train_relogged` right after a resume
logged those training steps again; `train_to` (the last training step this process trained and
logged, so it logged every step in (`from_step`, `train_to`]) and `closed` after `finish()` has
returned and W&B's service has closed the file.

Why not just "what was handed to W&B". Offline, W&B keeps its newest records in a buffer and a hard
kill loses them; no public call flushes it. So what a *killed* segment's file holds is unknowable
without parsing that file, but what a *closed* segment's file holds is exactly what it was handed.
A resume of the trainer therefore (`resume_plan`, `set_aside`):

- sets every killed offline trainer segment aside (moves its folder to `wandb_killed/`; the run
  dir's lock says no process still writes it), so `wandb sync` never uploads its unknown prefix;
- re-logs every probe row of probes.jsonl that no kept segment holds, and every training row of the
  checkpoint's `log_history` whose step no closed trainer segment covered (`from_step`, `train_to`].

A run stopped cleanly (Ctrl-C) closed its file holding steps trained after its last checkpoint;
the resume trains them again but does not log them again (`boundlab.training.wandb_rows`). W&B then
holds each probe row and each training step once, as an uninterrupted run would. A
probe worker's segment is never set aside (it may be alive while the trainer resumes); its rows
count as held by the trainer; a restarted probe worker (which holds the run dir's probe lock) does
the same for the killed probe workers' segments (`resume_plan(run_dir, "probe")`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from boundlab.rundir import WANDB_DIR, WANDB_SEGMENTS_DIR, WANDB_SET_ASIDE_DIR
from boundlab.rundir.io import atomic_write_json, read_json


def _rel(run_dir: Path, path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(run_dir).resolve()))
    except ValueError:
        return str(Path(path).resolve())


class Segment:
    """The record of this process's W&B segment; every change is written at once, atomically."""

    def __init__(self, run_dir: str | os.PathLike, sync_dir: str | os.PathLike, run_id: str, mode: str,
                 role: str, from_step: int = 0):
        self.run_dir = Path(run_dir)
        name = Path(sync_dir).name
        self.path = self.run_dir / WANDB_SEGMENTS_DIR / f"{name}.json"
        self.data: dict[str, Any] = {"segment": name, "dir": _rel(self.run_dir, Path(sync_dir)),
                                     "run_id": run_id, "mode": mode, "role": role,
                                     "from_step": int(from_step), "probes": [], "train_relogged": [],
                                     "train_to": None,
                                     "closed": False}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write()

    def _write(self) -> None:
        atomic_write_json(self.path, self.data)

    def note_probe(self, kind: str, step: int) -> None:
        """A probe row was handed to W&B by this process."""
        key = [str(kind), int(step)]
        if key not in self.data["probes"]:
            self.data["probes"].append(key)
            self._write()

    def note_train_relogged(self, steps: list[int]) -> None:
        """Training steps (at or before `from_step`) this process logged again from log_history."""
        if steps:
            self.data["train_relogged"] = sorted(set(self.data["train_relogged"]) | {int(x) for x in steps})
            self._write()

    def note_train_to(self, step: int | None) -> None:
        """The last training step this process logged (HF's WandbCallback logs into the same run)."""
        if step is not None:
            self.data["train_to"] = int(step)
            self._write()

    def close(self) -> None:
        """W&B's file for this segment is complete (finish returned and the service shut down)."""
        self.data["closed"] = True
        self._write()


def read_segments(run_dir: str | os.PathLike) -> list[dict[str, Any]]:
    folder = Path(run_dir) / WANDB_SEGMENTS_DIR
    if not folder.is_dir():
        return []
    return [read_json(f, None, "a W&B segment record") for f in sorted(folder.glob("*.json"))]


@dataclass
class ResumePlan:
    """What a resumed trainer re-logs (see the module docstring)."""

    killed: list[dict[str, Any]] = field(default_factory=list)  # offline trainer segments to set aside
    held_probes: set[tuple[str, int]] = field(default_factory=set)  # (kind, step) W&B keeps
    covered: list[tuple[int, int]] = field(default_factory=list)  # (from, to]: training steps W&B keeps
    legacy: bool = False  # W&B files with no segment records: a run dir from before the records

    def probe_missing(self, kind: str, step: int) -> bool:
        return (str(kind), int(step)) not in self.held_probes

    def train_missing(self, step: int) -> bool:
        return not any(lo < step <= hi for lo, hi in self.covered)


def resume_plan(run_dir: str | os.PathLike, role: str = "train") -> ResumePlan:
    """Decide, from the segment records alone, what W&B keeps once the killed segments of `role`
    are set aside. Call it while holding the run dir's lock for that role (train.lock for "train",
    probe.lock for "probe"), so every earlier segment of that role that is not closed is dead."""
    run_dir = Path(run_dir)
    plan = ResumePlan()
    segments = [s for s in read_segments(run_dir) if s and not s.get("set_aside")]
    if not segments:
        plan.legacy = any((run_dir / WANDB_DIR).glob("offline-run-*"))
        return plan
    for s in segments:
        if s.get("role") == role and not s.get("closed"):
            if s.get("mode") == "offline":
                plan.killed.append(s)
                continue
            # An online segment's rows reached the server as they were logged; nothing to set aside.
        plan.held_probes.update((str(k), int(st)) for k, st in s.get("probes", []))
        if s.get("role") == "train" and s.get("closed"):
            if s.get("train_to") is not None:
                plan.covered.append((int(s.get("from_step", 0)), int(s["train_to"])))
            plan.covered.extend((int(x) - 1, int(x)) for x in s.get("train_relogged", []))
    return plan


def set_aside(run_dir: str | os.PathLike, killed: list[dict[str, Any]]) -> list[str]:
    """Move each killed segment's W&B folder to `wandb_killed/` and mark its record, so neither
    `wandb sync` nor a later resume counts it. Returns the folders moved."""
    run_dir = Path(run_dir)
    moved = []
    for s in killed:
        src = Path(s["dir"]) if os.path.isabs(s["dir"]) else run_dir / s["dir"]
        dest = run_dir / WANDB_SET_ASIDE_DIR / s["segment"]
        if src.is_dir() and src.resolve().is_relative_to(run_dir.resolve()):
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(src), str(dest))
            moved.append(_rel(run_dir, dest))
        record = run_dir / WANDB_SEGMENTS_DIR / f"{s['segment']}.json"
        atomic_write_json(record, {**s, "set_aside": _rel(run_dir, dest)})
    return moved


def take_over(run_dir: str | os.PathLike, role: str = "train") -> ResumePlan | None:
    """A restarted process of `role` (it holds that role's lock, so no earlier one is alive): sets
    aside the W&B folders of the killed ones, says so in one line, and returns what the W&B run keeps
    (`resume_plan`), deciding from the run dir's records alone. None for a run dir from before the
    records: nothing is re-logged (the trainer says so; a watcher leaves it to its trainer)."""
    plan = resume_plan(run_dir, role=role)
    if plan.legacy:
        if role == "train":
            print("[boundlab] this run dir's W&B files predate the segment records (wandb_segments/): "
                  "nothing is re-logged into W&B", flush=True)
        return None
    moved = set_aside(run_dir, plan.killed)
    if moved:
        who = "watcher(s)" if role == "probe" else "process(es)"
        print(f"[boundlab] set aside the W&B files of the killed {who} ({', '.join(moved)}): "
              f"what they held is logged again from the run dir", flush=True)
    return plan
