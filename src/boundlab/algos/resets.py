"""`train.ref_reset_every=N`: ProRL's periodic hard reset (Liu et al. 2025, arXiv 2505.24864). Every N
optimizer steps the reference policy becomes a copy of the current policy (TRL's own
`SyncRefModelCallback.sync_target_model` at mixup alpha 1) and the optimizer's state (Adam's moments
and step counts) is cleared; with a KL penalty this is ProRL's recipe (`experiment=prorl`).

The schedule is a function of the optimizer step only, so a resumed run resets at the same steps as
an uninterrupted one. What a resume needs is saved with each checkpoint: the optimizer state is the
trainer's own (saved after the reset of its step, so a cleared state is what comes back), and the
reference, once reset, is saved beside the policy as `reference/model.safetensors` and loaded back
at the start of a resumed run (without it a resumed run would restart from the base as reference).

Refused in one line: without a KL penalty (there is no reference to reset), with LoRA (the reference
is the adapter-free base), with DeepSpeed (its optimizer state is partitioned) and for distillation.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from transformers import TrainerCallback

from boundlab.config import ConfigError

if TYPE_CHECKING:
    from boundlab.config import TrainMain

REFERENCE_DIR = "reference"
REFERENCE_FILE = "model.safetensors"


def check_reset(cfg: TrainMain) -> None:
    """The combinations `train.ref_reset_every` cannot honour, each one line."""
    every = cfg.train.ref_reset_every
    if every == 0:
        return
    if every < 0:
        raise ConfigError(f"train.ref_reset_every={every}: must be >= 0 (0 = no reset)")
    if cfg.kl.coef <= 0:
        raise ConfigError(f"train.ref_reset_every={every} resets the KL reference, but kl.coef={cfg.kl.coef} "
                          f"loads none: set kl.coef > 0 (ProRL's recipe is KL plus resets)")
    if cfg.peft.enabled:
        raise ConfigError(f"train.ref_reset_every={every}: with peft.enabled the reference is the adapter-free "
                          f"base, which cannot be reset to the policy; train all weights")
    if cfg.backend.deepspeed:
        raise ConfigError(f"train.ref_reset_every={every}: DeepSpeed partitions the optimizer state, which "
                          f"this reset clears in place; run without backend.deepspeed")


class ReferenceReset(TrainerCallback):
    """The callback; `bind(trainer)` once the trainer is built (it reads `trainer.ref_model`)."""

    def __init__(self, every: int, resume_from: Optional[Path] = None):
        self.every = int(every)
        self.resume_from = Path(resume_from) if resume_from is not None else None
        self.trainer: Any = None
        self.reset_steps: list[int] = []

    def bind(self, trainer: Any) -> None:
        if getattr(trainer, "ref_model", None) is None:
            raise ConfigError("train.ref_reset_every: this trainer holds no reference model to reset")
        self.trainer = trainer

    def _policy(self, model: Any) -> Any:
        acc = getattr(self.trainer, "accelerator", None)
        model = acc.unwrap_model(model) if acc is not None else model
        return getattr(model, "policy", model)  # the on-policy trainer's PPO wrapper holds a critic

    def on_train_begin(self, args, state, control, **kwargs):
        if self.resume_from is None:
            return
        f = self.resume_from / REFERENCE_DIR / REFERENCE_FILE
        if f.is_file():
            from safetensors.torch import load_file

            missing, unexpected = self.trainer.ref_model.load_state_dict(load_file(f), strict=False)
            if [m for m in missing if "lm_head" not in m] or unexpected:
                raise RuntimeError(f"{f}: the saved reference does not fit this model "
                                   f"(missing {missing[:3]}, unexpected {unexpected[:3]})")

    def on_step_end(self, args, state, control, model=None, optimizer=None, **kwargs):
        step = state.global_step
        if self.every <= 0 or step % self.every or step >= state.max_steps:
            return
        from trl.trainer.callbacks import SyncRefModelCallback

        SyncRefModelCallback.sync_target_model(self._policy(model), self.trainer.ref_model, 1.0)
        inner = getattr(optimizer, "optimizer", optimizer)
        if inner is not None:
            inner.state.clear()  # Adam's moments and step counts: a fresh optimizer, same parameters
        self.reset_steps.append(step)
        self.trainer.log({"ref_reset": float(step)})

    def on_save(self, args, state, control, **kwargs):
        if not self.reset_steps and not self._reset_before(state.global_step):
            return  # the reference is still the base, which a resume rebuilds as it was
        from safetensors.torch import save_file

        out = Path(args.output_dir) / f"checkpoint-{state.global_step}" / REFERENCE_DIR
        out.mkdir(parents=True, exist_ok=True)
        sd = {k: v.detach().contiguous().cpu() for k, v in self.trainer.ref_model.state_dict().items()}
        # Tied weights share storage; safetensors refuses shared tensors, so keep one copy.
        seen: dict[int, str] = {}
        for k in list(sd):
            ptr = sd[k].data_ptr()
            if ptr in seen:
                del sd[k]
            else:
                seen[ptr] = k
        save_file(sd, str(out / REFERENCE_FILE))

    def _reset_before(self, step: int) -> bool:
        return self.every > 0 and step >= self.every
