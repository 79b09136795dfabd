"""Who owns a folder: a run dir belongs to the one run (or command) that made it, and no command
writes over one of its own inputs.

- Before Hydra composes anything, the entry points look at where the run's output dir will be
  (`hydra.run.dir=`, or report.py's `out=`; `hydra.sweep.dir=` for `-m`). Hydra writes its
  `.hydra/config.yaml` there before the task function runs, so this is the only place a fresh run
  can be stopped before it replaces another run's saved config.
  - train.py: any dir that already holds a run (a training run, finished or not, a probe or a
    report) is refused; its own continuation is `resume=RUN_DIR`, which never goes through Hydra.
  - probe.py, report.py: a training run's dir, or another command's dir, is refused; a rerun of the
    same command into its own dir is allowed (it writes its own files again).
  - `-m`: a sweep dir that already holds a sweep (`multirun.yaml`) is refused.
- `check_fresh_run_dir`: training's own check, for a run dir not named on the command line (an
  experiment file that fixes `hydra.run.dir`): a fresh run never adopts another run's probes,
  checkpoints or W&B run.
- `refuse_overwrite`: an output file that is one of the command's inputs (`export=` onto the task
  file, say) is refused.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from boundlab.errors import UserError
from boundlab.rundir import CHECKPOINTS_DIR, DONE_MARKER, HYDRA_CONFIG, PROBES_FILE, RUN_INFO, SLURM_JOB


class ForeignRunDir(UserError):
    """A command pointed at a folder another run owns (one line, exit 2)."""


# What a training run leaves in its dir, in the order the message names them.
# (slurm_job.json: a run started under SLURM claims its dir before any model work; rundir.slurm)
_TRAINING_MARKS = (RUN_INFO, PROBES_FILE, CHECKPOINTS_DIR, DONE_MARKER, SLURM_JOB)


def kind_of(folder: str | Path) -> str | None:
    """'train', 'probe', 'report', 'run' (a Hydra run of unknown kind) or None (no run here)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    if any((folder / m).exists() for m in _TRAINING_MARKS):
        return "train"
    cfg_file = folder / HYDRA_CONFIG
    if not cfg_file.is_file():
        return None
    try:
        from omegaconf import OmegaConf

        keys = set(OmegaConf.load(cfg_file).keys())
    except Exception:  # noqa: BLE001 - an unreadable saved config still marks someone's run
        return "run"
    if {"train", "algo"} <= keys:
        return "train"
    if {"runs", "out"} <= keys:
        return "report"
    if "watch" in keys or "export" in keys:
        return "probe"
    return "run"


def _main_rank() -> bool:
    import os

    return int(os.environ.get("RANK", "0")) == 0


def _marks(folder: Path) -> str:
    found = [m for m in (str(HYDRA_CONFIG), *_TRAINING_MARKS) if (folder / m).exists()]
    return ", ".join(found)


def _last_value(argv: Sequence[str], key: str) -> str | None:
    found = [a.split("=", 1)[1] for a in argv if "=" in a and a.split("=", 1)[0].lstrip("+") == key]
    return found[-1] if found else None


def output_dir_from_argv(argv: Sequence[str], entry: str) -> tuple[str, Path] | None:
    """(the override that names it, the dir) where this command's Hydra run will write, when the
    command line names it; None when the config's own (fresh, timestamped) default is used."""
    multirun = "-m" in argv or "--multirun" in argv
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    value = _last_value(argv, key)
    if value is None and entry == "report" and not multirun:
        key, value = "out", _last_value(argv, "out")  # report.py's hydra.run.dir is ${out}
    if value is None or "$" in value or value in ("null", "~"):
        return None  # interpolations resolve inside Hydra; the config's default is a fresh dir
    return key, Path(value).expanduser()


def foreign_dir_message(argv: Sequence[str], entry: str) -> str | None:
    """The one-line refusal for a command line whose output dir another run owns, or None."""
    named = output_dir_from_argv(argv, entry)
    if named is None:
        return None
    key, folder = named
    if key == "hydra.sweep.dir":
        if (folder / "multirun.yaml").is_file():
            return (f"{key}={folder} holds another sweep (multirun.yaml): its jobs' dirs would be "
                    f"reused; pick a new {key}")
        return None
    kind = kind_of(folder)
    if not _main_rank() and not any((folder / m).exists() for m in _TRAINING_MARKS):
        # Under a multi-process launch every rank runs this with the same argv, and rank 0's Hydra
        # may already have saved this run's own .hydra/config.yaml: only a training run's own
        # files (written later, by rank 0's training) tell another rank the dir is taken.
        kind = None
    if kind is None or (entry != "train" and kind == entry):
        return None
    if kind == "train":
        own = (f"continue it with: python train.py resume={folder}" if entry == "train"
               else f"write the {entry} elsewhere (a new {key}=DIR)")
        return (f"{key}={folder} is the run dir of another training run (it holds {_marks(folder)}); "
                f"a {entry}.py run never writes into it: {own}")
    return (f"{key}={folder} is the output dir of another {kind} run (it holds {HYDRA_CONFIG}); "
            f"pick a new {key} for this {entry}.py run")


def owns_output_dir(entry: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate an entry point's Hydra main: refuse, in one line and exit 2, a command line whose
    output dir belongs to another run, before Hydra creates or writes anything."""

    def deco(main: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(main)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            msg = foreign_dir_message(sys.argv[1:], entry)
            if msg:
                print(f"error: {msg}", file=sys.stderr)
                raise SystemExit(2)
            return main(*args, **kwargs)

        return wrapper

    return deco


def check_fresh_run_dir(run_dir: str | Path) -> None:
    """A fresh training run (no `resume=`) refuses a run dir that already holds a training run's
    files: it would log into the other run's W&B run and keep its probe rows as its own."""
    run_dir = Path(run_dir)
    found = [m for m in _TRAINING_MARKS if (run_dir / m).exists()]
    if found:
        raise ForeignRunDir(f"run dir {run_dir} already holds a training run ({', '.join(found)}); a "
                            f"fresh run never reuses one: continue it with python train.py "
                            f"resume={run_dir}, or pick a new hydra.run.dir")


def refuse_overwrite(output: str | Path, inputs: Iterable[tuple[str, Any]], what: str) -> None:
    """Refuse writing `output` when it is one of the command's inputs ((name, path) pairs), or
    inside a training run's dir."""
    out = Path(output).expanduser()
    target = out.resolve()
    for name, path in inputs:
        if path and Path(str(path)).expanduser().resolve() == target:
            raise ForeignRunDir(f"{what}={output} is this command's own input ({name}); writing there "
                                f"would destroy it: pick another file")
    if kind_of(target.parent) == "train":
        raise ForeignRunDir(f"{what}={output} is inside the training run dir {target.parent}; write "
                            f"it elsewhere (no command writes into another run's dir)")
