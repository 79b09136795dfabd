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

from boundlab.config import MOVED_KEYS, ConfigError
from boundlab.errors import Interrupted, UserError
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
        except Interrupted as e:  # Ctrl-C where the app knows where it stopped (training)
            print(f"{e}", file=sys.stderr)
            raise SystemExit(130) from None
        except KeyboardInterrupt:
            print("interrupted (Ctrl-C)", file=sys.stderr)
            raise SystemExit(130) from None
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


def unknown_key(overrides: list[str], conf_dir: Path, schema: Any) -> str | None:
    """The one-line complaint about the first plain `a.b.c=value` override whose key the typed
    schema does not have, or None. Hydra would refuse it too, but in six lines with exit 1 (and a
    hint to add `+`, which check_keys then refuses). Group choices (`algo=ppo`), `+`/`~` overrides
    (checked after composition by `config.check_keys`) and `hydra.*` are left to their own checks."""
    import dataclasses
    import typing

    for ov in overrides:
        if "=" not in ov or ov.startswith(("-", "+", "~")):
            continue
        key = ov.split("=", 1)[0]
        if "@" in key or "/" in key or key.split(".", 1)[0] == "hydra":
            continue
        if "." not in key and (conf_dir / key).is_dir():
            continue  # a config-group choice: unknown_choice's business
        top = {f.name for f in dataclasses.fields(schema)}
        if key in MOVED_KEYS and {key.split(".", 1)[0], MOVED_KEYS[key].split(".", 1)[0]} <= top:
            # A key that was flat before the per-verifier / per-sampler / per-task blocks, or
            # task.limit (now probe.limit): say where it went (config.migrate's one table).
            new = MOVED_KEYS[key]
            return f"config key '{key}' moved to '{new}': write {new}={ov.split('=', 1)[1]}"
        cls, path = schema, []
        for part in key.split("."):
            if not dataclasses.is_dataclass(cls):
                break  # a dict, list or plain value below: its contents are not typed here
            fields = {f.name for f in dataclasses.fields(cls)}
            if part not in fields:
                where = ".".join([*path, part])
                return (f"unknown config key '{where}' (known here: {', '.join(sorted(fields))})")
            path.append(part)
            hint = typing.get_type_hints(cls).get(part)
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            cls = args[0] if typing.get_origin(hint) is typing.Union and len(args) == 1 else hint
    return None


_BOOLS = {"true", "false", "yes", "no", "on", "off", "1", "0"}
_KINDS = {int: "an integer", float: "a number", bool: "true or false"}


def _fits(value: str, kind: type) -> bool:
    v = value.strip().strip("'\"")
    if kind is bool:
        return v.lower() in _BOOLS
    try:
        int(v) if kind is int else float(v)
    except ValueError:
        return False
    return True


def bad_value(overrides: list[str], schema: Any) -> str | None:
    """The one-line complaint about the first plain `a.b=value` override whose typed key is a number
    or a boolean and whose value is not one (`probe.n=abc`), or None. Hydra would refuse it too, in
    a six-line block; sweeps, interpolations and `null` are left to Hydra."""
    import dataclasses
    import typing

    for ov in overrides:
        if "=" not in ov or ov.startswith(("-", "+", "~")):
            continue
        key, value = ov.split("=", 1)
        if "@" in key or "/" in key or "." not in key or key.split(".", 1)[0] == "hydra":
            continue
        if any(c in value for c in _EXPANDED) or value.strip() in ("null", "~", ""):
            continue
        cls: Any = schema
        for part in key.split("."):
            if not dataclasses.is_dataclass(cls):
                cls = None
                break
            hint = typing.get_type_hints(cls).get(part)
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            cls = args[0] if typing.get_origin(hint) is typing.Union and len(args) == 1 else hint
        if cls not in _KINDS:
            continue
        for item in value.split(","):  # a sweep (`-m probe.n=8,16`): each value
            if not _fits(item, cls):
                return f"{key}={item.strip()}: must be {_KINDS[cls]}"
    return None


def known_choices(main: Callable[..., Any] | None = None, *,
                  schema: Any = None) -> Callable[..., Any]:
    """Refuse, in one line and exit 2, a config-group choice that does not exist (and, given the
    entry point's schema, a key it does not have), before Hydra composes anything or creates a run
    dir. The conf folder is the one beside the entry point. Use as `@known_choices` or
    `@known_choices(schema=TrainMain)`."""
    if main is None:
        return functools.partial(known_choices, schema=schema)
    conf_dir = Path(inspect.getfile(inspect.unwrap(main))).resolve().parent / "conf"

    @functools.wraps(main)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        msg = unknown_choice(sys.argv[1:], conf_dir)
        if msg is None and schema is not None:
            msg = unknown_key(sys.argv[1:], conf_dir, schema) or bad_value(sys.argv[1:], schema)
        if msg:
            print(f"error: {msg}", file=sys.stderr)
            raise SystemExit(2)
        return main(*args, **kwargs)

    return wrapper
