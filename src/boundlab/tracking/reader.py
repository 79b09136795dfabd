"""Read W&B offline run files (`run-<id>.wandb`) without W&B's servers. For tests and checks only.

The format is private to W&B and pinned here to one release (0.31). Tests and `scripts/gpu_check.py`
read back what a run logged with it (real W&B runs, offline, read back). No library code imports
it: a resume decides what to re-log from the run dir's own records (`boundlab.tracking.segments`),
and an import-linter contract in pyproject.toml keeps it that way.

W&B 0.31 ships no Python reader; its Go core writes the files. The format (wandb `core/pkg/leveldb`,
a fork of golang/leveldb's `record` package):

- a 7-byte file header, `<4sHB`: ident `:W&B`, magic 0xBEE1, version 0. It sits inside block 0, so
  blocks are 32 KiB windows of the *file* (block 0 holds 7 header bytes + 32761 bytes of chunks);
- chunks, each a 7-byte header `<IHB` (checksum, length, type: 1 full, 2 first, 3 middle, 4 last)
  and `length` payload bytes. A chunk never crosses a block boundary; when fewer than 7 bytes are
  left in a block the writer zero-fills them and the next chunk starts the next block;
- the checksum is plain CRC-32 (IEEE, `zlib.crc32`) over the type byte and the payload. W&B selects
  `CRCAlgoIEEE`; it is neither leveldb's CRC-32C nor masked;
- a record (one or more chunks) is a serialized `wandb.proto.wandb_internal_pb2.Record`.

Damage is handled like leveldb's reader: a chunk with a bad checksum or an impossible length drops
the record in progress and the rest of its block, and reading resumes at the next block. A file that
ends mid-chunk or mid-record (a run killed hard, or one still being written) yields every complete
record before the end and sets `truncated`.

A resumed offline run writes a new file (a new `offline-run-*` folder with the same id); a run
directory read as one run merges all files of that id in start-time order. History rows are nested
back into the dicts that were logged: an item's path is `[item.key]` or `item.nested_key`, where
`nested_key[0]` is the logged key (`probe/pass@1`) and any further elements are keys inside a logged
dict (W&B media such as tables log as dicts: `{"_type": "table-file", "path": ...}`).
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCK_SIZE = 32 * 1024
CHUNK_HEADER = struct.Struct("<IHB")  # checksum, length, type
FILE_HEADER = struct.Struct("<4sHB")  # ident, magic, version
FILE_IDENT = b":W&B"
FILE_MAGIC = 0xBEE1
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


@dataclass
class ScanStats:
    """What the framing layer saw in one file."""

    records: int = 0
    corrupt_chunks: int = 0  # bad checksum, bad length or bad type; each costs the rest of a block
    dropped_records: int = 0  # partial multi-chunk records abandoned because of damage
    undecodable: int = 0  # complete records that did not parse as a protobuf Record
    truncated: bool = False  # the file ended inside a chunk or inside a multi-chunk record


def iter_record_bytes(
    data: bytes, stats: ScanStats | None = None, verify_crc: bool = True, offset: int = 0
) -> Iterator[bytes]:
    """Yield the payload of every complete record in the bytes of a `.wandb` file.

    `offset` is the file offset `data` starts at: 0 (the whole file), or a block boundary to read a
    file's tail (records whose first chunk lies before `offset` are skipped).
    """
    stats = ScanStats() if stats is None else stats
    if offset % BLOCK_SIZE:
        raise ValueError(f"offset {offset} is not a multiple of the {BLOCK_SIZE}-byte block")
    if offset == 0:
        if len(data) < FILE_HEADER.size:
            stats.truncated = bool(data)
            return
        ident, magic, version = FILE_HEADER.unpack_from(data, 0)
        if ident != FILE_IDENT or magic != FILE_MAGIC:
            raise ValueError(f"not a W&B run file (header {data[:7]!r})")
        if version != 0:
            raise ValueError(f"unsupported W&B run file version {version}")

    view = memoryview(data)
    n = len(data)
    pos = FILE_HEADER.size if offset == 0 else 0
    pending: list[memoryview] | None = None  # chunks of a record started by FIRST

    def drop_pending() -> None:
        nonlocal pending
        if pending is not None:
            stats.dropped_records += 1
        pending = None

    while pos < n:
        block_end = (pos // BLOCK_SIZE + 1) * BLOCK_SIZE
        if block_end - pos < CHUNK_HEADER.size:
            pos = block_end  # zero trailer: the writer starts the next chunk in the next block
            continue
        if pos + CHUNK_HEADER.size > n:
            stats.truncated = True
            break
        checksum, length, ctype = CHUNK_HEADER.unpack_from(data, pos)
        start, end = pos + CHUNK_HEADER.size, pos + CHUNK_HEADER.size + length
        if checksum == 0 and length == 0 and ctype == 0:
            # A zeroed region (preallocated or never written): nothing more in this block.
            drop_pending()
            pos = block_end
            continue
        if end > block_end:  # a length no writer produces: damage, not truncation
            stats.corrupt_chunks += 1
            drop_pending()
            pos = block_end
            continue
        if end > n:
            stats.truncated = True  # the file ends inside this chunk
            break
        if verify_crc and zlib.crc32(view[pos + 6 : end]) != checksum:
            stats.corrupt_chunks += 1
            drop_pending()
            pos = block_end
            continue
        pos = end
        payload = view[start:end]
        if ctype == FULL:
            drop_pending()
            stats.records += 1
            yield bytes(payload)
        elif ctype == FIRST:
            drop_pending()
            pending = [payload]
        elif ctype == MIDDLE:
            if pending is not None:
                pending.append(payload)
        elif ctype == LAST:
            if pending is not None:
                pending.append(payload)
                stats.records += 1
                yield b"".join(pending)
                pending = None
        else:
            stats.corrupt_chunks += 1
            drop_pending()
            pos = block_end
    if pending is not None:
        stats.truncated = True  # the writer never got to the record's last chunk
        pending = None


def iter_records(path: str | os.PathLike, stats: ScanStats | None = None, verify_crc: bool = True):
    """Yield every decodable `wandb_internal_pb2.Record` in a `.wandb` file, in file order."""
    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2 as pb

    stats = ScanStats() if stats is None else stats
    for payload in iter_record_bytes(Path(path).read_bytes(), stats, verify_crc):
        record = pb.Record()
        try:
            record.ParseFromString(payload)
        except DecodeError:
            stats.undecodable += 1
            continue
        yield record


def has_exit_record(path: str | os.PathLike) -> bool:
    """Whether the file on disk already holds the run's exit record (read from its last blocks).

    W&B's core writes a run file through a 32 KiB buffer and closes it after `run.finish()` returns,
    so a reader that starts right after finish can see a stale file; this tells when it is complete.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    try:
        size = os.path.getsize(path)
        # The last two blocks: an exit record is small, but may straddle a block boundary.
        start = max(0, ((size - 1) // BLOCK_SIZE - 1) * BLOCK_SIZE)
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read()
    except OSError:
        return False
    for payload in iter_record_bytes(data, offset=start):
        record = pb.Record()
        try:
            record.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - a damaged record is not an exit record
            continue
        if record.WhichOneof("record_type") == "exit":
            return True
    return False


# --------------------------------------------------------------------------------------------------
# Decoding items


def _item_path(item: Any) -> list[str]:
    return [item.key] if item.key else list(item.nested_key)


def _decode(value_json: str) -> Any:
    try:
        return json.loads(value_json)  # accepts NaN / Infinity, which W&B writes for floats
    except ValueError:
        return value_json


def _set_path(target: dict, path: list[str], value: Any) -> None:
    for part in path[:-1]:
        child = target.get(part)
        if not isinstance(child, dict):
            child = target[part] = {}
        target = child
    target[path[-1]] = value


def _remove_path(target: dict, path: list[str]) -> None:
    for part in path[:-1]:
        target = target.get(part)
        if not isinstance(target, dict):
            return
    target.pop(path[-1], None)


def _apply_updates(target: dict, updates: Any, removes: Any = ()) -> None:
    for item in updates:
        path = _item_path(item)
        if path:
            _set_path(target, path, _decode(item.value_json))
    for item in removes:
        path = _item_path(item)
        if path:
            _remove_path(target, path)


# --------------------------------------------------------------------------------------------------
# Runs


@dataclass
class OfflinePart:
    """One `.wandb` file: a run, or one resumed segment of it."""

    path: Path
    run_id: str | None = None
    project: str | None = None
    entity: str | None = None
    display_name: str | None = None
    group: str | None = None
    job_type: str | None = None
    tags: list[str] = field(default_factory=list)
    start_time: float | None = None
    history: list[dict] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    metrics: dict[str, str | None] = field(default_factory=dict)
    exit_code: int | None = None
    stats: ScanStats = field(default_factory=ScanStats)


def read_part(path: str | os.PathLike, verify_crc: bool = True) -> OfflinePart:
    """Decode one `.wandb` file."""
    part = OfflinePart(path=Path(path))
    for record in iter_records(path, part.stats, verify_crc):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = record.run
            part.run_id = run.run_id or part.run_id
            part.project = run.project or None
            part.entity = run.entity or None
            part.display_name = run.display_name or None
            part.group = run.run_group or None
            part.job_type = run.job_type or None
            part.tags = list(run.tags)
            if run.HasField("start_time"):
                part.start_time = run.start_time.seconds + run.start_time.nanos / 1e9
            _apply_updates(part.config, run.config.update, run.config.remove)
            _apply_updates(part.summary, run.summary.update, run.summary.remove)
        elif kind == "history":
            row: dict[str, Any] = {}
            _apply_updates(row, record.history.item)
            part.history.append(row)
        elif kind == "config":
            _apply_updates(part.config, record.config.update, record.config.remove)
        elif kind == "summary":
            _apply_updates(part.summary, record.summary.update, record.summary.remove)
        elif kind == "metric":
            m = record.metric
            part.metrics[m.name or m.glob_name] = m.step_metric or None
        elif kind == "exit":
            part.exit_code = record.exit.exit_code
    if part.run_id is None:
        name = part.path.name  # run-<id>.wandb
        if name.startswith("run-") and name.endswith(".wandb"):
            part.run_id = name[len("run-") : -len(".wandb")]
    return part


@dataclass
class OfflineRun:
    """A run read back from its offline files; several files when the run was resumed."""

    run_id: str
    history: list[dict]
    config: dict
    summary: dict
    parts: list[OfflinePart]

    @property
    def files(self) -> list[Path]:
        return [p.path for p in self.parts]

    @property
    def project(self) -> str | None:
        return next((p.project for p in reversed(self.parts) if p.project), None)

    @property
    def metrics(self) -> dict[str, str | None]:
        """Defined metrics: name or glob -> its step metric."""
        out: dict[str, str | None] = {}
        for p in self.parts:
            out.update(p.metrics)
        return out

    @property
    def exit_code(self) -> int | None:
        """The last part's exit code; None if it never finished (killed, or still running)."""
        return self.parts[-1].exit_code if self.parts else None

    @property
    def truncated(self) -> bool:
        return any(p.stats.truncated for p in self.parts)

    @property
    def corrupt_chunks(self) -> int:
        return sum(p.stats.corrupt_chunks for p in self.parts)

    def series(self, key: str, step_key: str = "_step") -> tuple[list[Any], list[Any]]:
        """`(steps, values)` of every history row holding both keys, sorted by step."""
        pairs = [(row[step_key], row[key]) for row in self.history if key in row and step_key in row]
        pairs.sort(key=lambda sv: sv[0])
        return [s for s, _ in pairs], [v for _, v in pairs]


def find_run_files(path: str | os.PathLike) -> list[Path]:
    """Every `run-*.wandb` under a directory, without following symlinks (W&B's `latest-run`)."""
    found: dict[str, Path] = {}
    for root, _dirs, files in os.walk(path):
        for name in files:
            if name.startswith("run-") and name.endswith(".wandb"):
                p = Path(root) / name
                found.setdefault(os.path.realpath(p), p)
    return sorted(found.values())


def _merge(run_id: str, parts: list[OfflinePart]) -> OfflineRun:
    def started(p: OfflinePart) -> tuple[float, str]:
        return (p.start_time if p.start_time is not None else p.path.stat().st_mtime, str(p.path))

    parts = sorted(parts, key=started)
    history: list[dict] = []
    config: dict = {}
    summary: dict = {}
    for p in parts:
        history.extend(p.history)
        config.update(p.config)  # like W&B on resume: a later part's top-level keys win
        summary.update(p.summary)
    # `_wandb` holds W&B's bookkeeping (versions, telemetry), not anything we logged.
    config.pop("_wandb", None)
    summary.pop("_wandb", None)
    return OfflineRun(run_id=run_id, history=history, config=config, summary=summary, parts=parts)


def list_offline_runs(path: str | os.PathLike, verify_crc: bool = True) -> dict[str, list[OfflinePart]]:
    """Run id -> its decoded parts, for every offline run file under `path` (a dir or a file)."""
    path = Path(path)
    files = [path] if path.is_file() else find_run_files(path)
    runs: dict[str, list[OfflinePart]] = {}
    for f in files:
        part = read_part(f, verify_crc)
        runs.setdefault(part.run_id or "", []).append(part)
    return runs


def read_offline_run(path: str | os.PathLike, run_id: str | None = None, verify_crc: bool = True) -> OfflineRun:
    """Read an offline W&B run from a run directory (searched recursively) or one `.wandb` file.

    All files of the chosen run id are merged in start-time order (a resumed offline run writes a new
    file). With several run ids under `path`, pass `run_id`.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(path)
    runs = list_offline_runs(path, verify_crc)
    if not runs:
        raise FileNotFoundError(f"no run-*.wandb file under {path}")
    if run_id is None:
        if len(runs) > 1:
            raise ValueError(f"{path} holds several W&B runs ({', '.join(sorted(runs))}); pass run_id=")
        run_id = next(iter(runs))
    if run_id not in runs:
        raise KeyError(f"no W&B run {run_id!r} under {path} (found: {', '.join(sorted(runs))})")
    return _merge(run_id, runs[run_id])
