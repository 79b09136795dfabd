"""Run archives: a finished training run in files git can carry, so that a fresh machine (a new
session, another node) has the run dir back without training it again.

    python -m boundlab.probe.run_archive pack RUN_DIR --out ARCHIVE/arms/ARM --store STORE
    python -m boundlab.probe.run_archive restore ARCHIVE/arms/ARM [...] --sweep-dir SWEEP --store STORE

An archive is a folder of three files:

- `probes.sqlite.xz`: the run's probes in the store (`boundlab.probe.archive`), chosen by the probe
  keys its `probes.jsonl` records (base, null, every checkpoint). Never by model name: the tracker
  names its probes "base", "base (null)" and "step N", the same in every run of a sweep.
- `run.tar.xz`: what the report and the final checkpoint's probe read (`carried_files`): the run's
  records (`probes.jsonl`, `run_info.json`, `.hydra/`, `training_done`, and the small text logs
  `train.log`, `boundary*.csv`, `alarms.jsonl`) and the final complete checkpoint's model files
  (weights, config, generation config, tokenizer, trainer_state.json, the completeness marker).
- `manifest.json`: every carried file's size and sha256, the final step, its model fingerprint and
  the probe keys.

Not carried: earlier checkpoints' weights (the report reads every checkpoint's probe from the store
by the key in `probes.jsonl`; no model is loaded but the base, for perplexity), the trainer's state
(optimizer, scheduler, RNG, training args: an archived run is finished, never resumed, and none of it
is in the model fingerprint, `boundlab.models`), the W&B files and the PNGs (drawn again from the
store by report.py).

`restore` puts the run dir back as `SWEEP/<archive folder name>`: the files are unpacked into a
staging folder and checked against the manifest (bytes, and the checkpoint's model fingerprint, so a
probe of the restored checkpoint has the original's probe key), the probes are merged into the store
(a conflict writes nothing), and only then is the run dir renamed into place: a restored run, which
has `training_done` and is never trained again, always has its probes. An existing run dir is never
written to: one that already holds every carried file, byte for byte, is left as it is; any other is
refused in one line (move it aside to restore the packed run). `pack` writes a new folder the same
way (staged, renamed) and refuses an unfinished run, a final checkpoint not probed yet, and an
existing archive that differs from the run; packing the same run again changes nothing.
"""

from __future__ import annotations

import json
import lzma
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Sequence

from boundlab.conversion_cache import file_digest
from boundlab.errors import StoreError, UserError
from boundlab.models import _trainer_state_file, model_fingerprint
from boundlab.probe import archive
from boundlab.probe.store import Store
from boundlab.rundir import (ALARMS_FILE, BOUNDARY_CSV, BOUNDARY_GROUPS_CSV, CHECKPOINTS_DIR, DONE_MARKER,
                             HYDRA_DIR, PROBES_FILE, RESUMES_FILE, RUN_INFO, TRAIN_LOG)
from boundlab.rundir.checkpoints import latest_complete, step_of
from boundlab.rundir.io import read_jsonl

PROBES_ARCHIVE = "probes" + archive.SUFFIX
FILES_ARCHIVE = "run.tar.xz"
MANIFEST = "manifest.json"
FORMAT = 1
# What report.py reads (boundlab.report.inputs: probes.jsonl, .hydra/config.yaml, run_info.json),
# what the script and train.py resume= check (training_done), and the Hydra files a sweep's job
# list is matched with (.hydra/overrides.yaml).
NEEDED = (PROBES_FILE, DONE_MARKER, str(Path(HYDRA_DIR) / "config.yaml"))
OPTIONAL = (RUN_INFO, str(Path(HYDRA_DIR) / "hydra.yaml"), str(Path(HYDRA_DIR) / "overrides.yaml"),
            str(Path(HYDRA_DIR) / RESUMES_FILE),
            # The run's own record, a few kB of text: its training log and boundary over training.
            TRAIN_LOG, BOUNDARY_CSV, BOUNDARY_GROUPS_CSV, ALARMS_FILE)


class RunArchiveError(UserError):
    """A run that cannot be packed, or an archive that cannot be restored (one line, exit 2)."""


def carried_files(run_dir: Path) -> tuple[list[str], int]:
    """The run-dir paths (relative, sorted) an archive carries, and the final checkpoint's step."""
    missing = [f for f in NEEDED if not (run_dir / f).is_file()]
    if DONE_MARKER in missing:
        raise RunArchiveError(f"{run_dir} has not finished training (no {DONE_MARKER}): only a finished "
                              f"run is packed; resume it first (train.py resume={run_dir})")
    if missing:
        raise RunArchiveError(f"{run_dir} is not a complete run dir: {', '.join(missing)} missing")
    final = latest_complete(run_dir / CHECKPOINTS_DIR)
    if final is None:
        raise RunArchiveError(f"{run_dir} has no complete checkpoint to carry")
    files = list(NEEDED) + [f for f in OPTIONAL if (run_dir / f).is_file()]
    for f in sorted(final.rglob("*")):
        if f.is_file() and not f.is_symlink() and not _trainer_state_file(f.name):
            files.append(str(f.relative_to(run_dir)))
    return sorted(files), step_of(final)


