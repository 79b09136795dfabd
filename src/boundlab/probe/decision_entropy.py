"""The entropy view split into decision tokens and the rest (toy world 2).

The stored entropy (`boundlab.probe.entropy`) is one mean per sample over all its tokens. RL's extra
entropy can be execution noise (a slip's digits) while its decision tokens collapse, so the mean
over all tokens can hide the one thing the temperature control is meant to restore. Here the
entropies are split: *decision tokens* are the characters where a toy2 trace makes a strategy
choice (`boundlab.worlds.toyworld2.decisions.decision_offsets`, reached through the toy2 verifier's
`decision_offsets` method, since the probe layer never imports a world); the rest is every other
token of the completion text.

Per-token entropies are not stored, so they are recomputed by scoring the stored completion under
the model (teacher forcing): the entropy at completion token t is that of the distribution it was
drawn from, the logits at position t - 1 warped by the probe's temperature and top-p exactly as the
samplers warp them (`CompactDecoder._warp`, `token_entropy`). The EOS token the sampler also drew
is not in the stored text, so it is in neither part (the per-sample mean in the store includes it).

Both parts are pooled token means (sum of entropies / tokens) over the samples given: a sample with
no decision token (a bare `A:24` at a state with no choice, an easy problem) adds to the rest only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence


@dataclass(frozen=True)
class Split:
    decision_sum: float = 0.0
    decision_tokens: int = 0
    rest_sum: float = 0.0
    rest_tokens: int = 0

    def __add__(self, o: "Split") -> "Split":
        return Split(self.decision_sum + o.decision_sum, self.decision_tokens + o.decision_tokens,
                     self.rest_sum + o.rest_sum, self.rest_tokens + o.rest_tokens)

    @property
    def decision(self) -> float:
        """Mean entropy (nats) over decision tokens; NaN when there is none."""
        return self.decision_sum / self.decision_tokens if self.decision_tokens else float("nan")

    @property
    def rest(self) -> float:
        return self.rest_sum / self.rest_tokens if self.rest_tokens else float("nan")

    def fields(self) -> dict[str, Any]:
        return {"decision_entropy": self.decision, "decision_tokens": self.decision_tokens,
                "rest_entropy": self.rest, "rest_tokens": self.rest_tokens}


def split(entropies: Sequence[float], spans: Sequence[tuple[int, int]], offsets: Iterable[int]) -> Split:
    """One sample's split: token i (character span spans[i] of the text) is a decision token when a
    decision offset falls in its span. An empty span (a special token) is never one."""
    if len(entropies) != len(spans):
        raise ValueError(f"{len(entropies)} entropies for {len(spans)} tokens")
    at = set(offsets)
    d_sum = r_sum = 0.0
    d_n = r_n = 0
    for h, (a, b) in zip(entropies, spans):
        if any(a <= o < b for o in at):
            d_sum += float(h)
            d_n += 1
        else:
            r_sum += float(h)
            r_n += 1
    return Split(d_sum, d_n, r_sum, r_n)


def token_spans(tok: Any, ids: Sequence[int]) -> list[tuple[int, int]]:
    """Character span of each token in the decoded text (each token decoded alone, special tokens
    as ''): exact for the toy worlds' character tokenizers."""
    spans, pos = [], 0
    for i in ids:
        piece = tok.decode([i], skip_special_tokens=True)
        spans.append((pos, pos + len(piece)))
        pos += len(piece)
    return spans


def token_entropies(model: Any, tok: Any, prompt: str, completion: str, temperature: float,
                    top_p: float = 1.0) -> tuple[list[float], list[int]]:
    """(entropy of each completion token's sampling distribution, the completion's token ids),
    by one forward pass over prompt + completion."""
    import torch

    from boundlab.sampling.base import prompt_token_ids, token_entropy
    from boundlab.sampling.compact import CompactDecoder

    if temperature <= 0:
        raise ValueError("a decision-token entropy needs a sampling temperature > 0 (greedy has none)")
    p_ids = prompt_token_ids(tok, [prompt])[0]
    c_ids = list(tok(completion, add_special_tokens=False)["input_ids"])
    if not c_ids:
        return [], []
    device = next(model.parameters()).device
    ids = torch.tensor([p_ids + c_ids], device=device)
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0, len(p_ids) - 1: len(p_ids) + len(c_ids) - 1]
        ent = token_entropy(CompactDecoder._warp(logits.float(), temperature, top_p))
    return [float(h) for h in ent.cpu()], c_ids


def sample_split(model: Any, tok: Any, prompt: str, completion: str, offsets: Iterable[int],
                 temperature: float, top_p: float = 1.0) -> Split:
    """One completion's decision/rest split at the given sampling settings, its decision tokens at
    the character `offsets` of the completion."""
    ent, ids = token_entropies(model, tok, prompt, completion, temperature, top_p)
    return split(ent, token_spans(tok, ids), offsets)


# (problem, completion) -> character offsets of its decision tokens: the world's own rule, e.g. the
# toy2 verifier's `decision_offsets` (this layer never imports a world).
Offsets = Callable[[Any, str], Sequence[int]]


def probe_split(store: Any, key: str, task: Any, model: Any, tok: Any, temperature: float,
                offsets: Offsets, top_p: float = 1.0, n_max: int | None = None) -> Split:
    """The pooled split over each of `task`'s problems' first n_max stored samples of probe `key`."""
    from boundlab.probe.store import dropped_error

    total = Split()
    for problem in task.problems:
        rows = store.samples(key, problem.problem_id)[: n_max or None]
        dropped = sum(r.text is None for r in rows)
        if dropped:
            raise dropped_error(dropped, "the decision-token entropy", key)
        prompt = task.render(problem, tok)
        for r in rows:
            total = total + sample_split(model, tok, prompt, r.text, offsets(problem, r.text),
                                         temperature, top_p)
    return total
