"""`data.gate`: train on the problems the policy itself finds hard (arXiv 2510.02230's low-likelihood
filter, and the simpler zero-success filter), re-decided at every save.

The gate probe. Training's inline probe samples the probe task (`task.split`, the eval slice), not the
training split, so the gate runs its own probe of the training problems: at the start of a new run
and at every save, `data.gate_samples` completions per training problem are sampled from the policy
being trained (in memory, at `algo.temperature` and `algo.max_completion_length`, seeded by
`train.seed` and the step inside `torch.random.fork_rng`, so training's own random stream is not
touched) and scored by the training reward's own rule (strict if `reward.strict`, never shuffled).
c of n is a problem's successes. The probe is in-process whatever `train.probe_mode` says: the next
step needs its answer.

The gates, precisely (ties in the training split's order):
- zero_success: the problems with c = 0.
- low_likelihood: the ceil(gate_fraction * M) problems (M the split's size) with the lowest c / n, the
  Monte Carlo estimate of the probability the policy puts on its correct answers for the problem (the
  likelihood of its own correct answers, summed over them).
An empty gated set trains on the whole split, said in one line.

How a step draws from the gated set: the data loaders are left as they are (one permutation of the
whole split per epoch); the built trainer's `training_step` (HF's public per-step method) is wrapped
so that the rows of each step are remapped when the step consumes them, not when a data loader
prefetches them (DAPO's refill prompts on our trainer likewise): a gated problem keeps its rows, and the k-th (in split order) problem outside the
gate becomes the (k mod |gate|)-th gated problem, so each gated problem gets about M / |gate| draws
per epoch. Since the remap reads the gate at the step that trains on it, and the gate is saved with
each checkpoint (`checkpoint-N/data_gate.json`, written before the checkpoint is marked complete), a
resumed run trains on exactly the sets the uninterrupted one did. Each decision is logged (W&B
`train/gate_size`, `train/gate_share`) and appended to `RUN_DIR/data_gate.jsonl` with the gated ids.
Refused: visual tasks (prompts are messages), several processes (each would probe on its own).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

import torch
from transformers import TrainerCallback

from boundlab.config import ConfigError

if TYPE_CHECKING:
    from boundlab.config import TrainMain

GATES = ("none", "zero_success", "low_likelihood")
GATE_FILE = "data_gate.json"      # in each checkpoint
GATE_LOG = "data_gate.jsonl"      # in the run dir, one line per decision


def check_gate(cfg: TrainMain) -> None:
    d = cfg.data
    if d.gate not in GATES:
        raise ConfigError(f"data.gate={d.gate}: must be one of {', '.join(GATES)}")
    if d.gate == "none":
        return
    if d.gate_samples < 1:
        raise ConfigError(f"data.gate_samples={d.gate_samples}: must be >= 1 (completions per training problem)")
    if not 0 < d.gate_fraction <= 1:
        raise ConfigError(f"data.gate_fraction={d.gate_fraction}: must be in (0, 1] (the share of problems kept)")
    if cfg.model.vision:
        raise ConfigError(f"data.gate={d.gate}: the gate probe samples text prompts; visual tasks are not gated")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ConfigError(f"data.gate={d.gate}: the gate probe runs in one process; train with one process")


def select(results: dict[str, tuple[int, int]], order: list[str], gate: str, fraction: float) -> list[str]:
    """The gated problem ids, in split order, from each problem's (n, c). See the module docstring."""
    if gate == "none":
        return list(order)
    if gate == "zero_success":
        return [p for p in order if results[p][1] == 0]
    if gate == "low_likelihood":
        keep = math.ceil(fraction * len(order))
        pos = {p: i for i, p in enumerate(order)}
        ranked = sorted(order, key=lambda p: (results[p][1] / results[p][0], pos[p]))[:keep]
        return sorted(ranked, key=pos.__getitem__)
    raise ValueError(f"unknown gate {gate!r}")


def remap_ids(ids: list[str], order: list[str], active: Optional[list[str]]) -> list[str]:
    """Each row's problem id after the gate (identity when `active` is None)."""
    if active is None:
        return list(ids)
    keep = set(active)
    outside = {p: k for k, p in enumerate(p for p in order if p not in keep)}
    return [p if p in keep else active[outside[p] % len(active)] for p in ids]


