"""User errors: something the user can fix, reported by the entry points as one line, exit 2.

`boundlab.cli.friendly_errors` prints `error: <message>` for these (and for ConfigError, DataError,
ModelNotFound, FileNotFoundError) instead of a traceback. A message names the key, file (and line)
or path, and says what to do.
"""

from __future__ import annotations


class UserError(Exception):
    """Base of the errors below: one line for the user, never a traceback."""


class StoreError(UserError):
    """The probe store cannot be opened or written (corrupt, read-only, a directory, disk full)."""


class DiskFull(UserError):
    """No space left while writing the store, a checkpoint or a run file."""


class ModelFileError(UserError):
    """A model folder holds a weight file that cannot be read (truncated or corrupted)."""
