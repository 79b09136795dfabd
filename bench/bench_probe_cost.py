"""What detached probing costs training (issue 36, item 1), on bench/harness.py: the same `train.py`
run with probing `off` and `detached`, as >= 3 pairs, interleaved and order-rotated (off detached,
detached off, off detached, ...), so a load spike or a warm-up is shared between the arms.

- `off`: `train.probe_mode=detached` with no watcher (training only marks its checkpoints);
- `detached`: the same, with `python probe.py watch=RUN_DIR` probing the base, the null and each
  checkpoint in another process while training runs;
- `inline` (optional, `--modes off detached inline`): training pausing at each checkpoint to probe it.

Each run gets a fresh store (nothing cached: the watcher and the inline run really probe) and its
own run dir. Training and probing each get `--threads` torch threads (one by default), so on two cores
the watcher has a core of its own.

Figures (min / median / max over the repetitions):
- `detached_overhead`: detached training wall / off training wall - 1, paired per repetition (the
  issue's target: <= 5%);
- `boundary_latency_seconds`: when the last checkpoint's probe ends (the mtime of the run's
  probes.jsonl once the watcher exits) minus when training ended: how long after training the
  boundary is complete;
- per arm: `<arm>/train_wall_seconds`, and for `detached` `watcher_wall_seconds` (start of training to
  the watcher's exit) and `probes` (lines in probes.jsonl).

    python bench/bench_probe_cost.py --quick --write       # docs/bench/probe_cost.json (~10 min here)
    python bench/bench_probe_cost.py --reps 3 --write      # the default run's settings (150 steps, n = 256)

Prints the figures as JSON.
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
# --quick: a short run with a small probe, so three pairs finish in about ten minutes on two busy cores.
QUICK = {"max_steps": 20, "save_steps": 10, "extra": ["probe.n=16", "probe.limit=40"]}


def _train_cmd(run_dir: Path, store: Path, mode: str, a: argparse.Namespace) -> list[str]:
    return [sys.executable, str(ROOT / "train.py"), f"hydra.run.dir={run_dir}", f"store.path={store}",
            "logger=none", f"train.max_steps={a.max_steps}", f"train.save_steps={a.save_steps}",
            f"train.probe_mode={'inline' if mode == 'inline' else 'detached'}",
            f"backend.torch_threads={a.threads}", f"sampler.torch_threads={a.threads}", *a.extra]


def probe_lines(run_dir: Path) -> list[dict]:
    f = run_dir / "probes.jsonl"
    return [json.loads(x) for x in f.read_text().splitlines() if x.strip()] if f.is_file() else []


def run_mode(mode: str, work: Path, a: argparse.Namespace, env: dict[str, str]) -> dict[str, float]:
    """One training run (and, detached, its watcher) in a fresh folder under `work`."""
    d = Path(tempfile.mkdtemp(prefix=f"{mode}_", dir=work))
    run_dir, store = d / "run", d / "store.sqlite"
    log = open(d / "train.log", "w")
    t0 = time.perf_counter()
    train = subprocess.Popen(_train_cmd(run_dir, store, mode, a), cwd=ROOT, env=env, stdout=log,
                             stderr=subprocess.STDOUT)
    watcher = wlog = None
    if mode == "detached":
        # The watcher reads the run's saved config: start it once Hydra has written it (it then
        # waits for run_info.json itself).
        while not (run_dir / ".hydra" / "config.yaml").is_file():
            if train.poll() is not None:
                raise SystemExit(f"train.py ({mode}) exited with {train.returncode}: see {log.name}")
            time.sleep(0.2)
        wlog = open(d / "watch.log", "w")
        watcher = subprocess.Popen([sys.executable, str(ROOT / "probe.py"), f"watch={run_dir}",
                                    "watch_poll_s=2", "logger=none"], cwd=ROOT, env=env, stdout=wlog,
                                   stderr=subprocess.STDOUT)
    rc = train.wait()
    train_s = time.perf_counter() - t0
    train_end_epoch = time.time()
    log.close()
    if rc != 0:
        if watcher is not None:
            watcher.kill()
            watcher.wait()
        raise SystemExit(f"train.py ({mode}) exited with {rc}: see {log.name}")
    out = {"seconds": train_s, "train_wall_seconds": train_s}
    if watcher is not None:
        wrc = watcher.wait()
        out["watcher_wall_seconds"] = time.perf_counter() - t0
        wlog.close()
        if wrc != 0:
            raise SystemExit(f"the watcher exited with {wrc}: see {wlog.name}")
        out["probes"] = float(len(probe_lines(run_dir)))
        out["boundary_latency_seconds"] = (run_dir / "probes.jsonl").stat().st_mtime - train_end_epoch
    m = re.search(r"inline probing took (\d+) s of this process's (\d+) s wall", (d / "train.log").read_text())
    if m:
        out["inline_probe_seconds"] = float(m[1])
    return out


def overhead_figures(runs: list[dict], a: str = "detached", b: str = "off") -> dict[str, dict]:
    """`detached_overhead` per repetition (a's training wall / b's, same repetition, minus 1) and the
    boundary latency, each with its spread; `runs` is harness.run's "runs"."""
    by_rep: dict[int, dict[str, dict]] = {}
    for r in runs:
        by_rep.setdefault(r["rep"], {})[r["arm"]] = r["figures"]
    over = [p[a]["train_wall_seconds"] / p[b]["train_wall_seconds"] - 1 for p in by_rep.values()]
    out = {f"{a}_overhead": harness.spread(over)}
    lat = [p[a]["boundary_latency_seconds"] for p in by_rep.values() if "boundary_latency_seconds" in p[a]]
    if lat:
        out["boundary_latency_seconds"] = harness.spread(lat)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"max_steps {QUICK['max_steps']}, save_steps {QUICK['save_steps']}, "
                         f"{' '.join(QUICK['extra'])} (unless given)")
    ap.add_argument("--reps", type=int, default=3, help="pairs (>= 3 for a spread)")
    ap.add_argument("--max-steps", type=int, default=None, help="default 150 (the default run's)")
    ap.add_argument("--save-steps", type=int, default=None, help="default 75")
    ap.add_argument("--threads", type=int, default=1, help="torch threads for training and for probing")
    ap.add_argument("--modes", nargs="+", default=["off", "detached"], choices=["off", "detached", "inline"])
    ap.add_argument("--write", action="store_true", help="write docs/bench/probe_cost.json")
    ap.add_argument("--keep", help="keep the run dirs here (default: a temporary dir, removed)")
    ap.add_argument("extra", nargs="*", help="more train.py overrides, the same for every mode")
    a = ap.parse_args(argv)
    if "off" not in a.modes or "detached" not in a.modes:
        ap.error("--modes must include off and detached")
    if a.max_steps is None:
        a.max_steps = QUICK["max_steps"] if a.quick else 150
    if a.save_steps is None:
        a.save_steps = QUICK["save_steps"] if a.quick else 75
    if a.quick:
        given = {x.split("=", 1)[0] for x in a.extra}
        a.extra = [x for x in QUICK["extra"] if x.split("=", 1)[0] not in given] + a.extra

    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "TQDM_DISABLE": "1"}
    tmp = None if a.keep else tempfile.TemporaryDirectory(prefix="bench_probe_cost_")
    work = Path(a.keep or tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    arms = {m: (lambda m=m: run_mode(m, work, a, env)) for m in a.modes}
    res = harness.run(arms, reps=a.reps, log=lambda s: print(s, file=sys.stderr, flush=True))
    res["figures"].update(overhead_figures(res["runs"]))
    if "inline" in a.modes:
        res["figures"].update({k.replace("detached", "inline"): v for k, v in
                               overhead_figures(res["runs"], "inline").items() if "overhead" in k})
    if a.write:
        cmd = "python bench/bench_probe_cost.py " + " ".join(argv if argv is not None else sys.argv[1:])
        print(harness.write("probe_cost", res, command=cmd.strip(), max_steps=a.max_steps,
                            save_steps=a.save_steps, threads=a.threads, overrides=a.extra), file=sys.stderr)
    print(json.dumps(res["figures"], indent=1))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
