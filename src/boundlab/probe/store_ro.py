"""Reading a probe store without writing to it, and the one command that upgrades an old one.

`Store(path, writable=False)` (report.py, the grid, the dashboard) opens the file with SQLite's
URI `mode=ro`: no journal-mode switch, no schema creation, no added column, no `user_version`
write. The file's bytes and its journal mode stay as they were; a store merged onto a network file
system keeps its rollback journal.

Side files. SQLite creates `-wal` and `-shm` for any connection to a WAL-mode database, a read-only
one included, and a read-only connection cannot remove them. When they did not exist before the
reader opened the store and the WAL holds no frame when it closes, the reader removes them the way
SQLite itself does: one plain connection opened and closed, which deletes them only when it is the
last connection to the file (SQLite's own lock decides) and, the WAL being empty, checkpoints
nothing into the store. So no file is left beside a store that a reader found without them.

Old stores. A reader never migrates. Columns added since a store was written (`_ADDED_COLUMNS`)
read as NULL, which is what they would hold (nothing recorded); the `probes`,
`adaptive_state` and `file_hashes` tables, when absent, read as empty. Anything else the schema has and the store lacks
means the store needs a migration, said in one line naming the command:

    python -m boundlab.probe.store migrate PATH

which adds what is missing in one transaction and leaves the journal mode as it is.
"""

from __future__ import annotations

import functools
import sqlite3
import sys
from pathlib import Path
from urllib.parse import quote

from boundlab.errors import StoreError

# Tables a reader can do without (read as empty, as a writable open would create them): every
# store before them had no rows for them.
OPTIONAL_TABLES = ("probes", "adaptive_state", "file_hashes")
SIDE_FILES = ("-wal", "-shm")


def _schema():
    from boundlab.probe import store  # read at call time: a test may extend the schema

    return store._SCHEMA, store._ADDED_COLUMNS


def expected_columns() -> dict[str, list[str]]:
    """{table: [column, ...]} of the schema this code writes (CREATE statements + added columns)."""
    return {t: [c[0] for c in cols] for t, cols in expected_info().items()}


def expected_info() -> dict[str, list[tuple[str, str, bool]]]:
    """{table: [(column, declared type, NOT NULL or key), ...]} of the schema this code writes."""
    return _expected_info(*_schema())


@functools.lru_cache(maxsize=4)
def _expected_info(schema: str, added: tuple) -> dict[str, list[tuple[str, str, bool]]]:
    mem = sqlite3.connect("file::memory:", uri=True)
    try:
        mem.executescript(schema)
        for name, sql_type in added:
            cols = {r[1] for r in mem.execute("PRAGMA table_info(samples)")}
            if name not in cols:
                mem.execute(f"ALTER TABLE samples ADD COLUMN {name} {sql_type}")
        tables = [r[0] for r in mem.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: [(r[1], r[2], bool(r[3] or r[5])) for r in mem.execute(f'PRAGMA table_info("{t}")')]
                for t in tables}
    finally:
        mem.close()


def schema_gaps(db: sqlite3.Connection) -> tuple[list[str], list[str]]:
    """(what a reader can do without, what needs a migration) of the store open on `db`: missing
    tables and `table.column`s."""
    _, added = _schema()
    added_names = {name for name, _ in added}
    present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    tolerable, needed = [], []
    for table, cols in expected_columns().items():
        if table not in present:
            (tolerable if table in OPTIONAL_TABLES else needed).append(table)
            continue
        have = {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}
        for c in cols:
            if c not in have:
                (tolerable if table == "samples" and c in added_names else needed).append(f"{table}.{c}")
    return tolerable, needed


def migrate_command(path: Path) -> str:
    return f"python -m boundlab.probe.store migrate {path}"


