"""Merging probe stores: the store on a cluster.

SQLite's WAL needs shared memory between every process that opens the file, so a store on a network
file system (NFS, Lustre, GPFS) shared by processes on several nodes is unsafe. On a cluster each node
keeps its own store on node-local disk (`BOUNDLAB_STORE=$TMPDIR/...`): the training node's, the
detached probe worker's. Merged by key into one file, they are one store again:

    python -m boundlab.probe.store merge NODE_A.sqlite NODE_B.sqlite --out shared/store.sqlite

What a merge does with a key found in more than one store:
- a probe (same key) must have the same model, task and settings in both (they make the key);
- a sample (probe, problem, index) stored in both must be the same sample: every column equal (text,
  verdict, answer, token count, info, entropy, ...), or it is an error naming the sample: never a
  silent overwrite, so two nodes that sampled the same probe independently (other draws under the
  same indices) are caught, not mixed. A text one store kept and the other dropped
  (probe.keep_text=compact) is the same sample when its hash matches; the merged row keeps the text.
- every other table (adaptive-probing states, the file-hash cache): identical rows dedupe, differing
  ones are errors.

Every column is copied: the columns of each table are read from the schema itself (`PRAGMA
table_info` of the store the code creates, `boundlab.probe.store._SCHEMA` plus its added columns),
never from a list written here. A column an input has and `--out` lacks is added to `--out`; a table
this code does not know is refused in one line, not dropped.

`--out` may be a live store that probes are writing to. The inputs are first merged into a staging
file of the merge's own (beside `--out`); that file is then merged into `--out` in one `BEGIN
IMMEDIATE` transaction, the write lock a probe takes for every batch, so a row another process
commits to `--out` before, during or after the merge is kept, and nothing is written unless the
whole merge succeeds. A new `--out` is the staging file itself, hard-linked into place (a link never
replaces a file). The merge never renames over, replaces or deletes a file it did not create, and it
leaves `--out`'s journal mode as it found it (a new one gets a rollback journal: it may live on a
network file system).
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote

from boundlab.errors import StoreError
from boundlab.probe import store as store_mod
from boundlab.probe.store import text_hash

_PROBE_IDENTITY = ("model_fp", "task_fp", "settings")
# How long the final transaction waits for a probe's batch to commit (the probe's own busy timeout).
LOCK_TIMEOUT_S = 60.0


class MergeConflict(StoreError):
    """Two stores disagree on a key (one line, exit 2)."""


def _table_info(db: sqlite3.Connection, schema: str, table: str) -> list[tuple]:
    """(name, declared type, primary-key position) of each column, in table order."""
    return [(r[1], r[2], r[5]) for r in db.execute(f'PRAGMA {schema}.table_info("{table}")')]


def _tables(db: sqlite3.Connection, schema: str) -> set[str]:
    return {r[0] for r in db.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type='table' "
                                     f"AND name NOT LIKE 'sqlite_%'")}


def _schema_statements() -> list[str]:
    """The store's CREATE statements, read when called (a test may extend the schema)."""
    return [s.strip() for s in store_mod._SCHEMA.split(";") if s.strip()]


def _ensure_schema(db: sqlite3.Connection) -> None:
    """The store's tables and every added column on `main` (statements run one by one: inside the
    caller's transaction, if any)."""
    for stmt in _schema_statements():
        db.execute(stmt)
    present = {c[0] for c in _table_info(db, "main", "samples")}
    for name, sql_type in store_mod._ADDED_COLUMNS:
        if name not in present:
            db.execute(f"ALTER TABLE main.samples ADD COLUMN {name} {sql_type}")


def _uri(path: Path, mode: str) -> str:
    return f"file:{quote(str(path.resolve()))}?mode={mode}"


def _same(col: str, a: Any, b: Any) -> bool:
    if col == "info":
        return (json.loads(a) if a else None) == (json.loads(b) if b else None)
    if isinstance(a, (bytes, memoryview)) or isinstance(b, (bytes, memoryview)):
        return a is not None and b is not None and bytes(a) == bytes(b)
    return a == b


