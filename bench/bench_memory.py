"""Peak memory of a probe, the whole process tree (issue 36, item 6), on bench/harness.py.

Each arm is one fresh `python probe.py` process (logger=none, one torch thread) writing a fresh store.
While it runs, a thread samples the memory of its whole process tree every `--interval` seconds: the
probe process and every descendant, found by walking /proc/<pid>/stat's ppid field (no psutil), so
the math verifier's worker processes count. Per sample it sums
- RSS (/proc/<pid>/statm's resident pages): an upper bound, since forked workers' shared pages are
  counted once per process;
- PSS (/proc/<pid>/smaps_rollup, where readable; a process gone meanwhile adds nothing): shared
  pages split between the processes sharing them, so the sum is the tree's real footprint.
A process born and gone between two samples is missed by the sampler; `ru_maxrss` (os.wait4 on the
probe: the largest of the probe and the descendants it waited for, not their sum) is reported beside.

Figures, per arm, min / median / max over the repetitions:
- `peak_tree_rss_mib_<arm>`, `peak_tree_pss_mib_<arm>`: the largest sum seen;
- `peak_tree_processes_<arm>`: the most processes seen in the tree at once;
- `ru_maxrss_mib_<arm>`: the largest single process's peak;
- `<arm>/bytes_per_sample` etc.: the store's size per stored sample (toy arm).

Arms: `toy_n256` (model=toy task=toy_arith probe=toy, n = 256 or each `--toy-n`, `--problems` problems; the toy
verifier starts no workers) and `math` (model=smollm2_135m task=math500, the math verifier, which
starts worker processes; a short `probe.max_new_tokens` so a rep takes a minute, not ten). The math
arm's model conversion (GGUF -> HF folder, once per cache dir) runs in an unmeasured warm-up probe.
The verifier starts its workers lazily, for the first (gold, answer) pair its in-process fast paths
cannot settle; the quick math probe may never meet one (`peak_tree_processes_math` says so), so
`math_workers` is a small process that builds the math verifier, starts its workers and scores a
radical tuple, an interval union and a matrix through them: the tree a probe has once they run.

    python bench/bench_memory.py --quick --write       # docs/bench/memory.json
    python bench/bench_memory.py --arms toy --toy-n 16 256 1024 2048 --problems 200 --reps 3

Prints the figures as JSON.
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
import threading
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024


# ---- the process tree, from /proc ----

def children_map(proc: Path = Path("/proc")) -> dict[int, list[int]]:
    """ppid -> [pid] for every process in /proc (its stat's 4th field; the comm may hold spaces)."""
    kids: dict[int, list[int]] = {}
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d.name))
    return kids


def tree_pids(root: int, proc: Path = Path("/proc")) -> list[int]:
    """`root` and all its descendants alive now."""
    kids = children_map(proc)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def pss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def tree_memory(root: int) -> dict[str, float]:
    """The tree's summed RSS and PSS (bytes; PSS None where unreadable) and its process count."""
    pids = tree_pids(root)
    # A process that exits between the listing and the read (a zombie's smaps_rollup is empty)
    # holds no memory any more: it adds nothing to either sum.
    pss = [x for x in (pss_bytes(p) for p in pids) if x is not None]
    return {"rss": float(sum(rss_bytes(p) for p in pids)),
            "pss": float(sum(pss)) if pss else None, "processes": len(pids)}


class TreeSampler:
    """Samples tree_memory(pid) every `interval` s in a thread until stop(); keeps the peaks."""

    def __init__(self, pid: int, interval: float = 0.1,
                 measure: Callable[[int], dict] = tree_memory):
        self.pid, self.interval, self.measure = pid, interval, measure
        self.peak_rss = self.peak_pss = 0.0
        self.peak_processes = 0
        self.samples = 0
        self.pss_seen = False  # smaps_rollup readable at least once
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _take(self) -> None:
        m = self.measure(self.pid)
        self.samples += 1
        self.peak_rss = max(self.peak_rss, m["rss"])
        if m["pss"] is not None:
            self.peak_pss = max(self.peak_pss, m["pss"])
            self.pss_seen = True
        self.peak_processes = max(self.peak_processes, m["processes"])

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._take()
            self._stop.wait(self.interval)

    def start(self) -> "TreeSampler":
        self._thread.start()
        return self

    def stop(self) -> dict[str, float]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        out = {"peak_tree_rss_mib": self.peak_rss / MIB, "peak_tree_processes": float(self.peak_processes),
               "tree_samples": float(self.samples)}
        if self.pss_seen:
            out["peak_tree_pss_mib"] = self.peak_pss / MIB
        return out


