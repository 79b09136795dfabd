"""What every verifier returns, and the interface it implements.

A verifier also says what its verdicts depend on (`Verifier.identity()`): its name, a `version` of
its logic, the settings it was built with and the versions of the libraries that judge. The probe
key includes it, so stored verdicts are reused only by the verifier that made them.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from typing import Any, ClassVar, Sequence

from boundlab.tasks.base import Problem


@dataclass(frozen=True)
class Verdict:
    # The only bit that counts for pass@k.
    correct: bool
    # The answer pulled out of the completion (math/toy), or the program (code); None when absent.
    extracted: str | None = None
    # Why: math/exact/toy use correct, wrong, no_answer, too_long, timeout, error; math also
    # hedge (several different answers to a one-answer problem) and truncated (cut off at
    # max_new_tokens with no final answer).
    # Code uses passed, failed, timeout, memory, runtime_error, sandbox_error.
    outcome: str = "wrong"
    # Correct *and* reached by a valid chain of thought. Only tasks whose traces can be checked
    # step by step (the toy world) set it; None means "not checkable".
    strict: bool | None = None
    # Free-form, JSON-serialisable details (e.g. the toy world's strategy label).
    info: dict[str, Any] = field(default_factory=dict)


class Verifier:
    """Judges completions. Implementations may batch, de-duplicate and parallelise internally."""

    name = "base"
    # Bump when a change to this verifier's logic can change a verdict: the version is part of the
    # probe key, so verdicts stored by the old logic are re-verified rather than reused.
    version: ClassVar[int] = 1
    # Settings (keyword options: the verifier's own `verify.<name>` block plus the shared
    # `verify.workers`, boundlab.verify.verifier_options) that cannot change a verdict. Every
    # other option the verifier is built with, and every default of its constructor, is part of
    # the probe key, so a setting added later joins the key without anyone remembering to add it.
    verdict_neutral: ClassVar[frozenset[str]] = frozenset({"workers"})
    # For a verifier whose verdicts depend on only a few named options: exactly those. When set, it
    # replaces `verdict_neutral`.
    verdict_settings: ClassVar[frozenset[str] | None] = None
    # Distributions whose installed versions can change a verdict (math-verify for math).
    libraries: ClassVar[tuple[str, ...]] = ()
    # False when a `timeout` verdict means "could not decide" rather than a property of the
    # answer (math-verify's budget vs a program that loops): a rerun then judges it again.
    timeouts_are_final: ClassVar[bool] = True
    # True for a verifier that runs model-written code in the sandbox: it is built with the
    # `sandbox` config's opt-out (`allow_weaker`, boundlab.probe.context.open_verifier).
    runs_code: ClassVar[bool] = False

    def __new__(cls, *args: Any, **kwargs: Any) -> "Verifier":
        # Record how the verifier was built, whoever builds it (build_verifier, a test, a
        # benchmark): identity() must describe the verifier that judges, not a config beside it.
        self = super().__new__(cls)
        self._built_with = (args, dict(kwargs))
        return self

    def settings(self) -> dict[str, Any]:
        """The options that can change this verifier's verdicts, defaults included."""
        args, kwargs = getattr(self, "_built_with", ((), {}))
        sig = inspect.signature(type(self).__init__)
        bound = sig.bind_partial(self, *args, **kwargs)
        bound.apply_defaults()
        opts: dict[str, Any] = {}
        for pname, param in sig.parameters.items():
            if pname == "self" or pname not in bound.arguments:
                continue
            if param.kind is param.VAR_KEYWORD:
                opts.update(bound.arguments[pname])
            elif param.kind is not param.VAR_POSITIONAL:
                opts[pname] = bound.arguments[pname]
        if self.verdict_settings is not None:
            return {k: opts[k] for k in sorted(opts) if k in self.verdict_settings}
        return {k: opts[k] for k in sorted(opts) if k not in self.verdict_neutral}

    def identity(self) -> dict[str, Any]:
        """Everything a verdict depends on, for the probe key (JSON-serialisable)."""
        out: dict[str, Any] = {"name": self.name, "version": self.version,
                               "settings": self.settings()}
        if self.libraries:
            out["libraries"] = {d: _installed(d) for d in self.libraries}
        return out

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        raise NotImplementedError

    def score_many(self, items: Sequence[tuple[Problem, Sequence[str]]]) -> list[list[Verdict]]:
        """Score several problems at once; override to overlap work across problems."""
        return [self.score(p, c) for p, c in items]

    def close(self) -> None:
        """Release worker processes or sandboxes."""

    def __enter__(self) -> "Verifier":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@lru_cache(maxsize=None)
def _installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
