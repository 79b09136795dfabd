"""The sampler interface: prompts in, completions out, one engine behind each implementation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Completion:
    text: str
    # Generated tokens up to and including EOS (or the stop string), excluding padding.
    n_tokens: int
    # Why generation ended: "eos", "stop" (a stop string) or "length" (max_new_tokens).
    finish: str = "eos"
    # Mean per-token entropy (nats) of the distribution each of its n_tokens tokens was drawn
    # from, after temperature and top-p (`token_entropy`); None where the sampler does not
    # record it (greedy decoding, vLLM, external samples).
    entropy: float | None = None


@dataclass(frozen=True)
class GenSettings:
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()


class Sampler:
    """Draws `count` completions for each prompt.

    `rows_per_call` tells the probe how many (prompt x sample) rows to hand over per call: the
    batch for `generate`, or a large chunk for engines that schedule their own batches (vLLM).
    """

    name = "base"
    rows_per_call = 64

    def generate(self, requests: Sequence[tuple[str, int]], settings: GenSettings,
                 seed: int) -> list[list[Completion]]:
        raise NotImplementedError

    def close(self) -> None:
        pass


def eos_and_pad(model: Any, tokenizer: Any) -> tuple[set[int], int]:
    """The token ids that end a completion (the model's generation config, else the tokenizer's) and
    the id that pads a batch (the tokenizer's pad token, else the smallest end id)."""
    eos = model.generation_config.eos_token_id
    if eos is None:
        eos = tokenizer.eos_token_id
    eos_ids = set(eos if isinstance(eos, (list, tuple)) else [eos])
    pad = getattr(tokenizer, "pad_token_id", None) if tokenizer is not None else None
    return eos_ids, (pad if pad is not None else min(eos_ids))


def add_special_tokens_for(tokenizer: Any, prompts: Sequence[str]) -> bool:
    """Whether tokenising `prompts` should add the tokenizer's special tokens: not when every prompt
    already starts with BOS (a chat template contains it; a second BOS shifts the distribution)."""
    bos = tokenizer.bos_token
    return not (bos and all(p.startswith(bos) for p in prompts))


def prompt_token_ids(tokenizer: Any, prompts: Sequence[str]) -> list[list[int]]:
    """The prompt tokens every sampler feeds its engine (hf pads them; vLLM takes them as they are)."""
    enc = tokenizer(list(prompts), add_special_tokens=add_special_tokens_for(tokenizer, prompts))
    return [list(ids) for ids in enc["input_ids"]]


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut `text` at the first occurrence of any stop string (the stop string is dropped)."""
    first = -1
    for s in stop:
        if not s:
            continue
        i = text.find(s)
        if i != -1 and (first == -1 or i < first):
            first = i
    if first == -1:
        return text, False
    return text[:first], True


def token_entropy(scores: "torch.Tensor") -> "torch.Tensor":
    """Entropy (nats) of softmax(scores) per row, in float32: `scores` [B, V] are the logits the
    token is drawn from (already divided by the temperature; -inf where top-p cut a token)."""
    import torch

    logp = torch.log_softmax(scores.float(), dim=-1)
    # p log p -> 0 where p = 0 (a cut token's -inf log-probability would give nan).
    plogp = torch.where(torch.isfinite(logp), logp.exp() * logp, torch.zeros((), dtype=logp.dtype))
    return -plogp.sum(-1)
