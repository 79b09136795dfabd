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
way (staged, renamed) and refuses an unfinished run, a final checkpoint not probed yet, a run dir
whose trainer or prober is alive (its locks), and an existing archive that differs from the run;
packing the same run again changes nothing.

An unfinished run (`pack --allow-unfinished`, for a run stopped when its machine goes away) is
packed to be resumed: the whole run dir but the checkpoints and the locks (the W&B folders and
segment records too, so the resume re-logs exactly what a resume on the first machine would), its
latest complete checkpoint whole (optimizer, scheduler, RNG: what `train.py resume=` continues
from), the model files of any checkpoint not probed yet, its finished probes and the samples of a
probe stopped midway (the store's probes of those checkpoints' fingerprints; an unfinished base
probe is not carried: it is shared by every arm, and sampled again). The manifest says
`"finished": false` and counts each probe's samples. Restored, it is a run dir without
`training_done`, which `train.py resume=DIR` continues. Packing it again later replaces the archive
only with a continuation of it (the same config byte for byte, no earlier step, no probe with fewer
samples), finished or not; restoring it where the same run is already as far along (or finished)
keeps the local run dir and merges the probes. A finished packing is never replaced.
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
                             HYDRA_CONFIG, HYDRA_DIR, PROBE_LOCK, PROBES_FILE, RESUMES_FILE, RUN_INFO, TRAIN_LOCK,
                             TRAIN_LOG)
from boundlab.rundir.checkpoints import checkpoints, latest_complete, step_of
from boundlab.rundir.lock import held_by
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


def carried_files(run_dir: Path, unfinished: bool = False) -> tuple[list[str], int]:
    """The run-dir paths (relative, sorted) an archive carries, and the final (for an unfinished
    run: the latest complete) checkpoint's step. An unfinished run carries its whole run dir but
    the checkpoints and the locks, and its latest complete checkpoint whole, trainer state included
    (what `train.py resume=` continues from); `_manifest` adds the unprobed checkpoints' models."""
    if unfinished:
        if (run_dir / DONE_MARKER).is_file():
            raise RunArchiveError(f"{run_dir} has finished training: it is packed as a finished run")
        if not (run_dir / HYDRA_CONFIG).is_file():
            raise RunArchiveError(f"{run_dir} is not a run dir ({HYDRA_CONFIG} missing)")
    else:
        missing = [f for f in NEEDED if not (run_dir / f).is_file()]
        if DONE_MARKER in missing:
            raise RunArchiveError(f"{run_dir} has not finished training (no {DONE_MARKER}): only a finished "
                                  f"run is packed (--allow-unfinished packs it to be resumed elsewhere); "
                                  f"or resume it first (train.py resume={run_dir})")
        if missing:
            raise RunArchiveError(f"{run_dir} is not a complete run dir: {', '.join(missing)} missing")
    final = latest_complete(run_dir / CHECKPOINTS_DIR)
    if final is None:
        raise RunArchiveError(f"{run_dir} has no complete checkpoint to carry"
                              + (" yet: nothing to resume from" if unfinished else ""))
    if unfinished:
        files = [str(f.relative_to(run_dir)) for f in sorted(run_dir.rglob("*"))
                 if f.is_file() and not f.is_symlink() and f.relative_to(run_dir).parts[0] != CHECKPOINTS_DIR
                 and f.name not in (TRAIN_LOCK, PROBE_LOCK)]
    else:
        files = list(NEEDED) + [f for f in OPTIONAL if (run_dir / f).is_file()]
    for f in sorted(final.rglob("*")):
        if f.is_file() and not f.is_symlink() and (unfinished or not _trainer_state_file(f.name)):
            files.append(str(f.relative_to(run_dir)))
    return sorted(files), step_of(final)


def _model_files(ckpt: Path, run_dir: Path) -> list[str]:
    return [str(f.relative_to(run_dir)) for f in sorted(ckpt.rglob("*"))
            if f.is_file() and not f.is_symlink() and not _trainer_state_file(f.name)]