# The `math_workers` arm: the math verifier's workers started and made to answer. A probe starts them
# lazily, only for a (gold, answer) pair the in-process fast paths cannot settle; the quick math probe
# (short, mostly truncated completions) and the toy world's integers never need one, so this arm
# scores answers that do (a tuple with a radical, an interval union, a matrix).
WORKERS_SCRIPT = """
from boundlab.tasks.base import Problem
from boundlab.verify.math import MathVerifier
v = MathVerifier()
v.pool.start(wait_ready=True)
cases = [("(1, \\\\sqrt{2})", ["\\\\boxed{(1, \\\\sqrt 2)}", "\\\\boxed{(\\\\sqrt{2}, 1)}"]),
         ("(-\\\\infty, 0) \\\\cup (1, \\\\infty)", ["\\\\boxed{(-\\\\infty,0)\\\\cup(1,\\\\infty)}"]),
         ("\\\\begin{pmatrix} 1 & 2 \\\\\\\\ 3 & 4 \\\\end{pmatrix}",
          ["\\\\boxed{\\\\begin{pmatrix}1&2\\\\\\\\3&4\\\\end{pmatrix}}"])]
for i, (gold, comps) in enumerate(cases):
    print(gold, [x.correct for x in v.score(Problem(str(i), "q", gold), comps)], flush=True)
print("math-verify calls", v.calls)
v.close()
"""


