"""What every verifier returns, and the interface it implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

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