def _probe_rows(run_dir: Path, final_step: int) -> list[dict[str, Any]]:
    rows = read_jsonl(run_dir / PROBES_FILE, repair=False)
    probes = [{"kind": r.get("kind"), "step": int(r["step"]), "key": r["probe_key"]}
              for r in rows if r.get("probe_key")]
    if not any(p["kind"] == "base" for p in probes):
        raise RunArchiveError(f"{run_dir / PROBES_FILE} has no base probe")
    if not any(p["kind"] == "checkpoint" and p["step"] == final_step for p in probes):
        raise RunArchiveError(f"{run_dir}: its final checkpoint (step {final_step}) is not probed yet "
                              f"(no row in {PROBES_FILE}); probe it first (probe.py watch={run_dir})")
    return probes


def _model_fp_in_store(store: Path, key: str) -> str | None:
    s = Store(store, writable=False)
    try:
        info = s.probe_info(key)
    finally:
        s.close()
    return None if info is None else info["model_fp"]


def _manifest(run_dir: Path, store: Path) -> dict[str, Any]:
    files, final = carried_files(run_dir)
    probes = _probe_rows(run_dir, final)
    ckpt = run_dir / CHECKPOINTS_DIR / f"checkpoint-{final}"
    fp = model_fingerprint(str(ckpt))
    final_key = [p["key"] for p in probes if p["kind"] == "checkpoint" and p["step"] == final][-1]
    stored = _model_fp_in_store(store, final_key)
    if stored is None:
        raise RunArchiveError(f"the final checkpoint's probe {final_key} is not in the store {store}: "
                              f"pass the store the run probed into (--store)")
    if stored != fp:
        raise RunArchiveError(f"{ckpt} has model fingerprint {fp}, but its probe {final_key} was made "
                              f"with {stored}: the checkpoint changed after it was probed; not packed")
    return {"format": FORMAT, "run": run_dir.name, "final_step": final, "model_fingerprint": fp,
            "probes": probes,
            "files": {f: {"bytes": (run_dir / f).stat().st_size, "sha256": file_digest(run_dir / f)["sha256"]}
                      for f in files}}


def _differs(run_dir: Path, files: dict[str, dict[str, Any]]) -> str | None:
    """Why `run_dir` does not hold every file of `files` byte for byte (None when it does)."""
    for rel, want in files.items():
        f = run_dir / rel
        if not f.is_file():
            return f"it has no {rel}"
        if f.stat().st_size != want["bytes"] or file_digest(f)["sha256"] != want["sha256"]:
            return f"its {rel} differs"
    return None


def _read_manifest(folder: Path) -> dict[str, Any]:
    try:
        man = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise RunArchiveError(f"{folder} is not a run archive (no {MANIFEST})") from None
    except ValueError as e:
        raise RunArchiveError(f"{folder / MANIFEST} is not valid JSON ({e})") from None
    if man.get("format") != FORMAT:
        raise RunArchiveError(f"{folder / MANIFEST} has format {man.get('format')!r}; this code reads {FORMAT}")
    return man


def _tar_filter(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # No owner names or ids: the archive does not say who packed it.
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def pack(run_dir: str | Path, out: str | Path, store: str | Path) -> dict[str, Any]:
    """Write the finished run `run_dir` (and its probes in `store`) to the archive folder `out`."""
    run_dir, out, store = Path(run_dir).expanduser(), Path(out).expanduser(), Path(store).expanduser()
    if not run_dir.is_dir():
        raise RunArchiveError(f"run dir {run_dir} does not exist")
    if not store.is_file():
        raise StoreError(f"store {store} does not exist")
    man = _manifest(run_dir, store)
    if out.exists():
        old = _read_manifest(out)
        if (old["files"], old["probes"]) != (man["files"], man["probes"]):
            why = _differs(run_dir, old["files"]) or "the run has other files or probes"
            raise RunArchiveError(f"{out} already holds another packing ({why}); it was left as it is: "
                                  f"move it aside to pack {run_dir}")
        return {"archive": str(out), "packed_already": True, **_sizes(out)}
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".pack-{out.name}-", dir=out.parent) as tmp:
        staged = Path(tmp) / out.name
        staged.mkdir()
        archive.pack(store, [p["key"] for p in man["probes"]], staged / PROBES_ARCHIVE)
        with tarfile.open(staged / FILES_ARCHIVE, "w:xz", preset=9, format=tarfile.PAX_FORMAT) as tar:
            for rel in man["files"]:
                tar.add(run_dir / rel, arcname=rel, recursive=False, filter=_tar_filter)
        # The files must not have changed while they were read (a run dir still being written).
        why = _differs(run_dir, man["files"])
        if why:
            raise RunArchiveError(f"{run_dir} changed while it was packed ({why}); nothing was written")
        (staged / MANIFEST).write_text(json.dumps(man, indent=1) + "\n")
        os.rename(staged, out)
    return {"archive": str(out), "packed_already": False, **_sizes(out)}


