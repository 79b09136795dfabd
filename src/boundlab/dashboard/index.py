"""The dashboard's index: the run dirs found under the paths given on the command line, each with a
small integer id, its probes (probes.jsonl, re-read when its mtime or size changes), its Hydra
overrides and its probe store.

Security rests here: a URL names a run, a probe and a problem by their integer position in lists
built at scan time (`Index.run`, `RunEntry.probe`, `RunEntry.problem`). Nothing a client sends is
ever joined into a path, so no id can reach a file outside the scanned run dirs; an unknown id is a
`KeyError` (404).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from boundlab.boundary.rows import normalize, ordered
from boundlab.dashboard.counts_cache import CountsCache
from boundlab.probe.store import ProblemCounts, Store
from boundlab.rundir import HYDRA_CONFIG, HYDRA_DIR, PROBES_FILE, RUN_INFO
from boundlab.rundir.io import RunDirError, read_json, read_jsonl

# Folders never searched for run dirs (a W&B run, checkpoints: thousands of files, no probes).
_SKIP = {"wandb", "checkpoints", "__pycache__", ".git", "node_modules"}
# How deep below a given path run dirs are searched for (a sweep of sweeps is 2-3 deep).
MAX_DEPTH = 6
# A scan for new run dirs at most this often (seconds); probes.jsonl of known runs is stat'ed on
# every request, which is cheap.
RESCAN_EVERY = 2.0


def is_run_dir(path: Path) -> bool:
    """The same rule as report.py's: probes.jsonl, or a Hydra config beside run_info.json."""
    return (path / PROBES_FILE).is_file() or ((path / HYDRA_CONFIG).is_file()
                                              and (path / RUN_INFO).is_file())


def find_run_dirs(root: Path, depth: int = 0) -> list[Path]:
    """Run dirs at or below `root`, sorted; symlinks are not followed (they could leave the tree)."""
    if is_run_dir(root):
        return [root]
    if depth >= MAX_DEPTH or not root.is_dir():
        return []
    found: list[Path] = []
    try:
        subs = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []
    for sub in subs:
        if sub.name not in _SKIP:
            found += find_run_dirs(sub, depth + 1)
    return found


def read_overrides(run: Path) -> dict[str, str]:
    """{key: value} of `.hydra/overrides.yaml` (`key=value` lines; `+key=` and `~key` kept as is)."""
    f = run / HYDRA_DIR / "overrides.yaml"
    if not f.is_file():
        return {}
    try:
        items = yaml.safe_load(f.read_text(encoding="utf-8")) or []
    except yaml.YAMLError:
        return {}
    out: dict[str, str] = {}
    for it in items if isinstance(items, list) else []:
        k, sep, v = str(it).partition("=")
        if sep:
            out[k.lstrip("+~")] = v
    return out


def store_path_of(run: Path, override: str | None) -> Path | None:
    """The run's probe store: `--store` when given, else the run's own `store.path` resolved here
    (it reads `BOUNDLAB_STORE` like report.py does)."""
    if override:
        return Path(override).expanduser()
    if (run / HYDRA_CONFIG).is_file():
        from omegaconf import OmegaConf

        try:
            p = OmegaConf.select(OmegaConf.load(run / HYDRA_CONFIG), "store.path")
        except Exception:  # noqa: BLE001 - an interpolation that cannot resolve here
            p = None
        if p:
            return Path(str(p)).expanduser()
    env = os.environ.get("BOUNDLAB_STORE")
    return Path(env).expanduser() if env else None


