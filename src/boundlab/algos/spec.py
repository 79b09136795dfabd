"""What an algorithm is to the rest of BoundLab: a name, a typed config block it reads, the
combinations it refuses at start, and a builder that turns one `BuildInputs` into a trainer.

Every builder takes the same value (`BuildInputs`), so the caller (training/app.py) never needs to
know which algorithm needs what: the distillation builders read `inputs.context` (the task,
verifier and store, to sample the teacher); the others ignore it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from boundlab.config import AlgoConfig, DistillConfig, GRPOFamilyConfig, OnPolicyConfig, TrainMain

# The config blocks under `algo.` (boundlab.config.AlgoConfig); an algorithm reads exactly one.
FAMILIES = ("grpo", "onpolicy", "distill")


@dataclass(frozen=True)
class BuildContext:
    """What some builders need beyond the model and data (distillation samples its teacher)."""
    task: Any
    verifier: Any
    store: Any
    run_dir: Path


@dataclass(frozen=True)
class BuildInputs:
    """Everything a builder gets. `cfg` is the typed train config."""
    cfg: TrainMain
    model: Any
    tokenizer: Any
    dataset: Any
    reward_funcs: list
    callbacks: list
    output_dir: str
    report_to: list[str]
    peft_config: Any = None
    context: Optional[BuildContext] = None


Check = Callable[["TrainMain"], None]


@dataclass(frozen=True)
class Algorithm:
    """One registered algorithm. `checks` run at start (boundlab.algos.check, the one validator of
    the algorithm choice), before any model work; each raises ConfigError with one line for a
    combination the algorithm cannot honour. Builders do not run them again."""
    name: str
    # Which `algo.<family>` block the builder reads (one of FAMILIES).
    family: str
    build: Callable[[BuildInputs], Any]
    checks: tuple[Check, ...] = field(default_factory=tuple)
    # Whether its trainer feeds a visual task's images to the model (through the processor).
    images: bool = False

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"algorithm {self.name!r}: family {self.family!r} is not one of "
                             f"{', '.join(FAMILIES)}")

    def block(self, algo: AlgoConfig) -> GRPOFamilyConfig | OnPolicyConfig | DistillConfig:
        """This algorithm's own config block: `algo.<family>`."""
        return getattr(algo, self.family)

    def check(self, cfg: TrainMain) -> None:
        for chk in self.checks:
            chk(cfg)


def training_args_common(cfg: TrainMain, output_dir: str, report_to: list[str]) -> dict[str, Any]:
    """Arguments every TRL/HF training config takes the same way, from the train/backend/algo groups."""
    a, b, t = cfg.algo, cfg.backend, cfg.train
    kw: dict[str, Any] = dict(
        output_dir=output_dir,
        max_steps=t.max_steps,
        save_strategy="steps",
        save_steps=t.save_steps,
        # BoundLab rotates (rundir/checkpoints.rotate, from the probe callback): HF would delete
        # checkpoints inside its save, before the callback could probe or hand them on.
        save_total_limit=None,
        logging_steps=t.logging_steps,
        seed=t.seed,
        learning_rate=a.learning_rate,
        per_device_train_batch_size=a.per_device_train_batch_size,
        gradient_accumulation_steps=a.gradient_accumulation_steps,
        weight_decay=a.weight_decay,
        warmup_steps=a.warmup_steps,
        max_grad_norm=a.max_grad_norm,
        lr_scheduler_type=a.lr_scheduler_type,
        use_cpu=b.use_cpu,
        bf16=b.bf16,
        gradient_checkpointing=b.gradient_checkpointing,
        report_to=report_to,
        disable_tqdm=False,
        save_only_model=False,
    )
    if b.deepspeed:
        kw["deepspeed"] = b.deepspeed
    if b.ddp_backend:
        kw["ddp_backend"] = b.ddp_backend
    return kw