class Gate(TrainerCallback):
    """The gate's state, its probe and its callback; `bind(trainer)` once the trainer is built."""

    def __init__(self, cfg: TrainMain, rows: list[dict[str, Any]], score: Callable[..., list[float]],
                 run_dir: Path, logger: Any = None, resume_from: Optional[Path] = None):
        d = cfg.data
        self.gate, self.samples, self.fraction = d.gate, int(d.gate_samples), float(d.gate_fraction)
        self.seed, self.temperature = int(cfg.train.seed), float(cfg.algo.temperature)
        self.max_new = int(cfg.algo.max_completion_length)
        self.rows = {r["problem_id"]: r for r in rows}
        self.order = [r["problem_id"] for r in rows]
        self.score, self.run_dir, self.logger = score, Path(run_dir), logger
        self.active: Optional[list[str]] = None
        self.trainer: Any = None
        self.restored = False
        if resume_from is not None:
            from boundlab.rundir.io import read_json

            f = Path(resume_from) / GATE_FILE
            if not f.is_file():
                raise ConfigError(f"data.gate={self.gate}: {f} is missing, so a resumed run cannot train on the "
                                  f"uninterrupted run's gated set; resume from a checkpoint saved with the gate")
            self.active = read_json(f, {}, "the data gate's problem set").get("active")
            self.restored = True

    def bind(self, trainer: Any) -> None:
        self.trainer = trainer
        inner = trainer.training_step

        def training_step(model, inputs, *args, **kwargs):
            return inner(model, self.remap(inputs), *args, **kwargs)

        trainer.training_step = training_step
        if hasattr(trainer, "refill_map"):  # our trainer's DAPO refills draw prompts themselves
            trainer.refill_map = self.remap

    def remap(self, inputs: Any) -> Any:
        """A batch with each row moved to its gated problem: TRL's list of row dicts, or our
        trainer's dict of columns."""
        if self.active is None:
            return inputs
        if isinstance(inputs, list):
            ids = remap_ids([r["problem_id"] for r in inputs], self.order, self.active)
            return [dict(self.rows[p]) for p in ids]
        ids = remap_ids(list(inputs["problem_id"]), self.order, self.active)
        return {k: [self.rows[p][k] for p in ids] for k in inputs}

    # -- the probe and the decision --

    def probe(self, step: int) -> dict[str, tuple[int, int]]:
        """(n, c) per training problem under the policy now (see the module docstring)."""
        from transformers import GenerationConfig

        from boundlab.sampling.base import add_special_tokens_for

        t = self.trainer
        model = t.accelerator.unwrap_model(t.model)
        model = getattr(model, "policy", model)  # PPO's policy-with-critic
        tok = t.processing_class
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        gen = GenerationConfig(do_sample=True, temperature=self.temperature, top_k=0, top_p=1.0, min_p=0.0,
                               max_new_tokens=self.max_new, pad_token_id=pad, eos_token_id=tok.eos_token_id,
                               num_return_sequences=self.samples)
        device = next(model.parameters()).device
        was_training = model.training
        results: dict[str, tuple[int, int]] = {}
        per_call = max(1, 256 // self.samples)
        model.eval()
        devices = [device.index or 0] if device.type == "cuda" else []
        try:
            with torch.random.fork_rng(devices=devices), torch.no_grad():
                torch.manual_seed(self.seed * 1_000_003 + step)
                for s in range(0, len(self.order), per_call):
                    pids = self.order[s:s + per_call]
                    prompts = [self.rows[p]["prompt"] for p in pids]
                    enc = tok(prompts, return_tensors="pt", padding=True, padding_side="left",
                              add_special_tokens=add_special_tokens_for(tok, prompts)).to(device)
                    out = model.generate(**enc, generation_config=gen)[:, enc["input_ids"].size(1):]
                    ids = [_through_eos(row.tolist(), tok.eos_token_id, pad) for row in out.cpu()]
                    texts = tok.batch_decode(ids, skip_special_tokens=True)
                    rep = [p for p in pids for _ in range(self.samples)]
                    r = self.score(prompts=[q for q in prompts for _ in range(self.samples)], completions=texts,
                                   problem_id=rep, completion_ids=ids)
                    for j, p in enumerate(pids):
                        got = r[j * self.samples:(j + 1) * self.samples]
                        results[p] = (self.samples, sum(1 for x in got if x and x > 0))
        finally:
            model.train(was_training)
        return results

    def decide(self, step: int) -> None:
        results = self.probe(step)
        chosen = select(results, self.order, self.gate, self.fraction)
        if not chosen:
            print(f"[boundlab] data.gate={self.gate}: no training problem qualifies at step {step}; training on "
                  f"the whole split until the next gate probe", flush=True)
        self.active = chosen or None
        kept = len(chosen) if chosen else len(self.order)
        self._record(step, kept, results)

    def _record(self, step: int, kept: int, results: dict[str, tuple[int, int]]) -> None:
        from boundlab.rundir.io import append_lines, dumps

        row = {"step": step, "gate": self.gate, "size": kept, "of": len(self.order),
               "fallback_whole_split": self.active is None,
               "successes": sum(c for _, c in results.values()), "samples": sum(n for n, _ in results.values()),
               "active": self.active}
        append_lines(self.run_dir / GATE_LOG, dumps(row))
        if self.logger is not None:
            from boundlab.tracking.names import TRAIN_STEP

            self.logger.log({"train/gate_size": kept, "train/gate_share": kept / max(1, len(self.order)),
                             TRAIN_STEP: step})
        print(f"[boundlab] data.gate={self.gate} at step {step}: training on {kept} of {len(self.order)} "
              f"problems", flush=True)

    def on_train_begin(self, args, state, control, **kwargs):
        if not self.restored and self.trainer is not None:
            self.decide(state.global_step)

    def on_save(self, args, state, control, **kwargs):
        from boundlab.rundir.io import atomic_write_json

        if state.global_step < state.max_steps:  # the last checkpoint trains nothing after it
            self.decide(state.global_step)
        out = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if out.is_dir():
            atomic_write_json(out / GATE_FILE, {"step": state.global_step, "gate": self.gate,
                                                "active": self.active})


def _through_eos(ids: list[int], eos: Optional[int], pad: Optional[int]) -> list[int]:
    """A generated row up to and including its first EOS (padding after it dropped)."""
    if eos is not None and eos in ids:
        return ids[:ids.index(eos) + 1]
    if pad is not None and pad != eos:
        while ids and ids[-1] == pad:
            ids = ids[:-1]
    return ids