@dataclass
class RunEntry:
    id: int
    path: Path
    label: str
    sweep: str | None
    overrides: dict[str, str]
    info: dict[str, Any]
    store_path: Path | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    stamp: tuple[int, int] = (0, 0)
    # Filled lazily from the store: problem ids in map order and (probe key -> counts).
    _problems: list[str] | None = None

    def refresh(self) -> bool:
        """Re-read probes.jsonl when it changed on disk; True when it did."""
        f = self.path / PROBES_FILE
        try:
            st = f.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = (0, 0)
        if stamp == self.stamp:
            return False
        try:
            # repair=False: the trainer may be appending right now (see rundir.io).
            rows = read_jsonl(f, repair=False)
        except RunDirError as e:
            # Keep the last good rows and say why once per change; the next change is read again.
            print(f"[boundlab] dashboard: {e}", file=sys.stderr, flush=True)
            self.stamp = stamp
            return False
        self.rows = ordered([normalize(r) for r in rows if "kind" in r and "step" in r])
        self.stamp = stamp
        self._problems = None
        return True

    def probe(self, i: int) -> dict[str, Any]:
        """The i-th probe row (base, null, then checkpoints by step); KeyError when there is none."""
        if not 0 <= i < len(self.rows):
            raise KeyError(f"run {self.id} has no probe {i}")
        return self.rows[i]

    @property
    def base(self) -> dict[str, Any] | None:
        return next((r for r in self.rows if r["kind"] == "base"), None)


class Index:
    def __init__(self, paths: list[str | Path], store: str | None = None):
        self.roots = [Path(p).expanduser().resolve() for p in paths]
        for p in self.roots:
            if not p.exists():
                raise FileNotFoundError(f"dashboard: no such path: {p}")
        self.store_override = store
        self.runs: list[RunEntry] = []
        self._by_path: dict[Path, RunEntry] = {}
        self._stores: dict[Path, Store] = {}
        self._counts: dict[tuple[Path, str, int], dict[str, ProblemCounts]] = {}
        # The counts index on disk, one per store (boundlab.dashboard.counts_cache): a fresh process
        # reads a finished store's counts from it instead of counting every sample again.
        self._files: dict[Path, CountsCache] = {}
        # Derived values of finished probes (curve bands), keyed by what they depend on.
        self.cache: dict[tuple, Any] = {}
        self._lock = threading.RLock()
        self._scanned = 0.0
        self.scan()
        if not self.runs:
            raise FileNotFoundError("dashboard: no run dir (probes.jsonl, or .hydra/config.yaml with "
                                    "run_info.json) under " + ", ".join(map(str, self.roots)))

    # -- runs ----------------------------------------------------------------------------------
    def scan(self) -> None:
        with self._lock:
            for root in self.roots:
                for d in find_run_dirs(root):
                    if d not in self._by_path:
                        self._add(d, root)
            self._scanned = time.monotonic()

    def _add(self, d: Path, root: Path) -> None:
        sweep = None
        parent = d.parent
        # A sweep is a folder of run dirs inside a given path (a run dir given by itself is never
        # a member of one, whatever lies beside it).
        if d != root and parent.is_relative_to(root) and ((parent / "multirun.yaml").is_file()
                            or sum(1 for x in self._by_path if x.parent == parent) > 0
                            or len([p for p in parent.iterdir() if p.is_dir() and is_run_dir(p)]) > 1):
            sweep = str(parent.relative_to(root.parent))
        try:
            info = read_json(d / RUN_INFO, {}) or {}
        except RunDirError:
            info = {}
        rel = d.relative_to(root.parent) if d.is_relative_to(root.parent) else d
        e = RunEntry(len(self.runs), d, str(rel), sweep, read_overrides(d), info,
                     store_path_of(d, self.store_override))
        e.refresh()
        self.runs.append(e)
        self._by_path[d] = e

    def refresh(self) -> str:
        """Re-read changed probes.jsonl files (and look for new run dirs every RESCAN_EVERY s);
        returns a version string that changes whenever anything shown changed."""
        with self._lock:
            if time.monotonic() - self._scanned > RESCAN_EVERY:
                self.scan()
            for r in self.runs:
                r.refresh()
            return "-".join(f"{r.stamp[0]}.{r.stamp[1]}" for r in self.runs)

    def run(self, rid: int) -> RunEntry:
        if not 0 <= rid < len(self.runs):
            raise KeyError(f"no run {rid}")
        return self.runs[rid]

    # -- the store -----------------------------------------------------------------------------
    def store(self, run: RunEntry) -> Store | None:
        p = run.store_path
        if p is None or not p.is_file():
            return None
        with self._lock:
            if p not in self._stores:
                self._stores[p] = Store(p, writable=False)
            return self._stores[p]

    def counts(self, run: RunEntry, row: dict[str, Any],
               store: Store | None = None) -> dict[str, ProblemCounts] | None:
        """{problem id: (n, c)} of a probe row, over its first `row["n"]` samples per problem (the
        store may hold more: n is not part of a probe's key); cached, a finished probe never
        changes, and kept in the store's counts index on disk for the next process. None without a store or when the probe is not in it. `store`: another connection
        to the run's store (the prewarm thread's), so the query does not hold the index's lock."""
        st = self.store(run)
        key = row.get("probe_key")
        if st is None or not key:
            return None
        n = int(row["n"])
        ck = (st.path, key, n)
        with self._lock:
            if ck in self._counts:
                return self._counts[ck] or None
        fc = self.counts_file(st)
        got = fc.get(key, n)
        if got is None:
            stamp = fc.stamp()  # before the query: counts of a store changed meanwhile are not kept
            if store is None:
                with self._lock:
                    got = self._query_counts(st, key, n)
            else:
                got = self._query_counts(store, key, n)
            fc.put(key, n, got, stamp)
        with self._lock:
            self._counts[ck] = {pc.problem_id: pc for pc in got}
            return self._counts[ck] or None

    def close(self) -> None:
        """Write the counts index and close every store (a read-only store then removes the -wal/-shm
        its open made: boundlab.probe.store_ro)."""
        self.flush()
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for st in stores:
            st.close()

    def counts_file(self, st: Store) -> CountsCache:
        with self._lock:
            if st.path not in self._files:
                self._files[st.path] = CountsCache(st.path)
            return self._files[st.path]

    def flush(self) -> None:
        """Write the counts read so far to the counts index (each file is rewritten at most every
        few seconds while counts arrive; a whole map read is the moment to keep them)."""
        for fc in list(self._files.values()):
            fc.flush()

    @staticmethod
    def _query_counts(st: Store, key: str, n: int) -> list[ProblemCounts]:
        got = st.counts(key)
        if any(pc.n > n for pc in got):
            got = st.counts(key, n_max=n)  # the window query only where the store holds more
        return got

    def prewarm(self) -> None:
        """Read every probe's counts once (the problem map's cold cost: 5-11 s for 50 probes of
        500 x 1024 samples, unless the counts index on disk has them), so the first map a user
        opens is warm, and leave them in the counts index for the next process. Its own
        connections to the stores: requests are served meanwhile, on the index's connection (a
        request for counts not read yet reads them itself)."""
        own: dict[Path, Store] = {}
        try:
            for run in list(self.runs):
                st = self.store(run)
                if st is None:
                    continue
                if st.path not in own:
                    own[st.path] = Store(st.path, writable=False)
                # Newest first: a page's map request reads them oldest first on the index's
                # connection, so the two meet in the middle instead of reading the same probes.
                for row in reversed(list(run.rows)):
                    self.counts(run, row, store=own[st.path])
        except Exception as e:  # noqa: BLE001 - a request for the same map reports it
            print(f"[boundlab] dashboard: reading the counts in the background: {e}", file=sys.stderr,
                  flush=True)
        finally:
            for st in own.values():
                st.close()
            self.flush()

    def problems(self, run: RunEntry) -> list[str]:
        """Problem ids in map order: by the base's rate, highest first, then by id. A URL names a
        problem by its position in this list."""
        with self._lock:
            if run._problems is None:
                base = run.base
                bc = self.counts(run, base) if base else None
                if bc is None:
                    ids: set[str] = set()
                    for r in run.rows:
                        ids |= set(self.counts(run, r) or {})
                    run._problems = sorted(ids)
                else:
                    run._problems = sorted(bc, key=lambda p: (-bc[p].c / max(bc[p].n, 1), p))
            return run._problems

    def problem(self, run: RunEntry, p: int) -> str:
        ids = self.problems(run)
        if not 0 <= p < len(ids):
            raise KeyError(f"run {run.id} has no problem {p}")
        return ids[p]
