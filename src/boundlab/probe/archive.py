"""Probe archives: a store's probes in one small file that git can carry between machines.

A long experiment outlives the machine it starts on: the store lives on local disk, and a new
session (or node) begins with an empty one. An archive carries chosen probes - every column of
their samples, their adaptive-probing states - in an xz-compressed SQLite store (a toy-world sample
packs to about 3.5 bytes), so that a finished probe, or one killed midway, is restored into any
store and the probe continues from its stored counts, nothing redone:

    python -m boundlab.probe.store pack STORE --models toy2_base,toy2_base_null --out runs/x/base.sqlite.xz
    python -m boundlab.probe.store unpack runs/x/base.sqlite.xz --store STORE

- `pack` reads the store read-only and selects probes by model name or key (a unique prefix of 6+
  characters). Not carried: the file-hash cache (keyed by this machine's paths) and the adaptive
  probe's record of its rounds (recomputed from the samples: rerun the probe after unpacking).
- Packing onto an existing archive is an update: allowed only when everything the old archive holds
  is in the new one (a growing probe, packed again), checked row by row by the store merge; an
  archive with a sample the store does not hold, or holds differently, is refused in one line and
  left as it was. The new file replaces the old one by an atomic rename only after that check.
- `unpack` is the store merge (`boundlab.probe.merge`): the probe key (model, task and sampling
  settings) must agree, a sample present on both sides must be the same sample, every column is
  copied; a conflict is one line and nothing is written. Unpacking twice changes nothing.
- xz's own CRC-64 checks the archive's bytes: a damaged file is refused, never half-read.
"""

from __future__ import annotations

import json
import lzma
import os
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from boundlab.errors import StoreError
from boundlab.probe.merge import _ensure_schema, _uri, merge_stores

SUFFIX = ".sqlite.xz"
# Tables an archive carries (per probe key). Not carried: file_hashes (a cache of this machine's
# paths) and adaptive_state (the adaptive probe's record of its rounds, recomputed from the samples
# and rewritten by the probe's next run: rerun the probe command after unpacking).
_KEYED = ("probes", "samples")


def _select_keys(db: sqlite3.Connection, selectors: Sequence[str]) -> list[str]:
    """Probe keys named by model name, full key or unique key prefix (6+ characters)."""
    keys: list[str] = []
    for sel in selectors:
        by_name = [r[0] for r in db.execute("SELECT key FROM src.probes WHERE model_name=? ORDER BY key", (sel,))]
        if not by_name and len(sel) >= 6:
            by_name = [r[0] for r in db.execute("SELECT key FROM src.probes ORDER BY key") if r[0].startswith(sel)]
            if len(by_name) > 1:
                raise StoreError(f"key prefix {sel!r} names {len(by_name)} probes: give more characters")
        if not by_name:
            raise StoreError(f"no probe in the store has model name or key {sel!r}")
        keys += [k for k in by_name if k not in keys]
    return keys


def _decompress(archive: Path, dest: Path) -> None:
    try:
        with lzma.open(archive, "rb") as src, open(dest, "wb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
    except (lzma.LZMAError, EOFError) as e:
        raise StoreError(f"archive {archive} is damaged or not an xz file ({e}); it was not read") from None


def _counts(path: Path) -> dict[str, Any]:
    db = sqlite3.connect(_uri(path, "ro"), uri=True)
    try:
        rows = db.execute("SELECT p.key, p.model_name, count(s.idx) FROM probes p LEFT JOIN samples s "
                          "ON s.key = p.key GROUP BY p.key ORDER BY p.key").fetchall()
    finally:
        db.close()
    return {k: {"model_name": name, "samples": n} for k, name, n in rows}


def pack(store: str | Path, selectors: Sequence[str], out: str | Path) -> dict[str, Any]:
    """Write the probes `selectors` name, from `store`, to the archive `out`. Returns its counts."""
    store, out = Path(store).expanduser(), Path(out).expanduser()
    if not store.is_file():
        raise StoreError(f"store {store} does not exist")
    if not str(out).endswith(SUFFIX):
        raise StoreError(f"an archive's name ends in {SUFFIX} (got {out.name})")
    if not selectors:
        raise StoreError("pack needs at least one model name or probe key (--models)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".pack-", dir=out.parent) as tmp:
        staged = Path(tmp) / "staged.sqlite"
        db = sqlite3.connect(str(staged), isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=DELETE")
            _ensure_schema(db)
            try:
                db.execute("ATTACH DATABASE ? AS src", (_uri(store, "ro"),))
                keys = _select_keys(db, selectors)
            except sqlite3.DatabaseError as e:
                raise StoreError(f"{store} is not a readable SQLite store ({e})") from None
            marks = ",".join("?" * len(keys))
            db.execute("BEGIN")
            for table in _KEYED:
                cols = ", ".join(f'"{r[1]}"' for r in db.execute(f'PRAGMA src.table_info("{table}")'))
                db.execute(f'INSERT INTO main."{table}" ({cols}) SELECT {cols} FROM src."{table}" '
                           f"WHERE key IN ({marks})", keys)
            db.execute("COMMIT")
            db.execute("DETACH DATABASE src")
        finally:
            db.close()
        if out.exists():  # an update: the old archive must be contained in the new one
            old = Path(tmp) / "old.sqlite"
            _decompress(out, old)
            before = _counts(staged)
            merge_stores([old], staged)  # a differing sample is a MergeConflict: nothing replaced
            if _counts(staged) != before:
                raise StoreError(f"{out} holds samples that {store} does not (another run's?); "
                                 f"the archive was left as it was: unpack it into the store first")
        db = sqlite3.connect(str(staged), isolation_level=None)
        try:
            db.execute("VACUUM")
        finally:
            db.close()
        packed = Path(tmp) / "packed.xz"
        with open(staged, "rb") as src, lzma.open(packed, "wb", preset=9, check=lzma.CHECK_CRC64) as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        os.replace(packed, out)
        return {"archive": str(out), "bytes": out.stat().st_size, "probes": _counts(staged)}


def unpack(archive: str | Path, store: str | Path) -> dict[str, Any]:
    """Merge the archive's probes into `store` (created when missing). Returns the merge's counts."""
    archive, store = Path(archive).expanduser(), Path(store).expanduser()
    if not archive.is_file():
        raise StoreError(f"archive {archive} does not exist")
    store.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=store.parent) as tmp:
        staged = Path(tmp) / "archive.sqlite"
        _decompress(archive, staged)
        report = merge_stores([staged], store)
        report["probes"] = _counts(staged)
        report["inputs"] = {str(archive): v for v in report["inputs"].values()}
        return report


def main(argv: Sequence[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m boundlab.probe.store pack|unpack",
                                 description="Carry probes between stores (see boundlab.probe.archive).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="write chosen probes of a store to an xz archive")
    p.add_argument("store")
    p.add_argument("--models", required=True, help="comma-separated model names or probe keys")
    p.add_argument("--out", required=True, help=f"the archive (…{SUFFIX}); an existing one is updated")
    u = sub.add_parser("unpack", help="merge archives into a store")
    u.add_argument("archives", nargs="+")
    u.add_argument("--store", required=True)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "pack":
            report = pack(args.store, [s for s in args.models.split(",") if s], args.out)
        else:
            report = {str(a): unpack(a, args.store) for a in args.archives}
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1))
    return 0


__all__ = ["SUFFIX", "main", "pack", "unpack"]
