"""Distillation from a stronger teacher: the paper's contrast (its Figure 7) to RL.

- Trace generation (off-policy, as DeepSeek-R1-Distill was made): the teacher samples
  `algo.distill.teacher_samples` completions per training problem through the same probe machinery, so
  the samples land in the store (resumable, and reused whenever the same teacher, task and
  settings are asked for again). Only verified traces are kept (rejection sampling), de-duplicated,
  and capped at `algo.distill.max_traces_per_problem` per problem. They are written to the run dir as
  `distill_traces.jsonl` (loadable with `datasets`).
- `sft_distill`: TRL's SFTTrainer on those traces, loss on the completion tokens only.
- `onpolicy_distill`: TRL's DistillationTrainer: the student samples, the teacher scores every
  token (generalised JSD). It needs one vocabulary: different tokenizers fail at start. The student's
  samples honour `rollout=` (TRL's use_vllm); sft_distill samples nothing while training, so it
  refuses a vLLM rollout (its teacher's traces follow `sampler=`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from boundlab.algos.rollout import check_rollout, trl_vllm_args
from boundlab.algos.spec import Algorithm, BuildInputs, training_args_common
from boundlab.config import ConfigError
from boundlab.rundir.io import dumps as strict_dumps

if TYPE_CHECKING:
    from boundlab.config import TrainMain
    from boundlab.tasks.base import Task


def generate_traces(cfg: TrainMain, task: Task, verifier: Any, store: Any, run_dir: Path,
                    progress: bool = True) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Sample the teacher, keep verified distinct traces. Returns (rows, stats)."""
    from boundlab.probe.context import ProbeContext
    from boundlab.probe.runner import probe_model
    from boundlab.probe.spec import ProbeSpec
    from boundlab.sampling.base import GenSettings

    a, d = cfg.algo, cfg.algo.distill
    # The training run's store and verifier on the training problems (owned by the run, not here).
    ctx = ProbeContext(task, store, verifier, progress=progress, sampler_cfg=cfg.sampler)
    gen = GenSettings(temperature=d.teacher_temperature, top_p=1.0,
                      max_new_tokens=a.max_completion_length)
    with ctx.open_model(cfg.teacher) as teacher:
        tok = teacher.tokenizer
        res = probe_model(ctx, ProbeSpec(n=d.teacher_samples, gen=gen, seed=cfg.train.seed,
                                         bootstrap_iters=10),
                          teacher.sampler, teacher.fingerprint, tok, f"teacher:{cfg.teacher.name}",
                          meta={"path": teacher.path, "role": "teacher"})
    rows: list[dict[str, str]] = []
    total = correct = 0
    for p in task.problems:
        seen: set[str] = set()
        samples = store.samples(res.key, p.problem_id)[: d.teacher_samples]
        total += len(samples)
        for s in samples:
            if not s.correct:
                continue
            correct += 1
            if s.text in seen or len(seen) >= d.max_traces_per_problem:
                continue
            seen.add(s.text)
            rows.append({"problem_id": p.problem_id, "prompt": task.render(p, tok),
                         "completion": s.text})
    stats = {"teacher_samples": total, "verified": correct,
             "acceptance_rate": correct / max(total, 1), "traces": len(rows),
             "problems_with_traces": len({r["problem_id"] for r in rows}),
             "probe_key": res.key}
    out = run_dir / "distill_traces.jsonl"
    with out.open("w") as f:
        for r in rows:
            f.write(strict_dumps(r) + "\n")
    (run_dir / "distill_traces_stats.json").write_text(strict_dumps(stats, indent=2))
    print(f"[boundlab] teacher traces: {correct}/{total} verified (acceptance "
          f"{stats['acceptance_rate']:.1%}), {len(rows)} distinct kept for "
          f"{stats['problems_with_traces']}/{len(task)} problems -> {out}", flush=True)
    if not rows:
        raise ValueError("the teacher produced no verified trace: nothing to distill")
    return rows, stats


