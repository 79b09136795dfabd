"""`train.py`: build model, tokenizer, task, reward and algorithm; probe the base and every
checkpoint; track the boundary in W&B and in the run dir.

The run dir's layout and files: boundlab.rundir.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from boundlab.config import PeftConfig, TrainMain, as_typed, to_dict
from boundlab.config import with_updates as _with
from boundlab.rundir import CHECKPOINTS_DIR, DONE_MARKER, RUN_INFO

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from boundlab.tasks.base import Task


def _load_run_info(run_dir: Path) -> dict[str, Any]:
    from boundlab.rundir.io import read_json

    return read_json(run_dir / RUN_INFO, {}, "the W&B run id this run logs into")


def run(cfg: TrainMain | DictConfig, run_dir: str | Path, config_text: str | None = None) -> dict[str, Any]:
    """Train. train.py and a resume hand `cfg` typed (TrainMain); a DictConfig from a direct caller
    is typed here, once. Everything below gets TrainMain or one of its groups. `config_text`: the
    composed config's unresolved YAML, digested into a fresh run's SLURM job record (a direct
    caller's DictConfig gives its own; none, no record: a requeue is then refused as any reuse)."""
    from boundlab.rundir import lock
    from boundlab.rundir.checkpoints import finished_line

    from omegaconf import DictConfig as _DictConfig, OmegaConf

    if config_text is None and isinstance(cfg, _DictConfig):
        config_text = OmegaConf.to_yaml(cfg, resolve=False)
    cfg = as_typed(cfg, TrainMain)

    if cfg.resume is None and lock.main_rank():
        from boundlab.rundir.owner import check_fresh_run_dir

        check_fresh_run_dir(run_dir)  # another run's dir, named where argv does not show it
    with lock.training_locks(run_dir, cfg.train.probe_mode):  # one trainer per run dir; see rundir/lock.py
        if cfg.resume is None and config_text is not None and lock.main_rank():
            from boundlab.rundir.slurm import record_job

            # Under SLURM, before any model work: a requeue of this job resumes this dir.
            record_job(run_dir, config_text)
        if cfg.resume is not None and (Path(run_dir) / DONE_MARKER).exists():
            print(finished_line(Path(run_dir), cfg.train.max_steps), flush=True)  # a finished run trains nothing
            return {"run_dir": str(run_dir), "rows": [], "finished": True}
        return _run(cfg, run_dir)


def _run(cfg: TrainMain, run_dir: str | Path) -> dict[str, Any]:
    from boundlab.algos import BuildContext, BuildInputs, build as build_trainer
    from boundlab.models import load_model, load_tokenizer, resolve_model_path
    from boundlab.boundary.callback import ProbeCallback
    from boundlab.boundary.tracker import build_tracker
    from boundlab.probe.context import ProbeContext
    from boundlab.probe.spec import ProbeSpec, load_task, set_threads
    from boundlab.rundir.io import atomic_write_json
    from boundlab.tasks import build_task
    from boundlab.rundir import checkpoints as ck
    from boundlab.training.init_from import check_required, resolve_init
    from boundlab.training.rewards import check_strict, make_reward_fn
    from boundlab.tracking.segments import take_over

    from boundlab.algos import check as check_algo
    from boundlab.errors import no_space_left

    # Again here for a caller that did not validate: an impossible combination fails before any model work.
    check_extras(cfg, check_algo(cfg).family)
    from boundlab.training.console import quiet_libraries

    quiet_libraries()
    check_required(cfg)  # experiment=sft_then_rl without its checkpoint
    resolve_init(cfg.train.init_from, None)  # so does a train.init_from that is not a checkpoint
    t_start = time.time()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    threads = set_threads(cfg.backend.torch_threads)
    # Under accelerate/DeepSpeed only rank 0 probes; the other ranks just train.
    main_rank = int(os.environ.get("RANK", "0")) == 0
    resuming = cfg.resume is not None
    if resuming and not Path(cfg.resume).is_dir():
        raise FileNotFoundError(f"resume={cfg.resume}: no such run dir")
    ckpt_dir = run_dir / CHECKPOINTS_DIR
    resume_from = ck.latest_complete(ckpt_dir) if resuming else None
    for bad in ck.incomplete(ckpt_dir):
        print(f"[boundlab] ignoring incomplete checkpoint {bad} (killed mid-save)", flush=True)

    probe_task = load_task(cfg)
    probe_task.groups()  # a group_by some problem lacks fails here, before any model work
    train_task = build_task(_with(cfg.task, split=cfg.train.train_split))
    if cfg.train.train_limit:
        train_task = train_task.with_problems(train_task.problems[: cfg.train.train_limit])
    _check_vision(cfg, train_task)
    from boundlab.training.context_fit import check_context

    base_dir = resolve_model_path(cfg.model)
    context_tok = load_tokenizer(cfg.model, base_dir)
    check_context(cfg.model.name, base_dir, context_tok, probe_task,
                  {"probe.max_new_tokens": cfg.probe.max_new_tokens,
                   "algo.max_completion_length": cfg.algo.max_completion_length})
    # The probe's task, store, verifier (also the reward's), logger and samplers: one context,
    # closed in the finally below.
    ctx = ProbeContext.from_config(cfg, task=probe_task)
    store, verifier = ctx.store, ctx.verifier
    trainer = None
    try:
        strict_reward = cfg.reward.strict
        shuffle_seed = cfg.train.seed if cfg.reward.shuffle_within_group else None
        if strict_reward:
            check_strict(train_task, verifier)
        info = _load_run_info(run_dir)
        logger_cfg = _with(cfg.logger, run_id=cfg.logger.run_id or info.get("wandb_run_id"),
                           job_type=cfg.logger.job_type or cfg.algo.name)
        logger = ctx.open_logger(logger_cfg, run_dir, to_dict(cfg))
        # Decided before this process's own segment is recorded: what the W&B run keeps of the
        # earlier processes, from the run dir's records alone (boundlab.tracking.segments).
        plan = take_over(run_dir) if resuming and logger.mode == "offline" else None
        logger.open_segment("train", ck.step_of(resume_from) if resume_from is not None else 0)
        info.update(wandb_run_id=logger.run_id, started=info.get("started", time.time()),
                    algo=cfg.algo.name, model=cfg.model.name, task=probe_task.name, seed=cfg.train.seed)
        atomic_write_json(run_dir / RUN_INFO, info)

        tracker = build_tracker(run_dir, ctx, ProbeSpec.from_config(cfg.probe))
        print(f"[boundlab] run dir {run_dir}; {threads} torch thread(s); "
              f"probing {len(probe_task)} problems x n={cfg.probe.n} per checkpoint", flush=True)
        if plan is not None:
            _relog(plan, tracker, logger, resume_from)
        detached = cfg.train.probe_mode == "detached"
        if cfg.train.probe_base and not detached and main_rank:
            tracker.probe_base(base_dir)  # detached: the watcher probes the base
        # Checkpoints saved before a crash but not yet probed: probe them now, before training on.
        if not detached and main_rank:
            for step, path in ck.checkpoints(ckpt_dir):
                tracker.probe_checkpoint(step, str(path))

        if resume_from is not None and ck.step_of(resume_from) >= cfg.train.max_steps:
            # Killed while probing its last checkpoint: probed above, nothing left to train.
            (run_dir / DONE_MARKER).write_text("ok\n")
            print(f"[boundlab] {run_dir}: its latest checkpoint {resume_from.name} is at max_steps="
                  f"{cfg.train.max_steps}; probed what was left, nothing to train", flush=True)
            _print_boundary(tracker)
            return {"run_dir": str(run_dir), "rows": tracker.rows, "finished": True}

        tok = load_tokenizer(cfg.model, base_dir)
        processing = tok
        if cfg.model.vision:  # TRL trains a VLM through its processor (the images go through it)
            from boundlab.models import load_processor

            processing = load_processor(cfg.model, base_dir)
            tok = processing.tokenizer
        init_dir = resolve_init(cfg.train.init_from, base_dir)
        if init_dir is not None:
            from boundlab.models import model_fingerprint

            info["init_from"] = {"path": str(init_dir), "weights": model_fingerprint(str(init_dir), store)}
            atomic_write_json(run_dir / RUN_INFO, info)
            print(f"[boundlab] training starts from {init_dir} (train.init_from); probes compare with the "
                  f"base {base_dir}", flush=True)
        model = load_model(cfg.model, "cpu" if cfg.backend.use_cpu else "cuda",
                           str(init_dir) if init_dir is not None else base_dir)
        dataset = _dataset(train_task, tok, processing if cfg.model.vision else None)
        peft_config = _peft(cfg.peft)
        report_to = ["wandb"] if logger.mode != "disabled" and logger.run_id else []
        bonus = _outcome_bonus(cfg)
        reward = make_reward_fn(train_task, verifier, cfg.algo.max_completion_length, tok.eos_token_id,
                                strict=strict_reward, shuffle_seed=shuffle_seed,
                                observe=bonus.observe if bonus is not None else None)
        rewards = [reward] if bonus is None else [reward, bonus]
        callbacks: list = [ProbeCallback(tracker, cfg.train.probe_mode, cfg.train.save_total_limit,
                                         cfg.train.stop_on_shrink)]
        gate = None
        if cfg.data.gate != "none":
            from boundlab.training.gate import Gate

            score = make_reward_fn(train_task, verifier, cfg.algo.max_completion_length, tok.eos_token_id,
                                   strict=strict_reward)
            gate = Gate(cfg, dataset.to_list(), score, run_dir, logger, resume_from)
            callbacks.insert(0, gate)  # before the probe callback: its file is in the checkpoint when marked
        if bonus is not None:
            callbacks.insert(0, bonus.callback(resume_from))  # likewise
        reset = None
        if cfg.train.ref_reset_every:
            from boundlab.algos.resets import ReferenceReset

            reset = ReferenceReset(cfg.train.ref_reset_every, resume_from)
            callbacks.insert(0, reset)  # before the probe callback, so a saved reference is complete
        trainer = build_trainer(BuildInputs(
            cfg, model, processing, dataset, rewards, callbacks, str(ckpt_dir),
            report_to, peft_config, BuildContext(train_task, verifier, store, run_dir)))
        if reset is not None:
            reset.bind(trainer)
        if gate is not None:
            gate.bind(trainer)
        from boundlab.training.console import condense

        condense(trainer)  # one line per logging step, not TRL's metric dict
        if plan is not None:  # steps a stopped run logged after its last checkpoint: not twice
            from boundlab.training.wandb_rows import skip_kept_steps

            skip_kept_steps(trainer, lambda step: not plan.train_missing(step))
        if resume_from is not None:
            print(f"[boundlab] resuming from {resume_from}", flush=True)
        from boundlab.training.interrupt import InterruptGuard

        guard = InterruptGuard()
        trainer.add_callback(guard.callback())
        try:
            with guard, no_space_left(ckpt_dir, f"resume: python train.py resume={run_dir}"):
                trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
        except KeyboardInterrupt:  # Ctrl-C: one line with the step and the resume command
            from boundlab.training.interrupt import interrupted

            raise interrupted(run_dir, trainer, cfg.train.max_steps, ckpt_dir) from None
        (run_dir / DONE_MARKER).write_text("ok\n")
        _print_boundary(tracker)
        if not detached and main_rank:
            _report_probe_share(logger, tracker.seconds_this_process, time.time() - t_start)
        return {"run_dir": str(run_dir), "rows": tracker.rows}
    finally:
        logger = ctx.logger
        if trainer is not None and logger is not None and logger.segment is not None:
            logged = [int(e["step"]) for e in trainer.state.log_history if "step" in e]
            logger.segment.note_train_to(max(logged, default=None))
        ctx.close()
        _destroy_process_group()


def check_extras(cfg: TrainMain, family: str) -> None:
    """reward.outcome_bonus and data.gate: what they refuse, one line each (`family` is the chosen
    algorithm's, from boundlab.algos.check, which validates the algorithm choice itself)."""
    from boundlab.training.gate import check_gate
    from boundlab.training.outcome import check_outcome

    check_outcome(cfg, family)
    check_gate(cfg)


def _outcome_bonus(cfg: TrainMain):
    from boundlab.training.outcome import OutcomeBonus, enabled

    ob = cfg.reward.outcome_bonus
    if not enabled(ob):
        return None
    return OutcomeBonus(ob.ucb_coef, ob.repeat_penalty)


def _relog(plan: Any, tracker: Any, logger: Any, resume_from: Path | None) -> None:
    """Log again what the kept W&B segments lack: probe rows from probes.jsonl, training rows from
    the checkpoint's log_history (boundlab.tracking.relog)."""
    from boundlab.tracking.relog import relog_lost_train_metrics

    relogged = tracker.relog_missing(plan.probe_missing)
    if relogged:
        print(f"[boundlab] re-logged probes at steps {relogged} that no closed W&B segment holds",
              flush=True)
    relog_lost_train_metrics(logger, resume_from, plan.train_missing)


def _check_vision(cfg: TrainMain, task: Task) -> None:
    from boundlab.config import ConfigError

    if task.has_images() and not cfg.model.vision:
        raise ConfigError(f"task {task.name!r} shows images, but model {cfg.model.name!r} is a text "
                          f"model: use a vision-language model (model.vision=true, e.g. model=toy_vlm)")
    if task.has_images():
        from boundlab.algos import check_images

        check_images(cfg.algo.name)  # declared with each algorithm (Algorithm.images)
    if cfg.model.vision and not task.has_images():
        raise ConfigError(f"model {cfg.model.name!r} is a vision-language model but task {task.name!r} "
                          f"has no images (use a visual task, e.g. task=toy_vision)")


def _dataset(task: Any, tok: Any, processor: Any = None):
    from datasets import Dataset

    if processor is None:
        return Dataset.from_list([{"prompt": task.render(p, tok), "problem_id": p.problem_id}
                                  for p in task.problems])
    return Dataset.from_list([visual_row(task, p, processor) for p in task.problems])


def visual_row(task: Any, problem: Any, processor: Any) -> dict[str, Any]:
    """A visual problem as TRL's VLM path wants it: a conversational prompt with image blocks, and
    the images (TRL fills the blocks with them and renders the prompt with the processor's chat
    template), so training sees exactly the prompt the probe samples from (`Task.render` with the
    processor). A chat task gives its structured turns (`Task.vision_messages`); a task without
    chat wrapping (the toy world's `Q:<image>;`) gives one user turn, the rendered prompt cut at
    the processor's image token, whose chat template must put the blocks back together."""
    from PIL import Image

    text = task.render(problem, processor)  # also checks one image placeholder per image
    if task.chat and getattr(processor, "chat_template", None):
        prompt = task.vision_messages(problem)
    else:
        content: list[dict[str, str]] = []
        for i, part in enumerate(text.split(processor.image_token)):
            if i:
                content.append({"type": "image"})
            if part:
                content.append({"type": "text", "text": part})
        prompt = [{"role": "user", "content": content}]
    images = []
    for f in problem.images:
        with Image.open(f) as im:
            images.append(im.convert("RGB"))
    return {"prompt": prompt, "images": images, "problem_id": problem.problem_id}


def _peft(p: PeftConfig):
    if not p.enabled:
        return None
    from peft import LoraConfig

    return LoraConfig(r=p.r, lora_alpha=p.alpha, lora_dropout=p.dropout,
                      target_modules=p.target_modules, task_type="CAUSAL_LM")


def _destroy_process_group() -> None:
    # Avoids a rare abort at exit after multi-process (gloo/nccl) training.
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass


def _report_probe_share(logger: Any, probe_s: float, wall_s: float) -> None:
    """Inline probing pauses training: say what share of this process's wall time it took, in one
    line and in the W&B summary (`probe/inline_seconds`, `probe/inline_share`, `run/wall_seconds`)."""
    share = probe_s / wall_s if wall_s > 0 else 0.0
    print(f"[boundlab] inline probing took {probe_s:.0f} s of this process's {wall_s:.0f} s wall "
          f"({share:.0%}); train.probe_mode=detached moves it to a watcher process", flush=True)
    # Milliseconds: at 0.01 s a short run's share, recomputed from the two, was off by 1e-3.
    logger.update_summary({"probe/inline_seconds": round(probe_s, 3), "probe/inline_share": round(share, 4),
                           "run/wall_seconds": round(wall_s, 3)})


def _print_boundary(tracker: Any) -> None:
    """The boundary table (strict headline where known, answer-only beside it, the null, the
    saturation flags and the per-group breakdown): boundlab.boundary.rows.summary_lines."""
    from boundlab.boundary.rows import summary_lines

    from boundlab.training.console import to_train_log

    lines = summary_lines(tracker.rows)
    if lines:
        print()
        print("\n".join(lines), flush=True)
        to_train_log(tracker.run_dir, ["[boundlab] end of run: the boundary", *lines])
