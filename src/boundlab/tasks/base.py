"""Problems and tasks.

A *problem* is a prompt plus what is needed to check an answer. A *task* is a named list of
problems, a prompt template and the name of the verifier that judges completions.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Problem:
    problem_id: str
    # The question text, before any template is applied.
    question: str
    # The gold answer (math/toy), or "" for code tasks whose check lives in `meta`.
    answer: str
    # Task-specific data: tags for breakdowns (level, subject, hard/easy), unit tests, entry points.
    meta: dict[str, Any] = field(default_factory=dict)
    # Image files shown with the question (visual tasks), absolute paths; empty for text tasks.
    images: list[str] = field(default_factory=list)


@dataclass
class Task:
    name: str
    problems: list[Problem]
    # Prompt text in which `{question}` is replaced by the problem's question. Only that field is
    # substituted; every other brace is literal (a math prompt's `\boxed{}` must survive, which
    # str.format would read as a positional field).
    template: str = "{question}"
    # Name of the verifier in `boundlab.verify.VERIFIERS`.
    verifier: str = "math"
    # Apply the tokenizer's chat template (when it has one) around the rendered prompt.
    chat: bool = False
    # Optional system message used with the chat template.
    system: str | None = None
    # The Problem.meta key every boundary table and plot breaks down by (the toy world: "tier");
    # None = no breakdown. It changes no sample or verdict, so it is not in the fingerprint.
    group_by: str | None = None
    # The natural order of the group tags (a world's tiers: E, H1, H2, ...) for every table and plot;
    # tags it does not name follow in first-seen order. Empty: first-seen order.
    group_order: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        ids = [p.problem_id for p in self.problems]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise ValueError(f"task {self.name!r}: duplicate problem_id(s) {dup}")
        self._by_id = {p.problem_id: p for p in self.problems}

    def __len__(self) -> int:
        return len(self.problems)

    def by_id(self, problem_id: str) -> Problem:
        return self._by_id[problem_id]

    def has(self, problem_id: str) -> bool:
        return problem_id in self._by_id

    def with_problems(self, problems: list[Problem]) -> "Task":
        """The same task (template, verifier, chat settings) over a subset of its problems."""
        return Task(self.name, problems, self.template, self.verifier, self.chat, self.system,
                    self.group_by, self.group_order)

    def messages(self, problem: Problem) -> list[dict[str, str]]:
        """The chat turns of a problem: the system message (when the task has one), then the user
        turn (the template applied to the question)."""
        text = self.template.replace("{question}", problem.question)
        return ([{"role": "system", "content": self.system}] if self.system else []) + \
            [{"role": "user", "content": text}]

    def groups(self) -> dict[str, list[int]]:
        """{tag: problem indices} by `group_by`, tags in `group_order` (then first-seen order); {}
        without group_by. Every problem must carry the key (a ValueError names one that does not)."""
        if not self.group_by:
            return {}
        from boundlab.config import ConfigError  # a user error: one line, exit 2 (boundlab.cli)

        out: dict[str, list[int]] = {}
        for i, p in enumerate(self.problems):
            if self.group_by not in p.meta or p.meta[self.group_by] is None:
                raise ConfigError(f"task.group_by={self.group_by}: problem {p.problem_id!r} of task "
                                  f"{self.name!r} has no meta[{self.group_by!r}] to group by")
            out.setdefault(str(p.meta[self.group_by]), []).append(i)
        rank = {t: j for j, t in enumerate(self.group_order)}
        first = {t: j for j, t in enumerate(out)}
        return {t: out[t] for t in sorted(out, key=lambda t: (rank.get(t, len(rank)), first[t]))}

    def vision_messages(self, problem: Problem) -> list[dict[str, Any]]:
        """The chat turns of a problem with images, in the structured form a VLM processor's chat
        template reads: the system message (when the task has one), then a user turn of one image
        block per image followed by the text (the order of Qwen2.5-VL's own examples). Only blocks
        make the template write the image placeholder (Qwen: <|vision_start|><|image_pad|>
        <|vision_end|>); a string user turn would leave the processor nowhere to put the image."""
        text = self.template.replace("{question}", problem.question)
        system = [{"role": "system", "content": [{"type": "text", "text": self.system}]}] if self.system else []
        return system + [{"role": "user", "content": [{"type": "image"} for _ in problem.images]
                          + [{"type": "text", "text": text}]}]

    def render(self, problem: Problem, tokenizer: Any = None) -> str:
        """The exact prompt string a sampler feeds the model. `tokenizer` may be a vision-language
        model's processor: then a chat task's problem with images is rendered by the processor's
        chat template from `vision_messages`, and any prompt of a problem with images must hold one
        image placeholder (the processor's `image_token`) per image."""
        proc = tokenizer if is_processor(tokenizer) else None
        if self.chat and proc is not None and problem.images and getattr(proc, "chat_template", None):
            text = proc.apply_chat_template(self.vision_messages(problem), tokenize=False,
                                            add_generation_prompt=True)
        else:
            tok = proc.tokenizer if proc is not None else tokenizer
            if self.chat and tok is not None and getattr(tok, "chat_template", None):
                text = tok.apply_chat_template(self.messages(problem), tokenize=False,
                                               add_generation_prompt=True)
            else:
                text = self.template.replace("{question}", problem.question)
        token = getattr(proc, "image_token", None)
        if token and problem.images and text.count(token) != len(problem.images):
            raise ValueError(f"problem {problem.problem_id!r} of task {self.name!r}: its prompt holds "
                             f"{text.count(token)} image placeholder(s) ({token!r}) for "
                             f"{len(problem.images)} image(s)")
        return text

    def has_images(self) -> bool:
        return any(p.images for p in self.problems)

    def fingerprint(self) -> str:
        """Changes whenever anything that affects sampling or scoring changes. A problem with images
        adds the sha256 of each image's bytes (not its path: a redrawn image must change the key, a
        moved one must not); a text problem hashes exactly as before images existed."""
        h = hashlib.sha256()
        head = {"name": self.name, "template": self.template, "verifier": self.verifier,
                "chat": self.chat, "system": self.system}
        h.update(json.dumps(head, sort_keys=True).encode())
        for p in self.problems:
            h.update(json.dumps([p.problem_id, p.question, p.answer, p.meta], sort_keys=True,
                                default=str).encode())
            if p.images:
                h.update(json.dumps(["images", [image_sha256(f) for f in p.images]]).encode())
        return h.hexdigest()[:16]


def is_processor(obj: Any) -> bool:
    """A multimodal processor (a tokenizer plus an image processor), as opposed to a tokenizer."""
    return obj is not None and hasattr(obj, "tokenizer") and hasattr(obj, "image_processor")


def image_sha256(path: str) -> str:
    """sha256 of an image file's bytes, cached by (path, size, mtime): a task's fingerprint is taken
    several times per probe, and a visual task has hundreds of images."""
    import os

    try:
        st = os.stat(path)
    except OSError as e:
        raise FileNotFoundError(f"image {path!r} of a task problem cannot be read ({e.strerror})") from None
    return _image_sha256(path, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=65536)
def _image_sha256(path: str, size: int, mtime_ns: int) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()
