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

from boundlab.config import to_dict


def watch(run_dir: str | Path, poll_s: float = 10.0, timeout_s: float | None = None,
          sampler_cfg: Any = None) -> list[dict[str, Any]]:
    """Probe RUN_DIR's checkpoints. `sampler_cfg` (the worker's own `sampler` group) replaces the
    training run's: the worker may sample with vLLM on its own GPU while training used HF."""
    from omegaconf import OmegaConf

    from boundlab.models import resolve_model_path
    from boundlab.probe.app import gen_settings, load_task, set_threads
    from boundlab.probe.boundary import BoundaryTracker
    from boundlab.probe.store import Store
    from boundlab.tracking import build_logger
    from boundlab.training import checkpoints as ck
    from boundlab.training.app import DONE_MARKER, RUN_INFO, _make_sampler_factory, _with
    from boundlab.rundir_io import read_json
    from boundlab.verify import build_verifier

    run_dir = Path(run_dir)
    cfg_file = run_dir / ".hydra" / "config.yaml"
    if not cfg_file.is_file():
        raise FileNotFoundError(f"watch={run_dir}: not a training run dir (no .hydra/config.yaml)")
    cfg = OmegaConf.load(cfg_file)
    if sampler_cfg is not None:
        cfg.sampler = sampler_cfg
    set_threads(cfg.sampler.torch_threads)
    info = read_json(run_dir / RUN_INFO, {}, "the training run's W&B run id")
    task = load_task(cfg)
    store = Store(cfg.store.path)
    verifier = build_verifier(task.verifier, **to_dict(cfg.verify))
    logger = build_logger(_with(cfg.logger, run_id=info.get("wandb_run_id"), job_type="probe"),
                          run_dir, to_dict(cfg))
    try:
        tracker = BoundaryTracker(run_dir, task, store, verifier, logger, _make_sampler_factory(cfg),
                                  cfg.probe.n, gen_settings(cfg.probe), cfg.probe.seed,
                                  cfg.probe.bootstrap_iters, cfg.probe.ci)
        tracker.probe_base(resolve_model_path(cfg.model))
        start = time.time()
        print(f"[boundlab] watching {run_dir} for checkpoints (every {poll_s:.0f} s)", flush=True)
        while True:
            finished = (run_dir / DONE_MARKER).exists()  # read before listing: no race at the end
            for step, path in ck.checkpoints(run_dir / "checkpoints"):
                if step not in tracker.done_steps():
                    tracker.probe_checkpoint(step, str(path))
            limit = OmegaConf.select(cfg, "train.save_total_limit")
            if limit:
                ck.rotate(run_dir / "checkpoints", limit, tracker.done_steps())
            if finished:
                break
            if timeout_s is not None and time.time() - start > timeout_s:
                print(f"[boundlab] watch timed out after {timeout_s:.0f} s", flush=True)
                break
            time.sleep(poll_s)
        return tracker.rows
    finally:
        logger.finish()
        verifier.close()
        store.close()
