"""The probe store: every sample of every probe, per problem, in one SQLite file (WAL mode).

- A probe is keyed by (model fingerprint, task fingerprint, sampling settings). `n` is not part of
  the key: raising n later samples only the missing completions.
- Samples are inserted one generate batch per transaction. A probe killed at any moment loses at
  most the batch in flight; rerunning the same command continues from the stored counts. The
  primary key (probe, problem, sample index) makes a duplicate impossible, not just unlikely.
- WAL lets a training run and a detached probe worker (other processes) share one store.
- SQLite errors the user can act on (a corrupt, read-only or directory path, a full disk) end as one
  `StoreError` / `DiskFull` line that names the file and the way out, not a traceback. On a full
  disk SQLite rolls the transaction back itself, so a second ROLLBACK is never issued: it would fail
  with "cannot rollback - no transaction is active" and hide the real error.
- `probe.keep_text=compact` keeps a sample's text only where a reader needs it: every correct
  sample, every `timeout` (re-checked on a rerun) and each problem's first `KEEP_WRONG` wrong samples
  by index. A dropped text is stored as '' with `text_hash` set (the first 8 bytes of its sha1);
  `text_hash IS NULL` means the text is there. The verdict, extracted answer, token count and info
  stay for every sample, so no count or pass@k changes; a reader that needs a dropped text gets
  `TextDropped`, one line. Stores made before the column existed get it on open (ALTER TABLE ADD
  COLUMN: no row is rewritten).
- `entropy`: each sample's mean per-token entropy (nats) of the distribution its tokens were drawn
  from, after temperature and top-p (boundlab.sampling). NULL where it was not recorded (vLLM,
  greedy, external samples, and every sample stored before the column existed, which old stores get
  on open the same way). Kept in compact mode too: it is not text.
- Only a writable open changes the file. `writable=False` (report.py, the dashboard) opens it
  `mode=ro` and never writes, migrates or switches the journal mode (`boundlab.probe.store_ro`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Sequence

from boundlab.errors import StoreError, TextDropped
from boundlab.probe.store_errors import store_error

# probe.keep_text=compact: wrong samples per problem (the first, by index) whose text is kept.
KEEP_WRONG = 4
KEEP_TEXT_MODES = ("all", "compact")
_COLUMNS = ("problem_id, idx, text, extracted, correct, strict, outcome, n_tokens, info, text_hash, "
            "entropy")
# Columns added after the first stores were written: (name, SQL type). Old stores get them on open.
_ADDED_COLUMNS = (("text_hash", "BLOB"), ("entropy", "REAL"))
_INSERT_COLUMNS = "key, " + _COLUMNS

_SCHEMA = """
CREATE TABLE IF NOT EXISTS probes (
    key TEXT PRIMARY KEY,
    model_fp TEXT NOT NULL,
    task_fp TEXT NOT NULL,
    settings TEXT NOT NULL,
    model_name TEXT,
    task_name TEXT,
    created REAL,
    meta TEXT
);
CREATE TABLE IF NOT EXISTS samples (
    key TEXT NOT NULL,
    problem_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    text TEXT NOT NULL,
    extracted TEXT,
    correct INTEGER NOT NULL,
    strict INTEGER,
    outcome TEXT,
    n_tokens INTEGER,
    info TEXT,
    text_hash BLOB,
    entropy REAL,
    PRIMARY KEY (key, problem_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS adaptive_state (
    key TEXT NOT NULL,
    problem_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    c INTEGER NOT NULL,
    reason TEXT NOT NULL,
    round INTEGER NOT NULL,
    PRIMARY KEY (key, problem_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS file_hashes (
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha TEXT NOT NULL,
    PRIMARY KEY (path, size, mtime_ns)
);
"""


@dataclass
class SampleRow:
    problem_id: str
    idx: int
    text: str
    extracted: str | None
    correct: bool
    strict: bool | None
    outcome: str
    n_tokens: int
    info: dict[str, Any] | None = None
    # Set only where the text was dropped (probe.keep_text=compact); `text` is then None.
    text_hash: bytes | None = None
    # Mean per-token entropy (nats) at the probe's temperature and top-p; None: not recorded.
    entropy: float | None = None

    @property
    def text_dropped(self) -> bool:
        return self.text_hash is not None


def text_hash(text: str) -> bytes:
    """What a compact store keeps of a dropped text: the first 8 bytes of its sha1."""
    return hashlib.sha1(text.encode("utf-8")).digest()[:8]


@dataclass
class ProblemCounts:
    problem_id: str
    n: int
    c: int
    # Correct with a valid chain of thought; None when the verifier cannot check traces.
    c_strict: int | None


def probe_key(model_fp: str, task_fp: str, settings: dict[str, Any]) -> str:
    """The key of a probe. `settings` holds everything besides the model and the task that can
    change a stored sample or its verdict: the sampling settings and the verifier's identity
    (`boundlab.probe.verdicts.probe_settings`)."""
    blob = json.dumps({"model": model_fp, "task": task_fp, "settings": settings}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _sample_rows(cursor: Iterable[tuple]) -> list[SampleRow]:
    """SampleRows from rows of `_COLUMNS`, the column order every sample query selects. A dropped
    text (text_hash set) reads as None, never as the '' stored in its place."""
    return [SampleRow(pid, idx, None if th is not None else text, ext, bool(c),
                      None if st is None else bool(st), out, nt, json.loads(info) if info else None,
                      None if th is None else bytes(th), None if ent is None else float(ent))
            for pid, idx, text, ext, c, st, out, nt, info, th, ent in cursor]


def dropped_error(dropped: int, what: str, key: str | None = None) -> TextDropped:
    """The one line for a reader (`what`) that needs texts a compact probe did not keep."""
    which = f"probe {key}" if key else "the probe"
    return TextDropped(f"{which} was stored with probe.keep_text=compact: {what} needs {dropped} "
                       f"completion text(s) it did not keep (only correct samples, timeouts and each "
                       f"problem's first {KEEP_WRONG} wrong ones keep theirs); probe again with "
                       f"probe.keep_text=all under a new store.path (or BOUNDLAB_STORE) to have "
                       f"every text")

class Store:
    def __init__(self, path: str | Path, writable: bool = True):
        """`writable=False` (readers such as report.py, the dashboard) opens the file `mode=ro` and
        never writes to it: no journal-mode switch, no schema change, no side file left
        (`boundlab.probe.store_ro`); a store that needs a migration to be read is one line."""
        self.path = Path(path).expanduser()
        self.writable = writable
        if not writable:
            from boundlab.probe import store_ro

            self._side_before = store_ro.side_files(self.path)
            try:
                with self._errors("opening"):
                    self.db = store_ro.open_readonly(self.path)
            except BaseException:
                store_ro.tidy_side_files(self.path, self._side_before)
                raise
            return
        if self.path.is_dir():
            raise StoreError(f"store.path={self.path} is a directory, not a SQLite file: set "
                             f"store.path={self.path / 'store.sqlite'} (or BOUNDLAB_STORE)")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the folder of the probe store {self.path} "
                             f"({e.strerror}): set store.path= (BOUNDLAB_STORE) to a file in a "
                             f"writable folder") from None
        with self._errors("opening"):
            self.db = sqlite3.connect(str(self.path), timeout=60, isolation_level=None,
                                      check_same_thread=False)
            # Several processes may open a new store at once (a sweep's jobs, DDP ranks): switching
            # to WAL and creating the schema can meet "database is locked" despite the busy timeout.
            for attempt in range(20):
                try:
                    self.db.execute("PRAGMA journal_mode=WAL")
                    self.db.execute("PRAGMA synchronous=NORMAL")
                    self.db.executescript(_SCHEMA)
                    self._add_columns()
                    # SQLite opens a write-protected file read-only without a word, and the first
                    # insert would fail after the model is loaded: write once now (the same value).
                    version = self.db.execute("PRAGMA user_version").fetchone()[0]
                    self.db.execute(f"PRAGMA user_version={int(version)}")
                    break
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e) or attempt == 19:
                        raise
                    time.sleep(0.1 * (attempt + 1))

    def _add_columns(self) -> None:
        """Stores made before a column existed lack it: `text_hash` (NULL = text kept, true of
        every old row), `entropy` (NULL = not recorded). ADD COLUMN rewrites no row, so this is
        instant at any size."""
        cols = {r[1] for r in self.db.execute("PRAGMA table_info(samples)")}
        for name, sql_type in _ADDED_COLUMNS:
            if name in cols:
                continue
            try:
                self.db.execute(f"ALTER TABLE samples ADD COLUMN {name} {sql_type}")
            except sqlite3.OperationalError as e:
                if "duplicate column" not in str(e):  # another process added it first
                    raise

    @property
    def _cols(self) -> str:
        """`_COLUMNS` as this store can select them (a read-only old store may lack the added
        columns: each reads as NULL)."""
        if not hasattr(self, "_present"):
            self._present = {r[1] for r in self.db.execute("PRAGMA table_info(samples)")}
        cols = _COLUMNS
        for name, _ in _ADDED_COLUMNS:
            if name not in self._present:
                cols = cols.replace(name, "NULL")
        return cols

    @property
    def has_entropy(self) -> bool:
        """Whether this store's samples table has the entropy column (a read-only old one may not)."""
        return "entropy" in self._cols

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except (sqlite3.Error, OSError) as e:
            err = store_error(self.path, e, doing)
            if err is None:
                raise
            raise err from None

    # -- probes -------------------------------------------------------------------------------
    def ensure_probe(self, key: str, model_fp: str, task_fp: str, settings: dict[str, Any],
                     model_name: str = "", task_name: str = "", meta: dict | None = None) -> None:
        with self._errors("writing"):
            self.db.execute(
                "INSERT OR IGNORE INTO probes (key, model_fp, task_fp, settings, model_name, task_name, "
                "created, meta) VALUES (?,?,?,?,?,?,?,?)",
                (key, model_fp, task_fp, json.dumps(settings, sort_keys=True), model_name, task_name,
                 time.time(), json.dumps(meta or {})),
            )

    def probe_info(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM probes WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        cols = [d[0] for d in self.db.execute("SELECT * FROM probes LIMIT 0").description]
        info = dict(zip(cols, row))
        info["settings"] = json.loads(info["settings"])
        info["meta"] = json.loads(info["meta"] or "{}")
        return info

    def list_probes(self) -> list[dict[str, Any]]:
        keys = [r[0] for r in self.db.execute("SELECT key FROM probes ORDER BY created")]
        return [self.probe_info(k) for k in keys]  # type: ignore[misc]

    def probes_of(self, model_fp: str, task_fp: str) -> list[dict[str, Any]]:
        """Every probe of this model on this task (any settings, any verifier), oldest first."""
        keys = [r[0] for r in self.db.execute(
            "SELECT key FROM probes WHERE model_fp=? AND task_fp=? ORDER BY created",
            (model_fp, task_fp))]
        return [self.probe_info(k) for k in keys]  # type: ignore[misc]

    # -- samples ------------------------------------------------------------------------------
    def counts_done(self, key: str) -> dict[str, int]:
        """Samples stored so far, per problem."""
        return dict(self.db.execute(
            "SELECT problem_id, COUNT(*) FROM samples WHERE key=? GROUP BY problem_id", (key,)))

    def next_index(self, key: str) -> dict[str, int]:
        """The first free sample index per problem (indices are never reused)."""
        return dict(self.db.execute(
            "SELECT problem_id, MAX(idx) + 1 FROM samples WHERE key=? GROUP BY problem_id", (key,)))

    def add_samples(self, key: str, rows: Sequence[SampleRow], keep_text: str = "all") -> int:
        """Insert one batch atomically. Returns the rows actually inserted.

        A (problem, idx) that is already stored is kept as it is: two processes probing the same
        model at once (a sweep's jobs sharing a base model) draw the same seeded samples, and the
        primary key keeps exactly one of each. `keep_text="compact"`: see the module docstring.
        """
        if not rows:
            return 0
        if keep_text not in KEEP_TEXT_MODES:
            raise ValueError(f"keep_text={keep_text!r}: must be one of {', '.join(KEEP_TEXT_MODES)}")
        if any(r.text is None for r in rows):
            raise ValueError("add_samples needs every row's text (a row read from a compact probe "
                             "has none)")
        with self._errors("writing samples to"):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                drop = self._to_drop(key, rows) if keep_text == "compact" else set()
                data = [
                    (key, r.problem_id, r.idx, "" if i in drop else r.text, r.extracted,
                     int(r.correct), None if r.strict is None else int(r.strict), r.outcome,
                     r.n_tokens, json.dumps(r.info) if r.info else None,
                     text_hash(r.text) if i in drop else None, r.entropy)
                    for i, r in enumerate(rows)
                ]
                before = self.db.total_changes
                self.db.executemany(f"INSERT OR IGNORE INTO samples ({_INSERT_COLUMNS}) "
                                    f"VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", data)
                inserted = self.db.total_changes - before
                self.db.execute("COMMIT")
                return inserted
            except BaseException:
                # SQLITE_FULL (and a few other errors) roll back by themselves; a ROLLBACK then
                # would raise "no transaction is active" in place of the real error.
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise

    def _to_drop(self, key: str, rows: Sequence[SampleRow]) -> set[int]:
        """Positions in `rows` whose text a compact store drops: wrong, not among the problem's
        first KEEP_WRONG wrong samples by index (timeouts count among them; those already stored
        with a smaller index count too: a probe stores each problem's samples in index order),
        not a `timeout` and not empty."""
        drop: set[int] = set()
        seen: dict[str, int] = {}
        order = sorted(range(len(rows)), key=lambda i: (rows[i].problem_id, rows[i].idx))
        for i in order:
            r = rows[i]
            if r.correct:
                continue
            if r.problem_id not in seen:
                seen[r.problem_id] = self.db.execute(
                    "SELECT COUNT(*) FROM samples WHERE key=? AND problem_id=? AND idx<? "
                    "AND correct=0", (key, r.problem_id, r.idx)).fetchone()[0]
            if seen[r.problem_id] >= KEEP_WRONG and r.outcome != "timeout" and r.text:
                drop.add(i)
            seen[r.problem_id] += 1
        return drop

    def counts(self, key: str, problem_ids: Iterable[str] | None = None,
               n_max: int | None = None) -> list[ProblemCounts]:
        """(n, c) per problem. With `n_max`, only each problem's first n_max samples count."""
        if n_max is None:
            q = ("SELECT problem_id, COUNT(*), SUM(correct), SUM(strict), COUNT(strict) FROM samples "
                 "WHERE key=? GROUP BY problem_id")
            args: tuple = (key,)
        else:
            # The first n_max stored samples by index (indices can have gaps where a sample was
            # withheld, e.g. a sandbox error).
            q = ("SELECT problem_id, COUNT(*), SUM(correct), SUM(strict), COUNT(strict) FROM ("
                 " SELECT problem_id, correct, strict, ROW_NUMBER() OVER"
                 " (PARTITION BY problem_id ORDER BY idx) AS rn FROM samples WHERE key=?)"
                 " WHERE rn <= ? GROUP BY problem_id")
            args = (key, n_max)
        got = {pid: ProblemCounts(pid, n, int(c or 0), int(s or 0) if ns else None)
               for pid, n, c, s, ns in self.db.execute(q, args)}
        if problem_ids is None:
            return sorted(got.values(), key=lambda pc: pc.problem_id)
        return [got.get(pid, ProblemCounts(pid, 0, 0, None)) for pid in problem_ids]

    def samples(self, key: str, problem_id: str | None = None,
                correct: bool | None = None) -> list[SampleRow]:
        q = f"SELECT {self._cols} FROM samples WHERE key=?"
        args: list[Any] = [key]
        if problem_id is not None:
            q += " AND problem_id=?"
            args.append(problem_id)
        if correct is not None:
            q += " AND correct=?"
            args.append(int(correct))
        q += " ORDER BY problem_id, idx"
        return _sample_rows(self.db.execute(q, args))

    def samples_missing_from(self, key: str, donor: str, n_max: int | None = None) -> list[SampleRow]:
        """`donor`'s samples (its first n_max per problem) whose (problem, idx) `key` lacks."""
        q = (f"SELECT {self._cols} FROM ("
             " SELECT *, ROW_NUMBER() OVER (PARTITION BY problem_id ORDER BY idx) AS rn"
             " FROM samples WHERE key=?) AS d"
             " WHERE (? IS NULL OR rn <= ?) AND NOT EXISTS (SELECT 1 FROM samples s"
             " WHERE s.key=? AND s.problem_id=d.problem_id AND s.idx=d.idx)"
             " ORDER BY problem_id, idx")
        return _sample_rows(self.db.execute(q, (donor, n_max, n_max, key)))

    def with_outcome(self, key: str, outcome: str, n_max: int | None = None) -> list[SampleRow]:
        """Samples judged `outcome`, among each problem's first n_max."""
        q = (f"SELECT {self._cols} FROM ("
             " SELECT *, ROW_NUMBER() OVER (PARTITION BY problem_id ORDER BY idx) AS rn"
             " FROM samples WHERE key=?) WHERE outcome=? AND (? IS NULL OR rn <= ?)"
             " ORDER BY problem_id, idx")
        return _sample_rows(self.db.execute(q, (key, outcome, n_max, n_max)))

    # `samples()` reads every text; at n = 1024 on 500 problems that is gigabytes. A reader that
    # draws a few samples (the report's perplexity section) lists them without their text, then
    # reads only the texts it drew.
    def sample_index(self, key: str) -> list[tuple[str, int, bool]]:
        """(problem id, sample index, correct) of every stored sample of the probe, no texts."""
        return [(pid, idx, bool(c)) for pid, idx, c in self.db.execute(
            "SELECT problem_id, idx, correct FROM samples WHERE key=?", (key,))]

    def sample_text(self, key: str, problem_id: str, idx: int) -> str:
        """The text of one stored sample (KeyError when there is none, TextDropped when a compact
        probe did not keep it)."""
        hash_col = "text_hash" if "text_hash" in self._cols else "NULL"
        row = self.db.execute(f"SELECT text, {hash_col} FROM samples WHERE key=? AND problem_id=? "
                              f"AND idx=?", (key, problem_id, idx)).fetchone()
        if row is None:
            raise KeyError(f"no sample {problem_id}#{idx} in probe {key}")
        if row[1] is not None:
            raise dropped_error(1, f"reading sample {problem_id}#{idx}", key)
        return row[0]

    def dropped_texts(self, key: str, n_max: int | None = None) -> int:
        """How many of the probe's samples (each problem's first n_max) have no text."""
        if "text_hash" not in self._cols:
            return 0
        return self.db.execute(
            "SELECT COUNT(*) FROM (SELECT text_hash, ROW_NUMBER() OVER (PARTITION BY problem_id "
            "ORDER BY idx) AS rn FROM samples WHERE key=?) WHERE (? IS NULL OR rn <= ?) AND "
            "text_hash IS NOT NULL", (key, n_max, n_max)).fetchone()[0]

    def replace_verdicts(self, key: str, rows: Sequence[SampleRow]) -> int:
        """Overwrite the verdicts (not the texts) of stored samples, atomically."""
        if not rows:
            return 0
        data = [(r.extracted, int(r.correct), None if r.strict is None else int(r.strict),
                 r.outcome, json.dumps(r.info) if r.info else None, key, r.problem_id, r.idx)
                for r in rows]
        self.db.execute("BEGIN IMMEDIATE")
        try:
            before = self.db.total_changes
            self.db.executemany("UPDATE samples SET extracted=?, correct=?, strict=?, outcome=?, "
                                "info=? WHERE key=? AND problem_id=? AND idx=?", data)
            changed = self.db.total_changes - before
            self.db.execute("COMMIT")
            return changed
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # -- adaptive probes: each problem's n, c, stop reason and round (boundlab.probe.adaptive) ----
    # A record for tables and dashboards; the probe recomputes it from the samples on resume.
    def put_adaptive_states(self, key: str, rows: Sequence[tuple[str, int, int, str, int]]) -> None:
        """Replace the probe's per-problem (problem_id, n, c, reason, round) rows, atomically."""
        with self._errors("writing"):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.executemany("INSERT OR REPLACE INTO adaptive_state (key, problem_id, n, c, reason, round) "
                                    "VALUES (?,?,?,?,?,?)",
                                    [(key, *r) for r in rows])
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise

    def adaptive_states(self, key: str) -> dict[str, tuple[int, int, str, int]]:
        """{problem_id: (n, c, reason, round)} as last recorded ({} for a fixed-n probe)."""
        return {pid: (n, c, reason, rnd) for pid, n, c, reason, rnd in self.db.execute(
            "SELECT problem_id, n, c, reason, round FROM adaptive_state WHERE key=?", (key,))}

    # -- file hashes (model fingerprints) -----------------------------------------------------
    def get_file_hash(self, path: str, size: int, mtime_ns: int) -> str | None:
        row = self.db.execute("SELECT sha FROM file_hashes WHERE path=? AND size=? AND mtime_ns=?",
                              (path, size, mtime_ns)).fetchone()
        return row[0] if row else None

    def put_file_hash(self, path: str, size: int, mtime_ns: int, sha: str) -> None:
        if not self.writable:  # a cache: a reader computes the hash and keeps nothing
            return
        with self._errors("writing"):
            self.db.execute("INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha) VALUES (?,?,?,?)",
                            (path, size, mtime_ns, sha))

    def close(self) -> None:
        self.db.close()
        if not self.writable:
            from boundlab.probe import store_ro

            store_ro.tidy_side_files(self.path, self._side_before)


if __name__ == "__main__":  # merge (probe.merge) | migrate (store_ro) | pack, unpack (probe.archive)
    import sys

    from boundlab.probe.store_ro import cli

    sys.exit(cli(sys.argv[1:]))
