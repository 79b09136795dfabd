"""The default run, timed (issue 36): `python train.py logger=none` from an empty store and an empty
cache dir (BOUNDLAB_STORE and BOUNDLAB_CACHE point into a fresh temporary folder), nothing else
changed: the defaults pin the results, so this script never overrides them.

Figures, per repetition:
- `default_run_seconds`: the train.py process's wall time, start to exit (imports, base and null
  probes, training, every checkpoint's probe);
- `default_run_checkpoints`: the probes in the run's probes.jsonl (the base plus each checkpoint
  probed), so "base + 4 checkpoints" reads 5;
- `default_run_inline_probe_seconds`: train.py's own "inline probing took N s" line, when present.

The issue's goal is base + >= 4 checkpoints within 10 minutes on 2 idle cores. The machine's load is
recorded by the harness before and after each repetition; the numbers are reported with it.

    python bench/bench_default_run.py --reps 1 --write    # docs/bench/default_run.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
INLINE = re.compile(r"inline probing took (\d+) s of this process's (\d+) s wall")


def count_probes(run_dir: Path) -> int:
    """Lines in the run's probes.jsonl: one per finished probe (the base, then each checkpoint)."""
    f = run_dir / "probes.jsonl"
    if not f.is_file():
        return 0
    return sum(1 for line in f.read_text().splitlines() if line.strip())


def probed_steps(run_dir: Path) -> list:
    f = run_dir / "probes.jsonl"
    if not f.is_file():
        return []
    return [json.loads(x).get("step") for x in f.read_text().splitlines() if x.strip()]


def one_run(timeout_s: float, extra: list[str], keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_default_run_") as d:
        work = Path(keep) if keep else Path(d)
        work.mkdir(parents=True, exist_ok=True)
        run_dir = work / "run"
        env = {**os.environ, "BOUNDLAB_STORE": str(work / "store.sqlite"),
               "BOUNDLAB_CACHE": str(work / "cache"), "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
        cmd = [sys.executable, str(ROOT / "train.py"), "logger=none", f"hydra.run.dir={run_dir}", *extra]
        t0 = time.perf_counter()
        with open(work / "train.log", "w") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                rc = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                rc = None
        secs = time.perf_counter() - t0
        text = (work / "train.log").read_text()
        if rc not in (0, None):
            raise SystemExit(f"train.py exited with {rc}:\n{text[-3000:]}")
        out = {"seconds": secs, "default_run_seconds": secs, "default_run_checkpoints": count_probes(run_dir),
               "finished": 1.0 if rc == 0 else 0.0}
        m = INLINE.search(text)
        if m:
            out["default_run_inline_probe_seconds"] = float(m[1])
        print(json.dumps({"probed_steps": probed_steps(run_dir), **out}), file=sys.stderr, flush=True)
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=3600, help="kill a run after this many seconds "
                    "(then finished = 0 and the checkpoints are those probed by then)")
    ap.add_argument("--write", action="store_true", help="write docs/bench/default_run.json")
    ap.add_argument("--keep", default=None, help="keep the (last) run's folder here")
    ap.add_argument("extra", nargs="*", help="train.py overrides (none for the default run)")
    a = ap.parse_args(argv)
    res = harness.run({"default": lambda: one_run(a.timeout, a.extra, a.keep)}, reps=a.reps,
                      log=lambda s: print(s, file=sys.stderr, flush=True))
    res["figures"] = {k.split("/", 1)[1] if k.startswith("default/default_run") else k: v
                      for k, v in res["figures"].items()}
    if a.write:
        cmd = "python bench/bench_default_run.py " + " ".join(argv if argv is not None else sys.argv[1:])
        path = harness.write("default_run", res, command=cmd.strip(), overrides=a.extra,
                             train_command="python train.py logger=none (fresh BOUNDLAB_STORE, BOUNDLAB_CACHE)")
        print(path, file=sys.stderr)
    print(json.dumps(res["figures"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