def _sample_diff(cols: Sequence[str], new: dict, old: dict) -> list[str]:
    """Columns (besides the key) in which two rows of the same sample differ; [] = the same sample.
    A text dropped on one side (text_hash set) matches the other side's text or hash."""
    ha, hb = new.get("text_hash"), old.get("text_hash")
    if ha is None and hb is None:
        text_diff = new["text"] != old["text"]
    elif ha is not None and hb is not None:
        text_diff = bytes(ha) != bytes(hb)
    else:  # one kept its text, the other kept its hash
        kept = new["text"] if ha is None else old["text"]
        text_diff = text_hash(kept) != bytes(ha if ha is not None else hb)
    diff = ["text"] if text_diff else []
    return diff + [c for c in cols if c not in ("key", "problem_id", "idx", "text", "text_hash")
                   and not _same(c, new[c], old[c])]


def _merge_attached(db: sqlite3.Connection, label: str, before: str) -> dict[str, int]:
    """Merge the attached `src` into `main`, inside the caller's transaction. `label` names src
    and `before` what main holds, in error lines."""
    src_tables = _tables(db, "src")
    if not {"probes", "samples"} <= src_tables:
        raise StoreError(f"{label} is not a probe store (no probes/samples tables)")
    _ensure_schema(db)
    known = _tables(db, "main")
    unknown = sorted(src_tables - known)
    if unknown:
        raise StoreError(f"{label} has table(s) {', '.join(unknown)} that this boundlab's store does not "
                         f"know (written by a newer version?): merge with the version that wrote it")
    stats = {"probes": 0, "samples": 0, "duplicates": 0, "texts_restored": 0}
    for table in sorted(src_tables):
        main_cols = {c[0] for c in _table_info(db, "main", table)}
        for name, sql_type, _ in _table_info(db, "src", table):
            if name not in main_cols:  # an input's column is never dropped: --out gets it too
                db.execute(f'ALTER TABLE main."{table}" ADD COLUMN "{name}" {sql_type}')
        info = _table_info(db, "main", table)
        cols = [c[0] for c in info]
        have = {c[0] for c in _table_info(db, "src", table)}
        pk = [c[0] for c in sorted((c for c in info if c[2]), key=lambda c: c[2])]
        sel = ", ".join(f's."{c}"' if c in have else "NULL" for c in cols)
        col_list = ", ".join(f'"{c}"' for c in cols)
        if pk:
            on = " AND ".join(f's."{c}" IS m."{c}"' for c in pk)
            mcols = ", ".join(f'm."{c}"' for c in cols)
            overlap = db.execute(f'SELECT {sel}, {mcols} FROM src."{table}" s JOIN main."{table}" m ON {on}'
                                 ).fetchall()
        else:
            overlap = []
        n = len(cols)
        for row in overlap:
            new, old = dict(zip(cols, row[:n])), dict(zip(cols, row[n:]))
            if table == "probes":
                if any(new[c] != old[c] for c in _PROBE_IDENTITY):
                    raise MergeConflict(f"probe {new['key']}: {label} and {before} give it another model, "
                                        f"task or settings under the same key; these stores cannot be merged")
            elif table == "samples":
                diff = _sample_diff(cols, new, old)
                if diff:
                    raise MergeConflict(
                        f"sample {new['idx']} of problem {new['problem_id']} in probe {new['key']} differs "
                        f"between {label} and {before} ({', '.join(diff)}): the same probe was sampled "
                        f"independently on two nodes; merge only one of them (probe a base once, on one "
                        f"node) - nothing was written")
                if old.get("text_hash") is not None and new.get("text_hash") is None:
                    db.execute("UPDATE main.samples SET text=?, text_hash=NULL WHERE key=? AND problem_id=? "
                               "AND idx=?", (new["text"], new["key"], new["problem_id"], new["idx"]))
                    stats["texts_restored"] += 1
            elif any(not _same(c, new[c], old[c]) for c in cols):
                raise MergeConflict(f"{table} row {tuple(new[c] for c in pk)} differs between {label} and "
                                    f"{before}; nothing was written")
        changes = db.total_changes
        if pk:
            db.execute(f'INSERT OR IGNORE INTO main."{table}" ({col_list}) SELECT {sel} FROM src."{table}" s')
        else:
            db.execute(f'INSERT INTO main."{table}" ({col_list}) SELECT {sel} FROM src."{table}" s '
                       f'EXCEPT SELECT {col_list} FROM main."{table}"')
        if table in ("probes", "samples"):
            stats[table] = db.total_changes - changes
        if table == "samples":
            stats["duplicates"] = len(overlap)
    return stats


