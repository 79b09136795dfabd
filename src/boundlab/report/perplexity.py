"""Perplexity of responses under the base model: exp(-mean token log-prob of the response given the
prompt). The paper's evidence that RL-trained models' correct answers are ones the base could
already produce (low perplexity under the base), unlike a stronger teacher's.

- The prompt is the task's prompt rendered as the probe's sampler saw it, tokenized with the
  sampler's rule (special tokens added unless the prompt already starts with BOS); the response is
  the stored completion text, re-tokenized on its own (add_special_tokens=False) and appended. A
  completion is stored without its EOS token, so EOS is not scored.
- Responses with no tokens have no perplexity and are left out (and counted).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np


def sample_responses(rows: Sequence[Any], size: int, seed: int = 0) -> list[Any]:
    """At most `size` rows drawn without replacement with a seeded generator, in (problem, idx)
    order; the same rows and seed always give the same draw."""
    rows = sorted(rows, key=lambda r: (r.problem_id, r.idx))
    if len(rows) <= size:
        return list(rows)
    pick = np.random.default_rng(seed).choice(len(rows), size=size, replace=False)
    return [rows[i] for i in sorted(pick.tolist())]


def draw_per_tag(rows: Sequence[Any], tag_of: Mapping[str, Any], size: int, seed: int = 0
                 ) -> dict[str, list[Any]]:
    """At most `size` rows per tag (`tag_of`: problem id -> tag; rows of untagged problems are left
    out), each tag's draw made by `sample_responses` with the same seed; tags in sorted order."""
    by: dict[str, list[Any]] = {}
    for r in rows:
        tag = tag_of.get(r.problem_id)
        if tag is not None:
            by.setdefault(str(tag), []).append(r)
    return {t: sample_responses(by[t], size, seed) for t in sorted(by)}


def encode_pair(tokenizer: Any, prompt: str, response: str) -> tuple[list[int], list[int]]:
    """Token ids of the prompt (as `HFSampler._encode` makes them) and of the response."""
    bos = tokenizer.bos_token
    add_special = not (bos and prompt.startswith(bos))
    p = tokenizer(prompt, add_special_tokens=add_special)["input_ids"]
    r = tokenizer(response, add_special_tokens=False)["input_ids"]
    return list(p), list(r)


def response_logprobs(model: Any, tokenizer: Any, pairs: Sequence[tuple[str, str]],
                      batch_tokens: int = 4096) -> list[np.ndarray]:
    """Per-token log-probs (float64) of each response given its prompt, in the order of `pairs`.

    Sequences are sorted by length and packed into right-padded batches of at most
    `batch_tokens` padded tokens (one sequence when a single one is longer)."""
    import torch

    enc = [encode_pair(tokenizer, p, r) for p, r in pairs]
    if any(not p for p, _ in enc):
        raise ValueError("a prompt encodes to no tokens: nothing to condition the response on")
    out: list[np.ndarray] = [np.zeros(0)] * len(enc)
    order = sorted(range(len(enc)), key=lambda i: len(enc[i][0]) + len(enc[i][1]))
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        if not enc[i][1]:
            continue
        length = len(enc[i][0]) + len(enc[i][1])
        if cur and length * (len(cur) + 1) > batch_tokens:  # sorted: this is the longest so far
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    with torch.inference_mode():
        for batch in batches:
            seqs = [enc[i][0] + enc[i][1] for i in batch]
            width = max(len(s) for s in seqs)
            ids = torch.full((len(seqs), width), pad, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for j, s in enumerate(seqs):
                ids[j, : len(s)] = torch.tensor(s)
                mask[j, : len(s)] = 1
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
            for j, i in enumerate(batch):
                start, end = len(enc[i][0]), len(seqs[j])
                # The logits at position t predict token t + 1.
                lp = torch.log_softmax(logits[j, start - 1 : end - 1].float(), dim=-1)
                tgt = ids[j, start:end].to(lp.device)
                out[i] = lp.gather(1, tgt[:, None])[:, 0].double().cpu().numpy()
    return out


def perplexity(token_logprobs: Sequence[float]) -> float:
    """exp(-mean log-prob); NaN for an empty response."""
    lp = np.asarray(token_logprobs, dtype=np.float64)
    if lp.size == 0:
        return math.nan
    return float(np.exp(-lp.mean()))