def _check_same_vocab(student_tok: Any, teacher_dir: str, cfg: TrainMain) -> Any:
    from boundlab.models import load_tokenizer

    teacher_tok = load_tokenizer(cfg.teacher, teacher_dir)
    if student_tok.get_vocab() != teacher_tok.get_vocab():
        raise ConfigError(f"algo={cfg.algo.name}: the teacher ({cfg.teacher.name}) and the student "
                         f"({cfg.model.name}) have different tokenizers; on-policy distillation "
                         f"scores the student's tokens with the teacher, so they must share one "
                         f"vocabulary (use algo=sft_distill across tokenizers)")
    return teacher_tok


def check_distill(cfg: TrainMain) -> None:
    """Distillation has no KL-to-reference term: a `kl.*` setting would be silently ignored."""
    from boundlab.config import KLConfig

    default = KLConfig()
    changed = [f"kl.{k}={getattr(cfg.kl, k)}" for k in ("coef", "where", "estimator", "reference")
               if getattr(cfg.kl, k) != getattr(default, k)]
    if changed:
        raise ConfigError(f"algo={cfg.algo.name} has no KL penalty (the teacher is the target), so "
                          f"{' '.join(changed)} would be ignored: drop the kl.* override(s)")
    if cfg.algo.entropy_coef or cfg.algo.shaping.unlikeliness:
        raise ConfigError(f"algo={cfg.algo.name} has no entropy bonus or reward shaping (it imitates a "
                          f"teacher): drop algo.entropy_coef / algo.shaping.unlikeliness")


def build_sft_distill(x: BuildInputs):
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    cfg, context = x.cfg, x.context
    if context is None:
        raise ValueError(f"algo={cfg.algo.name} samples its teacher: BuildInputs.context is required")
    rows, _ = generate_traces(cfg, context.task, context.verifier, context.store, context.run_dir)
    dataset = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows])
    kw = training_args_common(cfg, x.output_dir, x.report_to)
    kw["per_device_train_batch_size"] = max(1, cfg.algo.per_device_train_batch_size)
    args = SFTConfig(**kw, completion_only_loss=True, max_length=512)
    return SFTTrainer(model=x.model, args=args, train_dataset=dataset, processing_class=x.tokenizer,
                      callbacks=x.callbacks, peft_config=x.peft_config)


def build_onpolicy_distill(x: BuildInputs):
    from trl import DistillationConfig, DistillationTrainer

    from boundlab.models import load_model, resolve_model_path

    cfg = x.cfg
    teacher_dir = resolve_model_path(cfg.teacher)
    _check_same_vocab(x.tokenizer, teacher_dir, cfg)
    teacher = load_model(cfg.teacher, "cpu" if cfg.backend.use_cpu else "cuda", teacher_dir)
    a = cfg.algo
    args = DistillationConfig(**training_args_common(cfg, x.output_dir, x.report_to),
                              max_completion_length=a.max_completion_length,
                              temperature=a.temperature, top_p=1.0, top_k=0, beta=a.distill.beta,
                              **trl_vllm_args(cfg.rollout))
    return DistillationTrainer(model=x.model, teacher_model=teacher, args=args,
                               train_dataset=x.dataset.remove_columns(["problem_id"]),
                               processing_class=x.tokenizer, callbacks=x.callbacks,
                               peft_config=x.peft_config)


def check_sft_rollout(cfg: TrainMain) -> None:
    check_rollout(cfg.algo.name, cfg, samples=False)


def check_onpolicy_rollout(cfg: TrainMain) -> None:
    check_rollout(cfg.algo.name, cfg)


SFT_DISTILL = Algorithm("sft_distill", "distill", build_sft_distill, (check_distill, check_sft_rollout))
ONPOLICY_DISTILL = Algorithm("onpolicy_distill", "distill", build_onpolicy_distill,
                             (check_distill, check_onpolicy_rollout))