def run_script(script: str, tmp: Path, tag: str, interval: float) -> dict[str, float]:
    """A Python script (run in ROOT) measured like a probe: whole-tree peaks, ru_maxrss."""
    d = Path(tempfile.mkdtemp(prefix=f"{tag}_", dir=tmp))
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    t = time.perf_counter()
    with open(d / "out.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
        sampler = TreeSampler(proc.pid, interval).start()
        _, status, usage = os.wait4(proc.pid, 0)
        figs = sampler.stop()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{tag} failed (exit {code}):\n{(d / 'out.log').read_text()[-3000:]}")
    figs.update(ru_maxrss_mib=usage.ru_maxrss / 1024, seconds=time.perf_counter() - t)
    return figs


# ---- one probe process ----

def run_probe(overrides: list[str], tmp: Path, tag: str, env_extra: dict[str, str],
              interval: float) -> tuple[dict[str, float], Path, str]:
    d = Path(tempfile.mkdtemp(prefix=f"{tag}_", dir=tmp))
    store = d / "store.sqlite"
    cmd = [sys.executable, str(ROOT / "probe.py"), *overrides, "logger=none", "sampler.torch_threads=1",
           f"store.path={store}", f"hydra.run.dir={d / 'run'}"]
    env = dict(os.environ, TQDM_DISABLE="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **env_extra)
    t = time.perf_counter()
    with open(d / "probe.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        sampler = TreeSampler(proc.pid, interval).start()
        _, status, usage = os.wait4(proc.pid, 0)
        figs = sampler.stop()
    wall = time.perf_counter() - t
    out = (d / "probe.log").read_text()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"probe.py failed (exit {code}): {' '.join(cmd)}\n{out[-3000:]}")
    # ru_maxrss is in KiB on Linux.
    figs.update(ru_maxrss_mib=usage.ru_maxrss / 1024, seconds=wall)
    return figs, store, out


def store_stats(path: Path) -> dict[str, float]:
    """The store's bytes per sample after a checkpoint and VACUUM, and its text's share."""
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        samples, text_bytes = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(text AS BLOB))), 0) FROM samples").fetchone()
    finally:
        db.close()
    size = path.stat().st_size
    return {"samples": float(samples), "bytes_per_sample": size / max(samples, 1),
            "text_bytes_per_sample": text_bytes / max(samples, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="8 toy problems; math: 2 problems x 1 sample, "
                    "64 new tokens")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--arms", nargs="+", default=["toy", "math", "math_workers"],
                    choices=["toy", "math", "math_workers"])
    ap.add_argument("--toy-n", type=int, nargs="+", default=[256],
                    help="the toy arm's n, one arm toy_n<N> each (flat in n: --toy-n 16 256 1024 2048)")
    ap.add_argument("--keep-text", default="all", choices=["all", "compact"],
                    help="the toy arms' probe.keep_text")
    ap.add_argument("--problems", type=int, default=None, help="toy problems (default 200; --quick 8)")
    ap.add_argument("--math-limit", type=int, default=None, help="math problems (default 8; --quick 2)")
    ap.add_argument("--math-n", type=int, default=None, help="math samples per problem (default 2; --quick 1)")
    ap.add_argument("--math-tokens", type=int, default=64, help="math probe.max_new_tokens")
    ap.add_argument("--interval", type=float, default=0.1, help="seconds between tree samples")
    ap.add_argument("--write", action="store_true", help="write docs/bench/memory.json")
    ap.add_argument("--keep", default=None, help="keep the stores and logs in this folder")
    a = ap.parse_args(argv)
    problems = a.problems or (8 if a.quick else 200)
    math_limit = a.math_limit or (2 if a.quick else 8)
    math_n = a.math_n or (1 if a.quick else 2)
    arms = [x for name in a.arms for x in ([f"toy_n{n}" for n in a.toy_n] if name == "toy" else [name])]
    overrides = {
        **{f"toy_n{n}": ["model=toy", "task=toy_arith", "probe=toy", f"probe.n={n}", f"probe.limit={problems}",
                         f"probe.keep_text={a.keep_text}"] for n in a.toy_n},
        "math": ["model=smollm2_135m", "task=math500", f"probe.n={math_n}", f"probe.limit={math_limit}",
                 f"probe.max_new_tokens={a.math_tokens}"],
    }
    tmpd = tempfile.TemporaryDirectory(prefix="bench_memory_")
    tmp = Path(a.keep) if a.keep else Path(tmpd.name)
    tmp.mkdir(parents=True, exist_ok=True)
    # One model cache for every math rep, filled by an unmeasured warm-up (the GGUF conversion).
    env_extra = {"BOUNDLAB_CACHE": str(tmp / "cache")}
    warmup = {}
    if "math" in a.arms:
        warmup, _, _ = run_probe(overrides["math"], tmp, "warmup", env_extra, a.interval)
        print(json.dumps({"warmup_math": warmup}), file=sys.stderr, flush=True)

    def arm(name: str) -> dict[str, float]:
        if name == "math_workers":
            return run_script(WORKERS_SCRIPT, tmp, name, a.interval)
        figs, store, _ = run_probe(overrides[name], tmp, name, env_extra, a.interval)
        if name.startswith("toy_n"):
            figs.update(store_stats(store))
        return figs

    res = harness.run({n: (lambda n=n: arm(n)) for n in arms}, reps=a.reps,
                      log=lambda s: print(s, file=sys.stderr, flush=True))
    for name in arms:  # the names beside the harness's <arm>/<figure>
        for fig in ("peak_tree_rss_mib", "peak_tree_pss_mib", "peak_tree_processes", "ru_maxrss_mib"):
            if f"{name}/{fig}" in res["figures"]:
                res["figures"][f"{fig}_{name}"] = res["figures"][f"{name}/{fig}"]
    if a.write:
        cmd = "python bench/bench_memory.py " + " ".join(argv if argv is not None else sys.argv[1:])
        print(harness.write("memory", res, command=cmd.strip(), overrides=overrides, warmup_math=warmup,
                            interval_s=a.interval), file=sys.stderr)
    print(json.dumps(res["figures"], indent=1))
    tmpd.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
