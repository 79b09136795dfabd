"""Shared by the entry points: user errors end in one clear line, not a traceback."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

from boundlab.config import ConfigError
from boundlab.models import ModelNotFound
from boundlab.tasks.jsonl import DataError
from boundlab.training.lock import RunDirBusy

USER_ERRORS = (ConfigError, ModelNotFound, DataError, FileNotFoundError, RunDirBusy)


def friendly_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as e:
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapper
