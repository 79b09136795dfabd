"""Memory flat in n: peak RSS of the probe process and the store's bytes per sample, by n.

Each (keep_text, n) is one fresh `python probe.py model=toy task=toy_arith probe=toy` process
(logger=none, one torch thread) writing a fresh store; its peak RSS (`peak_rss_mib`) is the
process's own ru_maxrss, read with os.wait4 (the process and any children it waited for; the toy
verifier starts none). After the probe, the store is checkpointed and VACUUMed, and its size is
split into the samples' text (SUM(LENGTH(CAST(text AS BLOB)))) and the rest;
`samples_table_bytes_per_sample` is the samples table's pages as the dbstat virtual table counts
them (null where SQLite is built without it). A compact store's dropped texts count as 0 bytes of
text and `hash_bytes_per_sample` of hash.

    python bench/bench_memory.py --n 256 1024 2048 --problems 200
    python bench/bench_memory.py --n 256 --problems 200 --keep-text all compact

Prints one JSON object, "RSS and bytes per sample by n": one row per (keep_text, n).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"sampled (\d+) new completions in ([\d.]+) s \(([\d.]+) samples/s\)")


def run_probe(n: int, problems: int, keep_text: str, tmp: Path, extra: list[str]) -> dict:
    store = tmp / f"store-{keep_text}-{n}.sqlite"
    cmd = [sys.executable, str(ROOT / "probe.py"), "model=toy", "task=toy_arith", "probe=toy",
           f"probe.n={n}", f"probe.limit={problems}", f"probe.keep_text={keep_text}",
           "logger=none", "sampler.torch_threads=1", f"store.path={store}",
           f"hydra.run.dir={tmp / f'run-{keep_text}-{n}'}", *extra]
    env = dict(os.environ, TQDM_DISABLE="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"probe.py failed (exit {code}) for keep_text={keep_text} n={n}:\n{out[-3000:]}")
    m = SUMMARY.search(out)
    if m is None:
        sys.exit(f"no 'sampled ... samples/s' line in probe.py's output:\n{out[-3000:]}")
    row = {"keep_text": keep_text, "n": n, "problems": problems,
           # ru_maxrss is in KiB on Linux.
           "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
           "new_samples": int(m.group(1)), "sampling_s": float(m.group(2)),
           "samples_per_s": float(m.group(3)), "process_wall_s": round(wall, 1)}
    row.update(store_stats(store))
    return row


def store_stats(path: Path) -> dict:
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cols = {r[1] for r in db.execute("PRAGMA table_info(samples)")}
        samples, text_bytes = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(text AS BLOB))), 0) FROM samples").fetchone()
        # A compact store's dropped text is '' with text_hash set.
        hash_bytes, dropped = db.execute(
            "SELECT COALESCE(SUM(LENGTH(text_hash)), 0), COUNT(text_hash) FROM samples"
        ).fetchone() if "text_hash" in cols else (0, 0)
        try:
            table = db.execute("SELECT SUM(pgsize) FROM dbstat WHERE name='samples'").fetchone()[0]
        except sqlite3.OperationalError:  # SQLite built without SQLITE_ENABLE_DBSTAT_VTAB
            table = None
    finally:
        db.close()
    size = path.stat().st_size
    return {"samples": samples, "store_bytes": size,
            "bytes_per_sample": round(size / samples, 1),
            "text_bytes_per_sample": round(text_bytes / samples, 1),
            "text_share": round(text_bytes / size, 4),
            "texts_kept": samples - dropped,
            "hash_bytes_per_sample": round(hash_bytes / samples, 1),
            "samples_table_bytes_per_sample": None if table is None else round(table / samples, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[256, 1024, 2048])
    ap.add_argument("--problems", type=int, default=200)
    ap.add_argument("--keep-text", nargs="+", default=["all"], choices=["all", "compact"])
    ap.add_argument("--keep", default=None, help="keep the stores in this folder")
    ap.add_argument("extra", nargs="*", help="more probe.py overrides")
    args = ap.parse_args()
    result = {"benchmark": "memory", "what": "RSS and bytes per sample by n",
              "world": "model=toy task=toy_arith probe=toy logger=none, one torch thread",
              "rss_target_mib": 2048, "runs": []}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(args.keep) if args.keep else Path(d)
        tmp.mkdir(parents=True, exist_ok=True)
        for mode in args.keep_text:
            for n in args.n:
                row = run_probe(n, args.problems, mode, tmp, args.extra)
                result["runs"].append(row)
                print(json.dumps(row), flush=True, file=sys.stderr)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