def _probe_rows(run_dir: Path, final_step: int, unfinished: bool = False) -> list[dict[str, Any]]:
    if unfinished and not (run_dir / PROBES_FILE).is_file():
        return []
    rows = read_jsonl(run_dir / PROBES_FILE, repair=False)
    probes = [{"kind": r.get("kind"), "step": int(r["step"]), "key": r["probe_key"]}
              for r in rows if r.get("probe_key")]
    if unfinished:
        return probes
    if not any(p["kind"] == "base" for p in probes):
        raise RunArchiveError(f"{run_dir / PROBES_FILE} has no base probe")
    if not any(p["kind"] == "checkpoint" and p["step"] == final_step for p in probes):
        raise RunArchiveError(f"{run_dir}: its final checkpoint (step {final_step}) is not probed yet "
                              f"(no row in {PROBES_FILE}); probe it first (probe.py watch={run_dir})")
    return probes


def _store_facts(store: Path, keys: list[str], in_flight_fps: dict[str, int]) -> tuple[dict, dict, list]:
    """From `store`, read-only: each key's model fingerprint (None when absent) and sample count,
    and the probes of the models `in_flight_fps` names (fingerprint -> checkpoint step), as rows."""
    s = Store(store, writable=False)
    try:
        fps = {k: (info["model_fp"] if (info := s.probe_info(k)) else None) for k in keys}
        in_flight = [{"kind": "in_flight", "step": in_flight_fps[p["model_fp"]], "key": p["key"]}
                     for p in s.list_probes() if p["model_fp"] in in_flight_fps and p["key"] not in keys]
        counts = {k: s.db.execute("SELECT COUNT(*) FROM samples WHERE key=?", (k,)).fetchone()[0]
                  for k in keys + [p["key"] for p in in_flight]}
    finally:
        s.close()
    return fps, counts, in_flight


def _manifest(run_dir: Path, store: Path, unfinished: bool = False) -> dict[str, Any]:
    files, final = carried_files(run_dir, unfinished)
    probes = _probe_rows(run_dir, final, unfinished)
    ckpt = run_dir / CHECKPOINTS_DIR / f"checkpoint-{final}"
    fp = model_fingerprint(str(ckpt))
    probed = {p["step"] for p in probes if p["kind"] == "checkpoint"}
    in_flight_fps: dict[str, int] = {}
    if unfinished:  # checkpoints not probed yet go along (the resume probes them), and so do the
        # samples a probe of them had stored when it was stopped (found by model fingerprint)
        for step, path in checkpoints(run_dir / CHECKPOINTS_DIR):
            if step not in probed:
                in_flight_fps[fp if step == final else model_fingerprint(str(path))] = step
                files = sorted(set(files) | set(_model_files(path, run_dir)))
    keys = [p["key"] for p in probes]
    fps, counts, in_flight = _store_facts(store, keys, in_flight_fps)
    if missing := [k for k in keys if fps[k] is None]:
        raise RunArchiveError(f"probe {missing[0]} of {run_dir / PROBES_FILE} is not in the store {store}: "
                              f"pass the store the run probed into (--store)")
    if final in probed:
        final_key = [p["key"] for p in probes if p["kind"] == "checkpoint" and p["step"] == final][-1]
        if fps[final_key] != fp:
            raise RunArchiveError(f"{ckpt} has model fingerprint {fp}, but its probe {final_key} was made "
                                  f"with {fps[final_key]}: the checkpoint changed after it was probed; not packed")
    return {"format": FORMAT, "run": run_dir.name, "finished": not unfinished, "final_step": final,
            "model_fingerprint": fp, "probes": probes + in_flight, "samples": counts,
            "files": {f: {"bytes": (run_dir / f).stat().st_size, "sha256": file_digest(run_dir / f)["sha256"]}
                      for f in files}}


def _continues(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why the packing `new` is not a continuation of the unfinished packing `old` (None if it is):
    the same run (its config, byte for byte), no earlier step, every old probe with no fewer samples."""
    cfg = str(HYDRA_CONFIG)
    if old["files"].get(cfg) != new["files"].get(cfg):
        return f"its {cfg} differs: another run"
    if new["final_step"] < old["final_step"]:
        return f"it is at step {new['final_step']}, the archive at {old['final_step']}"
    lost = [k for k, n in old.get("samples", {}).items() if new["samples"].get(k, 0) < n]
    if lost:
        return f"the run's store has fewer samples of probe {lost[0]} than the archive"
    return None


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


def pack(run_dir: str | Path, out: str | Path, store: str | Path, allow_unfinished: bool = False) -> dict[str, Any]:
    """Write the run `run_dir` (and its probes in `store`) to the archive folder `out`: a finished
    run, or with `allow_unfinished` one stopped midway, packed to be resumed (see the docstring)."""
    run_dir, out, store = Path(run_dir).expanduser(), Path(out).expanduser(), Path(store).expanduser()
    if not run_dir.is_dir():
        raise RunArchiveError(f"run dir {run_dir} does not exist")
    if not store.is_file():
        raise StoreError(f"store {store} does not exist")
    for lock_name in (TRAIN_LOCK, PROBE_LOCK):
        if holder := held_by(run_dir, lock_name):
            raise RunArchiveError(f"{run_dir} is in use ({lock_name} is held by {holder}); stop it first, "
                                  f"then pack (a resume continues from the packed state)")
    unfinished = allow_unfinished and not (run_dir / DONE_MARKER).is_file()
    man = _manifest(run_dir, store, unfinished)
    replaced = None
    if out.exists():
        old = _read_manifest(out)
        # (an archive written before sample counts were recorded is compared without them)
        if (old["files"], old["probes"], old.get("samples", man["samples"])) == (man["files"], man["probes"],
                                                                                  man["samples"]):
            return {"archive": str(out), "packed_already": True, **_sizes(out)}
        if old.get("finished", True):
            why = _differs(run_dir, old["files"]) or "the run has other files or probes"
            raise RunArchiveError(f"{out} already holds another packing ({why}); it was left as it is: "
                                  f"move it aside to pack {run_dir}")
        why = _continues(old, man)
        if why:
            raise RunArchiveError(f"{out} holds an unfinished packing that {run_dir} does not continue ({why}); "
                                  f"it was left as it is: move it aside to pack {run_dir}")
        replaced = old["final_step"]
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
        if replaced is not None:  # the older unfinished packing goes into the staging folder (deleted)
            os.rename(out, Path(tmp) / "replaced")
        os.rename(staged, out)
    return {"archive": str(out), "packed_already": False, "finished": man["finished"],
            "step": man["final_step"], "replaced_step": replaced, **_sizes(out)}


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


def _kept_local(dest: Path, man: dict[str, Any]) -> str | None:
    """Why the existing run dir `dest` is kept instead of the unfinished packing `man` (None: refuse):
    the same run (its config, byte for byte), finished or at least as far along."""
    cfg = dest / HYDRA_CONFIG
    want = man["files"].get(str(HYDRA_CONFIG))
    if not dest.is_dir() or not cfg.is_file() or want is None or file_digest(cfg)["sha256"] != want["sha256"]:
        return None
    if (dest / DONE_MARKER).is_file():
        return "it has finished training"
    latest = latest_complete(dest / CHECKPOINTS_DIR)
    if latest is not None and step_of(latest) >= man["final_step"]:
        return f"it is at step {step_of(latest)}, the packing at {man['final_step']}"
    return None


def restore_one(folder: str | Path, sweep_dir: str | Path, store: str | Path) -> dict[str, Any]:
    """Restore the archive `folder` as the run dir `sweep_dir/<folder's name>` (see the docstring)."""
    folder, sweep_dir, store = Path(folder).expanduser(), Path(sweep_dir).expanduser(), Path(store).expanduser()
    man = _read_manifest(folder)
    finished = man.get("finished", True)
    dest = sweep_dir / folder.name
    if dest.exists() or dest.is_symlink():
        kept = None if finished else _kept_local(dest, man)
        why = None if kept else (_differs(dest, man["files"]) if dest.is_dir() else "it is not a folder")
        if why:
            raise RunArchiveError(f"{dest} exists and is not the packed run {folder} ({why}); it was left as "
                                  f"it is: move it aside to restore the packed run")
        probes = archive.unpack(folder / PROBES_ARCHIVE, store)  # the store may be new: merge (idempotent)
        return {"run_dir": str(dest), "restored": False, "kept": kept or "it is the packed run",
                "probes": probes["probes"]}
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
    return {"run_dir": str(dest), "restored": True, "finished": finished, "final_step": man["final_step"],
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
    p.add_argument("--allow-unfinished", action="store_true",
                   help="pack a run stopped midway too, to be resumed elsewhere (train.py resume=)")
    r = sub.add_parser("restore", help="archive folders back into run dirs SWEEP_DIR/<folder name>")
    r.add_argument("archives", nargs="+")
    r.add_argument("--sweep-dir", required=True)
    r.add_argument("--store", required=True, help="the store the probes are merged into")
    args = ap.parse_args(argv)
    if args.cmd == "pack":
        try:
            report: Any = pack(args.run_dir, args.out, args.store, args.allow_unfinished)
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
