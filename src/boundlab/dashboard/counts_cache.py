"""The dashboard's counts index: every probe's per-problem (n, c, c_strict), kept in a small JSON file
per probe store, so a fresh dashboard process draws the problem map (and view 1's bands) without
counting the store again.

Why a file of our own: counting is a GROUP BY over every sample of every probe (26M rows, the texts
included, for 50 checkpoints x 500 problems x n = 1024: 5-11 s here), and the store holds no
per-problem totals to read instead (`adaptive_state` exists only for adaptive probes). The dashboard
never writes to the store (it may be another process's, or read-only), so the index lives under
`$BOUNDLAB_CACHE/dashboard/` (default `~/.cache/boundlab/dashboard/`), one file per store, named by
a hash of the store's resolved path.

Invalidation: the file records the store's stamp (size and mtime of the SQLite file and of its WAL
while the WAL holds frames). Any write to the store changes the stamp and the whole file is ignored
and rebuilt, so a count read from it is the count the store holds now. A run in progress (its store
being written) therefore gets no help from the file: its counts are read from the store as before
and cached in memory by `Index`.

Cache files that cannot be read or written (a read-only home, a corrupt file) are skipped with one
line on stderr: the store stays the source of truth. The counts decide what the map shows, so the
file is checked against its content, never trusted for its name and stamp: it carries the sha256 of
its own payload, and every entry must be well formed (a problem id, 0 <= c <= n <= the entry's n, 0 <=
c_strict <= n). A file that fails either check is ignored whole, in one line, and the store is counted.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path

from boundlab.probe.store import ProblemCounts

VERSION = 2  # 2: the file carries the sha256 of its payload
# At most one rewrite of the file this often (seconds) while counts arrive one probe at a time;
# `flush()` writes what is left.
WRITE_EVERY = 2.0


def cache_dir() -> Path:
    base = os.environ.get("BOUNDLAB_CACHE") or str(Path.home() / ".cache" / "boundlab")
    return Path(base).expanduser() / "dashboard"


def store_stamp(path: Path) -> list[int] | None:
    """(size, mtime_ns) of the store and of its WAL when the WAL holds frames; None when the store
    cannot be stat'ed. A reader's open creates an empty WAL and its close deletes it: both read as
    "no WAL", so opening the store does not invalidate its index."""
    try:
        st = path.stat()
    except OSError:
        return None
    out = [st.st_size, st.st_mtime_ns, 0, 0]
    try:
        w = Path(str(path) + "-wal").stat()
        if w.st_size > 0:
            out[2:] = [w.st_size, w.st_mtime_ns]
    except OSError:
        pass
    return out


def _digest(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _damage(raw: dict) -> str | None:
    """Why a loaded counts file cannot be used (None: it can): its digest, then every entry."""
    payload = {k: v for k, v in raw.items() if k != "sha256"}
    if raw.get("sha256") != _digest(payload):
        return "its sha256 does not match its content"
    counts = raw.get("counts")
    if not isinstance(counts, dict):
        return "no counts object"
    for key, rows in counts.items():
        probe, sep, n = key.rpartition("|")
        if not sep or not probe or not n.isdigit() or not isinstance(rows, list):
            return f"a malformed entry {key[:60]!r}"
        for r in rows:
            ok = (isinstance(r, list) and len(r) == 4 and isinstance(r[0], str)
                  and all(type(x) is int for x in r[1:3]) and (r[3] is None or type(r[3]) is int))
            if not ok or not (0 <= r[2] <= r[1] <= int(n)) or (r[3] is not None and not 0 <= r[3] <= r[1]):
                return f"a malformed row in entry {key[:60]!r}"
    return None


class CountsCache:
    """{(probe key, n): [ProblemCounts]} of one store, persisted in one JSON file."""

    def __init__(self, store_path: Path, directory: Path | None = None):
        self.store_path = Path(store_path).resolve()
        name = hashlib.sha1(str(self.store_path).encode()).hexdigest()[:16]
        self.file = (directory or cache_dir()) / f"counts-{name}.json"
        self._lock = threading.Lock()
        self._entries: dict[str, list[list]] = {}
        self._stamp = store_stamp(self.store_path)
        self._dirty = False
        self._written = 0.0
        self._broken = False  # the file could not be written once: said so, not tried again
        self._load()
        atexit.register(self.flush)  # what the throttle held back (a map read by requests)

    @staticmethod
    def _key(probe_key: str, n: int) -> str:
        return f"{probe_key}|{n}"

    def _load(self) -> None:
        try:
            raw = json.loads(self.file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as e:
            print(f"[boundlab] dashboard: ignoring the counts index {self.file} ({e}); the store is "
                  f"counted again", file=sys.stderr, flush=True)
            return
        if (isinstance(raw, dict) and raw.get("version") == VERSION and raw.get("store") == str(self.store_path)
                and raw.get("stamp") == self._stamp and self._stamp is not None):
            why = _damage(raw)
            if why is not None:
                print(f"[boundlab] dashboard: ignoring the counts index {self.file} ({why}); the store is "
                      f"counted again", file=sys.stderr, flush=True)
                return
            self._entries = raw["counts"]

    def _fresh(self) -> bool:
        """True while the store is as it was when the entries were read or counted; a changed
        store drops them all."""
        now = store_stamp(self.store_path)
        if now != self._stamp:
            self._entries, self._stamp, self._dirty = {}, now, False
            return False
        return now is not None

    def get(self, probe_key: str, n: int) -> list[ProblemCounts] | None:
        with self._lock:
            if not self._fresh():
                return None
            got = self._entries.get(self._key(probe_key, n))
        if got is None:
            return None
        return [ProblemCounts(pid, pn, c, cs) for pid, pn, c, cs in got]

    def stamp(self) -> list[int] | None:
        """The store's stamp now: take it before counting and pass it to `put`."""
        return store_stamp(self.store_path)

    def put(self, probe_key: str, n: int, counts: list[ProblemCounts], stamp: list[int] | None) -> None:
        """Record counts read while the store had `stamp` (taken before the query): counts read
        from a store that changed meanwhile are not kept."""
        with self._lock:
            if stamp is None or stamp != store_stamp(self.store_path):
                return
            if stamp != self._stamp:
                self._entries, self._stamp = {}, stamp
            self._entries[self._key(probe_key, n)] = [[pc.problem_id, pc.n, pc.c, pc.c_strict]
                                                      for pc in counts]
            self._dirty = True
            due = time.monotonic() - self._written >= WRITE_EVERY
        if due:
            self.flush()

    def flush(self) -> None:
        """Write the entries (atomically: a reader never sees half a file)."""
        with self._lock:
            if not self._dirty or self._broken:
                return
            payload = {"version": VERSION, "store": str(self.store_path), "stamp": self._stamp,
                       "counts": self._entries}
            blob = json.dumps({**payload, "sha256": _digest(payload)}, separators=(",", ":"))
            self._dirty = False
            self._written = time.monotonic()
        tmp = self.file.with_name(f"{self.file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(blob, encoding="utf-8")
            os.replace(tmp, self.file)
        except OSError as e:
            self._broken = True
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            print(f"[boundlab] dashboard: cannot write the counts index {self.file} ({e.strerror}); "
                  f"a fresh dashboard will count the store again (set BOUNDLAB_CACHE to a writable "
                  f"folder)", file=sys.stderr, flush=True)
