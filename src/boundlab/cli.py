"""Shared by the entry points: user errors end in one clear line, not a traceback.

`friendly_errors` wraps the task function (after Hydra composed the config); `known_choices` wraps
Hydra's own entry point, because a config-group choice that does not exist (`algo=schema`,
`algo=grp0`) fails inside Hydra's composition, where it ends in a multi-line report and exit 1.
"""

from __future__ import annotations

import errno
import functools
import inspect
import sys
from pathlib import Path
from typing import Any, Callable

from boundlab.config import ConfigError
from boundlab.errors import UserError
from boundlab.models import ModelNotFound
from boundlab.tasks.jsonl import DataError
from boundlab.rundir.lock import RunDirBusy

USER_ERRORS = (ConfigError, ModelNotFound, DataError, FileNotFoundError, UserError,
               RunDirBusy)

# A path the user gave that cannot be written or read as asked (export=/a/dir, a read-only output
# folder, a full disk): one line with the path, whichever code met it.
_PATH_ERRNOS = {errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTDIR, errno.EROFS, errno.ENOSPC}


def friendly_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as e:
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
        except OSError as e:
            if e.errno not in _PATH_ERRNOS or not e.filename:
                raise
            print(f"error: {e.strerror.lower()}: {e.filename}", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapper


# Sweep/choice syntax Hydra expands itself (choice(), range(), glob(), interpolations): not checked.
_EXPANDED = ("(", "[", "$", "*")


def unknown_choice(overrides: list[str], conf_dir: Path) -> str | None:
    """The one-line complaint about the first `group=option` override whose option has no YAML file
    in `conf_dir/group/`, or None. Only groups that are folders of `conf_dir` are checked (not
    `hydra/...` groups); comma-separated sweep values are checked one by one. With another config
    folder on the search path (`--config-dir`, `hydra.searchpath`) options may live there: no check."""
    if any(ov.startswith(("--config-dir", "-cd", "hydra.searchpath", "--config-path", "-cp"))
           for ov in overrides):
        return None
    for ov in overrides:
        if "=" not in ov or ov.startswith("-"):
            continue
        key, value = ov.split("=", 1)
        key = key.lstrip("+~")
        group = key.split("@", 1)[0]  # model@teacher=... chooses from the model group
        if group == "schema":
            return (f"{key}={value}: schema/* are the typed schemas the config groups build on "
                    f"(boundlab.config), not a choice; choose an option of the group itself")
        folder = conf_dir / group
        if not group or "." in group or "/" in group or not folder.is_dir():
            continue
        if any(c in value for c in _EXPANDED):
            continue
        options = sorted(p.stem for p in folder.glob("*.yaml"))
        for opt in value.split(","):
            opt = opt.strip()
            if opt in ("", "null") or opt in options:
                continue
            return (f"{key}={opt}: there is no such {group} (conf/{group}/{opt}.yaml); "
                    f"choose one of: {', '.join(options)}")
    return None


def known_choices(main: Callable[..., Any]) -> Callable[..., Any]:
    """Refuse, in one line and exit 2, a config-group choice that does not exist, before Hydra
    composes anything or creates a run dir. The conf folder is the one beside the entry point."""
    conf_dir = Path(inspect.getfile(inspect.unwrap(main))).resolve().parent / "conf"

    @functools.wraps(main)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        msg = unknown_choice(sys.argv[1:], conf_dir)
        if msg:
            print(f"error: {msg}", file=sys.stderr)
            raise SystemExit(2)
        return main(*args, **kwargs)

    return wrapper