def _attach(db: sqlite3.Connection, path: Path, label: str) -> None:
    try:  # read-only: an input is never changed (no WAL switch, no schema upgrade)
        db.execute("ATTACH DATABASE ? AS src", (_uri(path, "ro"),))
        db.execute("SELECT count(*) FROM src.sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{label} is not a readable SQLite store ({e})") from None


def _merge_into(db: sqlite3.Connection, src: Path, label: str, before: str, begin: str) -> dict[str, int]:
    """ATTACH `src`, merge it into `main` in one `begin` transaction, DETACH."""
    _attach(db, src, label)
    try:
        db.execute(begin)
        stats = _merge_attached(db, label, before)
        db.execute("COMMIT")
        return stats
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.execute("DETACH DATABASE src")


def _stage(srcs: Sequence[Path], staged: Path) -> dict[str, dict[str, int]]:
    """Merge the inputs into `staged` (the merge's own file) and return each input's counts."""
    db = sqlite3.connect(str(staged), isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=DELETE")  # it may become --out, on a network file system
        _ensure_schema(db)
        return {str(src): _merge_into(db, src, str(src), "the stores before it", "BEGIN") for src in srcs}
    finally:
        db.close()


def _into_out(staged: Path, out: Path, inputs: str) -> dict[str, int]:
    """Merge `staged` into the existing `out` under the write lock a probe takes (BEGIN IMMEDIATE)."""
    db = sqlite3.connect(_uri(out, "rw"), uri=True, timeout=LOCK_TIMEOUT_S, isolation_level=None)
    try:
        if not {"probes", "samples"} <= _tables(db, "main") and _tables(db, "main"):
            raise StoreError(f"--out {out} is not a probe store (no probes/samples tables)")
        return _merge_into(db, staged, inputs, str(out), "BEGIN IMMEDIATE")
    except sqlite3.OperationalError as e:
        if "locked" in str(e) or "busy" in str(e):
            raise StoreError(f"--out {out} stayed locked by another process for {LOCK_TIMEOUT_S:g} s; "
                             f"nothing was written: merge again when its writer is idle") from None
        raise
    finally:
        db.close()


def merge_stores(inputs: Sequence[str | Path], out: str | Path) -> dict[str, Any]:
    """Merge `inputs` (and `out`, when it exists) into `out`. Returns counts per input."""
    out = Path(out).expanduser()
    srcs = [Path(p).expanduser() for p in inputs]
    if not srcs:
        raise StoreError("merge needs at least one input store")
    for p in srcs:
        if not p.is_file():
            raise StoreError(f"store {p} does not exist")
        if p.resolve() == out.resolve():
            raise StoreError(f"{p} is both an input and --out: name it once, as --out (it is merged too)")
    if len({p.resolve() for p in srcs}) != len(srcs):
        raise StoreError("an input store is named twice")
    if out.is_dir():
        raise StoreError(f"--out {out} is a directory, not a store file")
    out.parent.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"out": str(out), "inputs": {}}
    fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".merging", dir=out.parent)
    os.close(fd)
    staged = Path(name)
    try:
        report["inputs"] = _stage(srcs, staged)
        label = "the inputs" if len(srcs) > 1 else str(srcs[0])
        try:
            os.link(staged, out)  # a new --out: the staged file itself; a link never replaces a file
            report["written"] = "new"
        except FileExistsError:
            report["written"] = _into_out(staged, out, label)
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            sqlite3.connect(str(out)).close()  # no hard links here: create it, then merge into it
            report["written"] = _into_out(staged, out, label)
    except sqlite3.Error as e:
        raise StoreError(f"merging into {out} failed ({e}); nothing was written") from None
    finally:
        for p in (staged, Path(f"{staged}-journal")):
            p.unlink(missing_ok=True)
    return report


def main(argv: Sequence[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m boundlab.probe.store merge",
                                 description="Merge probe stores by key (see boundlab.probe.merge).")
    ap.add_argument("inputs", nargs="+", help="stores to merge (e.g. one per node)")
    ap.add_argument("--out", required=True, help="the merged store (merged too when it exists)")
    args = ap.parse_args(argv)
    try:
        report = merge_stores(args.inputs, args.out)
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1))
    return 0


__all__ = ["MergeConflict", "main", "merge_stores"]
