"""What probing costs training: the same `train.py` run three ways on one machine, in one run.

- `off`: `train.probe_mode=detached` with no watcher (training only marks its checkpoints);
- `detached`: the same, with `python probe.py watch=RUN_DIR` probing the base and each checkpoint
  in another process while training runs;
- `inline`: the default, training pausing at each checkpoint to probe it.

Each mode gets a fresh store (nothing cached: the watcher and the inline run really probe) and its
own run dir. Training and probing each get one torch thread, so on two cores the watcher has a
core of its own. Reported per mode: the training process's wall time, and for `detached` the
watcher's (it goes on after training ends to probe the last checkpoint). The figure of merit is
`detached_overhead`: detached training wall / off training wall - 1 (the issue's target: <= 5%).

    python bench/bench_probe_cost.py                       # the default run: 150 steps, save every 75
    python bench/bench_probe_cost.py --max-steps 40 --save-steps 20 --modes off detached

Prints one JSON object.
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

ROOT = Path(__file__).resolve().parents[1]


def _train_cmd(run_dir: Path, store: Path, mode: str, args: argparse.Namespace) -> list[str]:
    return [sys.executable, str(ROOT / "train.py"), f"hydra.run.dir={run_dir}", f"store.path={store}",
            f"train.max_steps={args.max_steps}", f"train.save_steps={args.save_steps}",
            f"train.probe_mode={'inline' if mode == 'inline' else 'detached'}",
            f"backend.torch_threads={args.threads}", f"sampler.torch_threads={args.threads}",
            *args.extra]


def _run_mode(mode: str, work: Path, args: argparse.Namespace, env: dict[str, str]) -> dict:
    run_dir, store = work / mode / "run", work / mode / "store.sqlite"
    run_dir.parent.mkdir(parents=True)
    log = open(work / mode / "train.log", "w")
    t0 = time.perf_counter()
    train = subprocess.Popen(_train_cmd(run_dir, store, mode, args), cwd=ROOT, env=env,
                             stdout=log, stderr=subprocess.STDOUT)
    watcher, wlog = None, None
    if mode == "detached":
        # The watcher reads the run's saved config: start it once Hydra has written it (it then
        # waits for run_info.json itself).
        while not (run_dir / ".hydra" / "config.yaml").is_file():
            if train.poll() is not None:
                raise SystemExit(f"train.py ({mode}) exited with {train.returncode}: see {log.name}")
            time.sleep(0.2)
        wlog = open(work / mode / "watch.log", "w")
        watcher = subprocess.Popen([sys.executable, str(ROOT / "probe.py"), f"watch={run_dir}",
                                    "watch_poll_s=2"], cwd=ROOT, env=env, stdout=wlog,
                                   stderr=subprocess.STDOUT)
    rc = train.wait()
    train_s = time.perf_counter() - t0
    log.close()
    if rc != 0:
        raise SystemExit(f"train.py ({mode}) exited with {rc}: see {log.name}")
    out = {"train_wall_s": round(train_s, 1)}
    if watcher is not None:
        wrc = watcher.wait()
        out["watcher_wall_s"] = round(time.perf_counter() - t0, 1)
        wlog.close()
        if wrc != 0:
            raise SystemExit(f"the watcher exited with {wrc}: see {wlog.name}")
        probed = [json.loads(x)["step"] for x in (run_dir / "probes.jsonl").read_text().splitlines() if x]
        out["watcher_probed_steps"] = probed
    text = (work / mode / "train.log").read_text()
    m = re.search(r"inline probing took (\d+) s of this process's (\d+) s wall", text)
    if m:
        out["inline_probe_s"], out["inline_share"] = int(m[1]), round(int(m[1]) / int(m[2]), 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-steps", type=int, default=150)
    ap.add_argument("--save-steps", type=int, default=75)
    ap.add_argument("--threads", type=int, default=1, help="torch threads for training and for probing")
    ap.add_argument("--modes", nargs="+", default=["off", "detached", "inline"],
                    choices=["off", "detached", "inline"])
    ap.add_argument("--keep", help="keep the run dirs here (default: a temporary dir, removed)")
    ap.add_argument("extra", nargs="*", help="more train.py overrides, the same for every mode")
    args = ap.parse_args()

    env = {**os.environ, "WANDB_MODE": os.environ.get("WANDB_MODE", "offline"), "WANDB_SILENT": "true"}
    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="bench_probe_cost_")
    work = Path(args.keep or tmp.name)
    results = {m: _run_mode(m, work, args, env) for m in args.modes}
    out = {"benchmark": "probe_cost", "max_steps": args.max_steps, "save_steps": args.save_steps,
           "threads": args.threads, "cpus": os.cpu_count(), "overrides": args.extra,
           "load_1min_at_end": round(os.getloadavg()[0], 2), **results}
    if "off" in results and "detached" in results:
        out["detached_overhead"] = round(results["detached"]["train_wall_s"] / results["off"]["train_wall_s"] - 1, 4)
    if "off" in results and "inline" in results:
        out["inline_overhead"] = round(results["inline"]["train_wall_s"] / results["off"]["train_wall_s"] - 1, 4)
    print(json.dumps(out, indent=2))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
