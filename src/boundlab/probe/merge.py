"""Merging probe stores: the store on a cluster.

SQLite's WAL needs shared memory between every process that opens the file, so a store on a network
file system (NFS, Lustre, GPFS) shared by processes on several nodes is unsafe. On a cluster each node
keeps its own store on node-local disk (`BOUNDLAB_STORE=$TMPDIR/...`): the training node's, the
detached probe worker's. Merged by key into one file, they are one store again:

    python -m boundlab.probe.store merge NODE_A.sqlite NODE_B.sqlite --out shared/store.sqlite

What a merge does with a key found in more than one store:
- a probe (same key) must have the same model, task and settings in both (they make the key);
- a sample (probe, problem, index) stored in both must be the same sample: the same text, verdict,
  answer, token count and info, or it is an error naming the sample: never a silent overwrite, so
  two nodes that sampled the same probe independently (other draws under the same indices) are
  caught, not mixed. A text one store kept and the other dropped (probe.keep_text=compact) is the
  same sample when its hash matches; the merged row keeps the text.
- adaptive-probing states and the file-hash cache: identical rows dedupe, differing ones are errors.
`--out` may be an existing store (then it is merged with the inputs). Nothing is written unless the
whole merge succeeds: it is built in a temporary file beside `--out` and renamed over it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote

from boundlab.errors import StoreError
from boundlab.probe.store import _SCHEMA, text_hash

_SAMPLE_COLS = ("key", "problem_id", "idx", "text", "extracted", "correct", "strict", "outcome", "n_tokens",
                "info", "text_hash")
_PROBE_IDENTITY = ("model_fp", "task_fp", "settings")


class MergeConflict(StoreError):
    """Two stores disagree on a key (one line, exit 2)."""


def _columns(db: sqlite3.Connection, schema: str, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA {schema}.table_info({table})")}


def _same_sample(a: tuple, b: tuple) -> bool:
    """Rows of _SAMPLE_COLS (key and index already equal)."""
    text_a, hash_a, text_b, hash_b = a[3], a[10], b[3], b[10]
    if hash_a is None and hash_b is None:
        same_text = text_a == text_b
    elif hash_a is not None and hash_b is not None:
        same_text = bytes(hash_a) == bytes(hash_b)
    else:  # one kept its text, the other kept its hash
        same_text = text_hash(text_b if hash_a is not None else text_a) == bytes(hash_a if hash_a is not None
                                                                                 else hash_b)
    info_a, info_b = (json.loads(x) if x else None for x in (a[9], b[9]))
    return same_text and a[4:9] == b[4:9] and info_a == info_b


def _uri(path: Path, mode: str) -> str:
    return f"file:{quote(str(path.resolve()))}?mode={mode}"


def _merge_one(db: sqlite3.Connection, src: Path) -> dict[str, int]:
    try:  # read-only: an input is never changed (no WAL switch, no schema upgrade)
        db.execute("ATTACH DATABASE ? AS src", (_uri(src, "ro"),))
        db.execute("SELECT count(*) FROM src.sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{src} is not a readable SQLite store ({e})") from None
    try:
        # One transaction per input (ATTACH cannot run inside one); the temporary file is what
        # makes the whole merge atomic: it replaces --out only when every input merged.
        db.execute("BEGIN")
        stats = _merge_attached(db, src)
        db.execute("COMMIT")
        return stats
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.execute("DETACH DATABASE src")


def _merge_attached(db: sqlite3.Connection, src: Path) -> dict[str, int]:
    tables = {r[0] for r in db.execute("SELECT name FROM src.sqlite_master WHERE type='table'")}
    if not {"probes", "samples"} <= tables:
        raise StoreError(f"{src} is not a probe store (no probes/samples tables)")
    stats = {"probes": 0, "samples": 0, "duplicates": 0, "texts_restored": 0}

    for key, *ident in db.execute(f"SELECT s.key, {', '.join('s.' + c + ', m.' + c for c in _PROBE_IDENTITY)} "
                                  f"FROM src.probes s JOIN main.probes m USING (key)"):
        pairs = list(zip(ident[0::2], ident[1::2]))
        if any(a != b for a, b in pairs):
            raise MergeConflict(f"probe {key}: {src} and the stores before it give it another model, task or "
                                f"settings under the same key; these stores cannot be merged")
    before = db.total_changes
    db.execute("INSERT OR IGNORE INTO main.probes SELECT key, model_fp, task_fp, settings, model_name, "
               "task_name, created, meta FROM src.probes")
    stats["probes"] = db.total_changes - before

    cols = ", ".join(f"s.{c}" if c != "text_hash" or "text_hash" in _columns(db, "src", "samples")
                     else "NULL" for c in _SAMPLE_COLS)
    mcols = ", ".join(f"m.{c}" for c in _SAMPLE_COLS)
    overlap = db.execute(f"SELECT {cols}, {mcols} FROM src.samples s JOIN main.samples m "
                         f"USING (key, problem_id, idx)").fetchall()
    n = len(_SAMPLE_COLS)
    for row in overlap:
        new, old = row[:n], row[n:]
        if not _same_sample(new, old):
            diff = [c for c, a, b in zip(_SAMPLE_COLS[3:], new[3:], old[3:]) if a != b]
            raise MergeConflict(f"sample {new[2]} of problem {new[1]} in probe {new[0]} differs between {src} "
                                f"and the stores before it ({', '.join(diff)}): the same probe was sampled "
                                f"independently on two nodes; merge only one of them (probe a base once, "
                                f"on one node) - nothing was written")
        if old[10] is not None and new[10] is None:  # the merged row keeps the text
            db.execute("UPDATE main.samples SET text=?, text_hash=NULL WHERE key=? AND problem_id=? AND idx=?",
                       (new[3], new[0], new[1], new[2]))
            stats["texts_restored"] += 1
    stats["duplicates"] = len(overlap)
    before = db.total_changes
    db.execute(f"INSERT OR IGNORE INTO main.samples ({', '.join(_SAMPLE_COLS)}) SELECT {cols} FROM src.samples s")
    stats["samples"] = db.total_changes - before

    for table, pk in (("adaptive_state", ("key", "problem_id")), ("file_hashes", ("path", "size", "mtime_ns"))):
        if table not in tables:
            continue
        names = [r[1] for r in db.execute(f"PRAGMA main.table_info({table})")]
        sel = ", ".join(f"s.{c}" for c in names) + ", " + ", ".join(f"m.{c}" for c in names)
        for row in db.execute(f"SELECT {sel} FROM src.{table} s JOIN main.{table} m USING ({', '.join(pk)})"):
            if row[:len(names)] != row[len(names):]:
                raise MergeConflict(f"{table} row {row[:len(pk)]} differs between {src} and the stores before "
                                    f"it; nothing was written")
        db.execute(f"INSERT OR IGNORE INTO main.{table} ({', '.join(names)}) SELECT {', '.join(names)} "
                   f"FROM src.{table}")
    return stats


def _leave_wal(path: Path) -> None:
    """Checkpoint `path` and delete its -wal/-shm (journal_mode=DELETE), so no stale WAL is replayed
    onto the file renamed over it. Fails while another process has the store open."""
    db = sqlite3.connect(str(path), timeout=5)
    try:
        mode = db.execute("PRAGMA journal_mode=DELETE").fetchone()[0].lower()
    except sqlite3.OperationalError:
        mode = "wal"
    finally:
        db.close()
    if mode != "delete":
        raise StoreError(f"{path} is in use by another process: stop the runs using it, then merge again")


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
    tmp = out.with_name(out.name + ".merging")
    if tmp.exists():
        tmp.unlink()
    out.parent.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"out": str(out), "inputs": {}}
    try:
        if out.exists():
            # SQLite's own backup: a consistent snapshot, WAL pages included.
            live, copy = sqlite3.connect(_uri(out, "ro"), uri=True), sqlite3.connect(str(tmp))
            try:
                live.backup(copy)
            finally:
                live.close()
                copy.close()
        db = sqlite3.connect(_uri(tmp, "rwc"), uri=True, isolation_level=None)
        try:
            # A rollback journal, not WAL: the merged file may live on a network file system.
            db.execute("PRAGMA journal_mode=DELETE")
            db.executescript(_SCHEMA)
            if "text_hash" not in _columns(db, "main", "samples"):
                db.execute("ALTER TABLE samples ADD COLUMN text_hash BLOB")
            for src in srcs:
                report["inputs"][str(src)] = _merge_one(db, src)
        finally:
            db.close()
        if out.exists():
            _leave_wal(out)
        os.replace(tmp, out)
    except sqlite3.Error as e:
        raise StoreError(f"merging into {out} failed ({e}); nothing was written") from None
    finally:
        if tmp.exists():
            tmp.unlink()
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
