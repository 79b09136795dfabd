"""What a Hydra `-m` sweep defined and how each job ended, read from the sweep dir: every job's
overrides (expanded from `multirun.yaml` as Hydra's basic sweeper expands them), its dir and the
outcome its job recorded in `sweep_jobs.jsonl` (written by `boundlab.sweep`). A reader, so report.py
can name the jobs that left no probes; the entry layer's `boundlab.sweep` writes and summarises.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

STATUS_FILE = "sweep_jobs.jsonl"


@dataclass
class Job:
    num: int
    overrides: list[str]
    status: str  # done | failed | skipped (defined, never reported: killed, or never launched)
    reason: str | None = None
    dir: str | None = None


def defined_jobs(task_overrides: list[str]) -> list[list[str]]:
    """The override list of every job a `-m` command line defines, in Hydra's job order."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(task_overrides))
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def sweep_jobs(sweep_dir: str | Path) -> list[Job] | None:
    """Every job the sweep in `sweep_dir` defined, with its outcome; None when the folder holds no
    Hydra `multirun.yaml` (not a sweep, or one made by hand)."""
    from omegaconf import OmegaConf

    sweep_dir = Path(sweep_dir)
    if not (sweep_dir / "multirun.yaml").is_file():
        return None
    saved = OmegaConf.load(sweep_dir / "multirun.yaml")
    # As Hydra's basic sweeper builds them: the config's own sweep (hydra.sweeper.params, e.g. an
    # experiment's) first, then the command line's overrides.
    params = OmegaConf.select(saved, "hydra.sweeper.params") or {}
    task = [f"{k}={v}" for k, v in params.items()]
    task += [str(o) for o in (OmegaConf.select(saved, "hydra.overrides.task") or [])]
    recorded: dict[tuple[str, ...], dict] = {}
    if (sweep_dir / STATUS_FILE).is_file():
        for raw in (sweep_dir / STATUS_FILE).read_text().splitlines():
            try:
                rec = json.loads(raw)
            except ValueError:
                continue  # a torn last line of a killed job
            recorded[tuple(rec["overrides"])] = rec  # a rerun job's later line wins
    dirs: dict[tuple[str, ...], str] = {}
    for ov in sweep_dir.glob("*/.hydra/overrides.yaml"):
        try:
            dirs[tuple(str(o) for o in OmegaConf.load(ov))] = str(ov.parent.parent)
        except Exception:  # noqa: BLE001 - an unreadable job dir names no job
            continue
    jobs = []
    for num, overrides in enumerate(defined_jobs(task)):
        rec = recorded.get(tuple(overrides))
        status = rec["status"] if rec else "skipped"
        jobs.append(Job(num, overrides, status, rec.get("reason") if rec else None,
                        (rec or {}).get("dir") or dirs.get(tuple(overrides))))
    return jobs


def summary_lines(jobs: list[Job]) -> list[str]:
    lines = [f"sweep: job {j.num} ({' '.join(j.overrides)}) {j.status}"
             + (f": {j.reason}" if j.reason else " (it never reported: killed, or never launched)")
             for j in jobs if j.status != "done"]
    count = {s: sum(j.status == s for j in jobs) for s in ("done", "failed", "skipped")}
    lines.append(f"sweep: {count['done']} done, {count['failed']} failed, {count['skipped']} skipped "
                 f"(of {len(jobs)})")
    return lines