def _sizes(out: Path) -> dict[str, Any]:
    return {"bytes": {f.name: f.stat().st_size for f in sorted(out.iterdir()) if f.is_file()}}


def _extract(tar_path: Path, dest: Path, files: dict[str, Any]) -> None:
    """Unpack the regular files `files` names, and nothing else, into `dest` (by hand, not
    `extractall`: its safety filter is missing from older Pythons 3.10 and 3.11)."""
    with tarfile.open(tar_path, "r:xz") as tar:
        for m in tar:
            rel = Path(m.name)
            if not m.isfile() or rel.is_absolute() or ".." in rel.parts or m.name not in files:
                raise RunArchiveError(f"{tar_path} holds {m.name!r}, which its {MANIFEST} does not list as a "
                                      f"file; nothing was restored")
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(m) as src, open(out, "wb") as dst:  # type: ignore[union-attr]
                shutil.copyfileobj(src, dst, 1 << 20)
            os.utime(out, (m.mtime, m.mtime))


def restore_one(folder: str | Path, sweep_dir: str | Path, store: str | Path) -> dict[str, Any]:
    """Restore the archive `folder` as the run dir `sweep_dir/<folder's name>` (see the docstring)."""
    folder, sweep_dir, store = Path(folder).expanduser(), Path(sweep_dir).expanduser(), Path(store).expanduser()
    man = _read_manifest(folder)
    dest = sweep_dir / folder.name
    if dest.exists() or dest.is_symlink():
        why = _differs(dest, man["files"]) if dest.is_dir() else "it is not a folder"
        if why:
            raise RunArchiveError(f"{dest} exists and is not the packed run {folder} ({why}); it was left as "
                                  f"it is: move it aside to restore the packed run")
        probes = archive.unpack(folder / PROBES_ARCHIVE, store)  # the store may be new: merge (idempotent)
        return {"run_dir": str(dest), "restored": False, "probes": probes["probes"]}
    sweep_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".restore-{folder.name}-", dir=sweep_dir) as tmp:
        staged = Path(tmp) / folder.name
        try:
            _extract(folder / FILES_ARCHIVE, staged, man["files"])
        except (tarfile.TarError, lzma.LZMAError, EOFError) as e:
            raise RunArchiveError(f"{folder / FILES_ARCHIVE} is damaged ({e}); nothing was restored") from None
        why = _differs(staged, man["files"])
        if why:
            raise RunArchiveError(f"{folder / FILES_ARCHIVE} does not match its {MANIFEST} (unpacked, {why}); "
                                  f"nothing was restored")
        ckpt = staged / CHECKPOINTS_DIR / f"checkpoint-{man['final_step']}"
        fp = model_fingerprint(str(ckpt))
        if fp != man["model_fingerprint"]:
            raise RunArchiveError(f"the restored checkpoint's model fingerprint {fp} is not the packed one "
                                  f"({man['model_fingerprint']}); nothing was restored")
        # The probes before the run dir: a restored run (training_done: never trained again) always
        # has its probes in the store. A conflict in the store leaves no run dir.
        probes = archive.unpack(folder / PROBES_ARCHIVE, store)
        if dest.exists():
            raise RunArchiveError(f"{dest} appeared while {folder} was restored; it was left as it is")
        os.rename(staged, dest)
    return {"run_dir": str(dest), "restored": True, "final_step": man["final_step"],
            "model_fingerprint": man["model_fingerprint"], "probes": probes["probes"]}


def main(argv: Sequence[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m boundlab.probe.run_archive",
                                 description="Carry finished training runs between machines (see its docstring).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="a finished run dir and its probes into an archive folder")
    p.add_argument("run_dir")
    p.add_argument("--out", required=True, help="the archive folder (created; an identical one is kept)")
    p.add_argument("--store", required=True, help="the store the run probed into")
    r = sub.add_parser("restore", help="archive folders back into run dirs SWEEP_DIR/<folder name>")
    r.add_argument("archives", nargs="+")
    r.add_argument("--sweep-dir", required=True)
    r.add_argument("--store", required=True, help="the store the probes are merged into")
    args = ap.parse_args(argv)
    if args.cmd == "pack":
        try:
            report: Any = pack(args.run_dir, args.out, args.store)
        except UserError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(json.dumps(report, indent=1))
        return 0
    report, failed = {}, 0
    for folder in args.archives:  # each on its own: one refused run dir does not hold back the others
        try:
            report[folder] = restore_one(folder, args.sweep_dir, args.store)
        except UserError as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
    print(json.dumps(report, indent=1))
    return 2 if failed else 0


__all__ = ["FILES_ARCHIVE", "MANIFEST", "PROBES_ARCHIVE", "RunArchiveError", "carried_files", "main", "pack",
           "restore_one"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