def open_readonly(path: Path) -> sqlite3.Connection:
    """A `mode=ro` connection to the store at `path`. A table it lacks that reads as empty is an
    empty TEMP table of this connection (in memory, never in the file). StoreError (one line)
    when it is no file, not a probe store, or needs a migration."""
    if not path.is_file():
        raise StoreError(f"no probe store at {path} (store.path, or BOUNDLAB_STORE)")
    db = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=60,
                         isolation_level=None, check_same_thread=False)
    try:
        present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not present:  # an empty file is an empty store (a writable open would create the tables)
            tolerable, needed = list(expected_info()), []
        elif "samples" not in present:
            raise StoreError(f"{path} is not a probe store (no samples table)")
        else:
            tolerable, needed = schema_gaps(db)
    except BaseException:
        db.close()
        raise
    if needed:
        db.close()
        raise StoreError(f"the probe store {path} was written by an older boundlab and lacks "
                         f"{', '.join(needed)}, which its readers do not add (they never write): run "
                         f"{migrate_command(path)} once, with no probe writing to it")
    db.execute("PRAGMA temp_store=MEMORY")
    schema, added = _schema()
    for stmt in (s.strip() for s in schema.split(";")):
        for table in tolerable:
            if "." not in table and stmt.startswith(f"CREATE TABLE IF NOT EXISTS {table} "):
                db.execute(stmt.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
                have = {r[1] for r in db.execute(f'PRAGMA temp.table_info("{table}")')}
                for name, sql_type in added if table == "samples" else ():
                    if name not in have:
                        db.execute(f"ALTER TABLE temp.samples ADD COLUMN {name} {sql_type}")
    return db


def side_files(path: Path) -> set[str]:
    return {s for s in SIDE_FILES if Path(f"{path}{s}").exists()}


def tidy_side_files(path: Path, before: set[str]) -> None:
    """After a reader closed: remove the -wal/-shm its open created, if the WAL holds no frame,
    by SQLite's own last-connection close (module docstring). Best effort: never raises."""
    made = side_files(path) - before
    if not made:
        return
    try:
        if Path(f"{path}-wal").exists() and Path(f"{path}-wal").stat().st_size > 0:
            return  # frames of a writer's: its own close checkpoints them
        db = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=rw", uri=True, timeout=1)
        try:
            db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        finally:
            db.close()
    except (sqlite3.Error, OSError):
        pass


def migrate(path: str | Path) -> list[str]:
    """Add what the schema has and the store at `path` lacks, in one transaction (journal mode
    untouched). Returns what was added."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise StoreError(f"no probe store at {path}")
    schema, added = _schema()
    db = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=rw", uri=True, timeout=60,
                         isolation_level=None)
    try:
        present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"probes", "samples"} <= present:
            raise StoreError(f"{path} is not a probe store (no probes/samples tables)")
        tolerable, needed = schema_gaps(db)
        db.execute("BEGIN IMMEDIATE")
        try:
            for stmt in (s.strip() for s in schema.split(";")):
                if stmt:
                    db.execute(stmt)
            have = {r[1] for r in db.execute("PRAGMA table_info(samples)")}
            for name, sql_type in added:
                if name not in have:
                    db.execute(f"ALTER TABLE samples ADD COLUMN {name} {sql_type}")
            info = expected_info()
            for gap in schema_gaps(db)[1]:
                table, _, col = gap.partition(".")
                spec = next(c for c in info[table] if c[0] == col)
                if not spec[2]:  # a plain nullable column: added as SQLite adds any (no row rewritten)
                    db.execute(f'ALTER TABLE "{table}" ADD COLUMN "{col}" {spec[1]}')
            _, still = schema_gaps(db)
            if still:
                raise StoreError(f"{path}: cannot add {', '.join(still)} to an existing table; "
                                 f"probe again into a new store")
            db.execute("COMMIT")
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")
        return tolerable + needed
    except sqlite3.Error as e:
        raise StoreError(f"migrating the probe store {path} failed ({e}); nothing was changed") from None
    finally:
        db.close()


def cli(argv: list[str]) -> int:
    """python -m boundlab.probe.store merge STORE [STORE ...] --out MERGED | migrate STORE |
    pack STORE --models NAMES --out ARCHIVE | unpack ARCHIVE [ARCHIVE ...] --store STORE"""
    if argv[:1] == ["merge"]:
        from boundlab.probe.merge import main

        return main(argv[1:])
    if argv[:1] in (["pack"], ["unpack"]):
        from boundlab.probe.archive import main as archive_main

        return archive_main(argv)
    if argv[:1] != ["migrate"] or len(argv) != 2:
        print("usage: python -m boundlab.probe.store merge STORE [STORE ...] --out MERGED | "
              "migrate STORE | pack STORE --models NAMES --out ARCHIVE.sqlite.xz | "
              "unpack ARCHIVE [ARCHIVE ...] --store STORE", file=sys.stderr)
        return 2
    try:
        added = migrate(argv[1])
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{argv[1]}: " + (f"added {', '.join(added)}" if added else "up to date, nothing to add"))
    return 0
