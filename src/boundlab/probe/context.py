"""One probe context: the task, store, verifier, logger and sampler maker that every probing entry
point uses (`probe.py`, training's inline probe, the detached watcher, scripts/gpu_check.py), built
from the config once and closed in one place.

This module is the one place a writable store and a verifier are built (`open_verifier`), so a task
is judged the same way whoever probes it: the code verifier keeps EvalPlus's expected outputs next to
the store (`<store dir>/evalplus_expected`) for training's inline probe and the watcher too, not
only for `probe.py`. Reports and the dashboard, which only read, open stores read-only themselves.

A context built from parts (`ProbeContext(task, store, verifier, ...)`: tests, distillation's
teacher, the temperature control's subsample) owns nothing: whoever built those parts closes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from boundlab.config import LoggerConfig, ModelConfig, ProbingMain, SamplerConfig, SandboxSettings, VerifyConfig
from boundlab.probe import spec as _spec
from boundlab.probe.store import Store
from boundlab.tasks import Task

# model dir -> (sampler, tokenizer): the base, a full checkpoint or a LoRA checkpoint.
MakeSampler = Callable[[str], tuple[Any, Any]]


def open_verifier(name: str, verify_cfg: VerifyConfig | Mapping[str, Any] | None = None, store_path: str | Path | None = None,
                  sandbox_cfg: SandboxSettings | Mapping[str, Any] | None = None, **options: Any) -> Any:
    """Verifier `name`, built with its options from the `verify` config (`verifier_options`) or, with
    no config, the keyword `options`; a verifier that runs model-written code also gets the `sandbox`
    config's opt-out (`sandbox.allow_weaker`). With a store, the code verifier keeps EvalPlus's
    canonical outputs in `<store dir>/evalplus_expected` (verdict-neutral: keyed by content)."""
    from boundlab.verify import VERIFIERS, build_verifier, verifier_options

    if verify_cfg is not None:
        options = {**verifier_options(name, verify_cfg), **options}
    if sandbox_cfg is not None and getattr(VERIFIERS.get(name), "runs_code", False):
        allow = sandbox_cfg.get("allow_weaker") if isinstance(sandbox_cfg, Mapping) else sandbox_cfg.allow_weaker
        options = {"allow_weaker": bool(allow), **options}
    verifier = build_verifier(name, **options)
    if store_path is not None and hasattr(verifier, "use_cache_dir"):
        verifier.use_cache_dir(Path(store_path).parent / "evalplus_expected")
    return verifier


@dataclass
class OpenModel:
    """A configured model opened for probing (`ProbeContext.open_model`): close it to free its sampler."""
    sampler: Any
    tokenizer: Any
    fingerprint: str
    name: str
    path: str

    def close(self) -> None:
        self.sampler.close()

    def __enter__(self) -> "OpenModel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@dataclass
class ProbeContext:
    task: Task
    store: Store
    verifier: Any
    # model dir -> (sampler, tokenizer); None: this context opens no model folders (a test's own).
    make_sampler: MakeSampler | None = None
    # The run logger (`open_logger`); None until opened.
    logger: Any = None
    # Progress bars while sampling.
    progress: bool = True
    # The `sampler` group, for `open_model` (a model config -> sampler, as probe.py opens its model).
    sampler_cfg: SamplerConfig | None = None
    _owned: list[Callable[[], None]] = field(default_factory=list, repr=False)

    @classmethod
    def from_config(cls, cfg: ProbingMain, task: Task | None = None, progress: bool = True) -> "ProbeContext":
        """From a composed probe.py or train.py config: the probed task (`task` when the caller
        built it already, else the task group cut to probe.limit), the store at store.path, the
        task's verifier with the `verify` group's options, and samplers by the `model` and `sampler`
        groups. Close it (or use it as a context manager) to finish the logger and close the rest.
        `cfg` is typed at probe.py and train.py; the watcher passes the run's saved DictConfig (read
        by attribute only)."""
        from boundlab.sampling.checkpoint import sampler_factory

        task = task if task is not None else _spec.load_task(cfg)
        store = Store(cfg.store.path)
        try:
            # A run dir saved before the `sandbox` block has its opt-out lifted there
            # (lift_flat_option_keys), or none: the default, refused.
            verifier = open_verifier(task.verifier, cfg.verify, store.path, getattr(cfg, "sandbox", None))
        except BaseException:
            store.close()
            raise
        ctx = cls(task, store, verifier, sampler_factory(cfg.model, cfg.sampler), progress=progress,
                  sampler_cfg=cfg.sampler)
        ctx._owned = [store.close, verifier.close]  # closed last to first
        return ctx

    def with_task(self, task: Task) -> "ProbeContext":
        """The same store, verifier, logger and samplers on other problems (a subsample); it owns
        nothing, so closing this context still closes them."""
        return ProbeContext(task, self.store, self.verifier, self.make_sampler, self.logger,
                            self.progress, self.sampler_cfg)

    def open_logger(self, logger_cfg: LoggerConfig, run_dir: str | Path,
                    run_config: Mapping[str, Any] | None = None) -> Any:
        """Build the run logger (W&B or none); `close` finishes it (finishing twice is safe)."""
        from boundlab.tracking import build_logger

        self.logger = build_logger(logger_cfg, run_dir, run_config)
        self._owned.append(self.logger.finish)
        return self.logger

    def open_model(self, model_cfg: ModelConfig) -> OpenModel:
        """A model config (probe.py's `model`, the temperature control's base, a teacher) opened
        for probing: resolved, its tokenizer, its sampler, its fingerprint (cached in the store)."""
        from boundlab.models import load_tokenizer, model_fingerprint, resolve_model_path
        from boundlab.sampling import build_sampler

        if self.sampler_cfg is None:
            raise ValueError("this probe context has no sampler config: build it with from_config")
        resolved = resolve_model_path(model_cfg)
        tok = load_tokenizer(model_cfg, resolved)
        sampler = build_sampler(model_cfg, self.sampler_cfg, tokenizer=tok)
        try:
            fp = model_fingerprint(resolved, self.store)
        except BaseException:
            sampler.close()
            raise
        return OpenModel(sampler, tok, fp, str(model_cfg.name), resolved)

    def close(self) -> None:
        """Finish the logger, then close the verifier and the store; each is closed even when one
        before it fails (the first failure is raised)."""
        owned, self._owned = self._owned, []
        _close_all(list(reversed(owned)))

    def __enter__(self) -> "ProbeContext":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _close_all(closers: list[Callable[[], None]]) -> None:
    first: BaseException | None = None
    for close in closers:
        try:
            close()
        except BaseException as e:  # noqa: BLE001 - the rest still close; the first failure is raised
            first = first or e
    if first is not None:
        raise first
