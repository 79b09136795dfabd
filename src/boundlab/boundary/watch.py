"""Detached probing: `python probe.py watch=RUN_DIR`.

Training with `train.probe_mode=detached` only marks each checkpoint complete; this worker (another
process, GPU or node sharing the file system) probes the base and then each complete checkpoint in
step order, with the training run's own settings (read from RUN_DIR/.hydra/config.yaml), and logs
into the same W&B run (resumed by the id in RUN_DIR/run_info.json), keyed by the training step.
It stops once training has finished and every checkpoint is probed. Killed and restarted, it
skips what probes.jsonl already holds. With the run's `train.save_total_limit`, it deletes old
checkpoints once it has probed them (training keeps unprobed ones for it).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from boundlab.config import SamplerConfig, migrate_saved, to_dict, with_updates
from boundlab.errors import UserError
from boundlab.rundir import CHECKPOINTS_DIR, DONE_MARKER, HYDRA_CONFIG, RUN_INFO


def watch(run_dir: str | Path, poll_s: float = 10.0, timeout_s: float | None = None,
          sampler_cfg: SamplerConfig | None = None, start_timeout_s: float | None = None) -> list[dict[str, Any]]:
    """Probe RUN_DIR's checkpoints. `sampler_cfg` (the worker's own `sampler` group) replaces the
    training run's: the worker may sample with vLLM on its own GPU while training used HF.
    `start_timeout_s`: how long RUN_DIR may take to become a training run (its .hydra/config.yaml,
    then run_info.json) before the watcher gives up in one line (None = never)."""
    from omegaconf import OmegaConf

    from boundlab.boundary.alarm import best_boundary_path
    from boundlab.boundary.tracker import build_tracker
    from boundlab.models import resolve_model_path
    from boundlab.probe.context import ProbeContext
    from boundlab.probe.spec import ProbeSpec, set_threads
    from boundlab.tracking.segments import take_over
    from boundlab.rundir import checkpoints as ck
    from boundlab.rundir.io import read_json

    run_dir = Path(run_dir)
    cfg_file = run_dir / HYDRA_CONFIG
    limit = _first_limit(start_timeout_s, timeout_s)
    _wait_for_config(run_dir, poll_s, limit, start_timeout_s is not None)
    cfg = migrate_saved(OmegaConf.load(cfg_file), cfg_file)  # run dirs from before verify.math, task.toy2 etc.
    if "train" not in cfg or "algo" not in cfg:  # a probe.py or report.py dir never becomes one
        raise NotATrainingRun(f"watch={run_dir}: {cfg_file} is not a train.py config (a probe.py or "
                              f"report.py output dir?); point watch= at a training run dir")
    if sampler_cfg is not None:
        cfg.sampler = sampler_cfg
    set_threads(cfg.sampler.torch_threads)
    _wait_for_run_info(run_dir, poll_s, limit)
    info = read_json(run_dir / RUN_INFO, {}, "the training run's W&B run id")
    with ProbeContext.from_config(cfg) as ctx:
        logger = ctx.open_logger(with_updates(cfg.logger, run_id=info.get("wandb_run_id"), job_type="probe"),
                                 run_dir, to_dict(cfg))
        plan = take_over(run_dir, role="probe") if logger.mode == "offline" else None
        logger.open_segment("probe")  # the rows it logs count as held when the trainer resumes
        tracker = build_tracker(run_dir, ctx, ProbeSpec.from_config(cfg.probe))
        relogged = tracker.relog_missing(plan.probe_missing) if plan is not None else []
        if relogged:
            print(f"[boundlab] re-logged probes at steps {relogged} that no W&B segment holds", flush=True)
        tracker.probe_base(resolve_model_path(cfg.model))
        start = time.time()
        print(f"[boundlab] watching {run_dir} for checkpoints (every {poll_s:.0f} s)", flush=True)
        while True:
            finished = (run_dir / DONE_MARKER).exists()  # read before listing: no race at the end
            for step, path in ck.checkpoints(run_dir / CHECKPOINTS_DIR):
                if step not in tracker.done_steps():
                    tracker.probe_checkpoint(step, str(path))
            limit = OmegaConf.select(cfg, "train.save_total_limit")
            if limit:
                keep = (best_boundary_path(run_dir, tracker.rows)
                        if OmegaConf.select(cfg, "train.stop_on_shrink") else set())
                ck.rotate(run_dir / CHECKPOINTS_DIR, limit, tracker.done_steps(), keep)
            if finished:
                break
            if timeout_s is not None and time.time() - start > timeout_s:
                print(f"[boundlab] watch timed out after {timeout_s:.0f} s", flush=True)
                break
            time.sleep(poll_s)
        from boundlab.boundary.rows import summary_lines

        print("\n".join(summary_lines(tracker.rows)), flush=True)
        return tracker.rows


class NotATrainingRun(UserError, TimeoutError):
    """The watched folder is not, and did not become, a training run (one line, exit 2)."""


def _first_limit(*limits: float | None) -> float | None:
    given = [t for t in limits if t is not None]
    return min(given) if given else None


def _wait_for_config(run_dir: Path, poll_s: float, timeout_s: float | None, counted: bool) -> None:
    """A watcher may be started before its training job (another SLURM job still queued): wait for
    the run's config to appear, up to `timeout_s`, then give up in one line. Without a limit a
    missing folder is refused at once, as before (nothing says it will ever become a run)."""
    cfg_file = run_dir / HYDRA_CONFIG
    start, said = time.time(), False
    while not cfg_file.is_file():
        waited = time.time() - start
        if timeout_s is None or waited > timeout_s:
            after = f" after {timeout_s:g} s (watch_start_timeout_s)" if counted and timeout_s is not None else ""
            raise NotATrainingRun(f"watch={run_dir}: not a training run dir (no {HYDRA_CONFIG}){after}; "
                                  f"point watch= at the run dir train.py writes")
        if not said:
            print(f"[boundlab] waiting for {cfg_file} (not a training run yet; giving up after "
                  f"{timeout_s:g} s)", flush=True)
            said = True
        time.sleep(min(poll_s, 1.0))


def _wait_for_run_info(run_dir: Path, poll_s: float, timeout_s: float | None) -> None:
    """A watcher started beside `train.py` can get there before training has opened its W&B run.
    Reading run_info.json then would log the probes into a W&B run of their own, silently: wait
    until training has written it (it names the run, or says there is none)."""
    start, said = time.time(), False
    while not (run_dir / RUN_INFO).is_file():
        if timeout_s is not None and time.time() - start > timeout_s:
            raise NotATrainingRun(f"watch={run_dir}: training wrote no {RUN_INFO} within {timeout_s:g} s "
                               "(it names the W&B run to log into); is the training run alive?")
        if not said:
            print(f"[boundlab] waiting for {run_dir / RUN_INFO} (training has not opened its W&B run yet)",
                  flush=True)
            said = True
        time.sleep(min(poll_s, 1.0))
