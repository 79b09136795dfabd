"""Sampling a toy model and the pass@k estimator, for a world's own self-checks (`toyworld.measure`,
`toyworld2.audit`); the probe (`boundlab.probe`) has its own, with stores and curves.

Sampling is T=1.0, top_p=1, no top-k by default, batched across problems with left padding: by the
compact decoder (`boundlab.sampling.compact`) where it applies, else `generate`.
"""

from __future__ import annotations

import torch


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021), product form, float64."""
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def sample(model, tokenizer, prompts: list[str], n: int, *, max_new_tokens: int = 32,
           rows_per_batch: int = 512, temperature: float = 1.0, top_p: float = 1.0,
           seed: int = 0, engine: str = "auto") -> list[list[str]]:
    """n completions per prompt, several prompts per call. `engine`: auto (the compact decoder for a
    model it runs exactly, else `generate`) or generate."""
    from boundlab.sampling.compact import CompactDecoder

    torch.manual_seed(seed)
    dec = CompactDecoder.for_model(model, engine)
    rng = torch.Generator().manual_seed(seed)
    per_call = max(1, rows_per_batch // n)
    out: list[list[str]] = []
    for i in range(0, len(prompts), per_call):
        chunk = prompts[i: i + per_call]
        rows = [p for p in chunk for _ in range(n)]
        enc = tokenizer(rows, return_tensors="pt", padding=True, add_special_tokens=False)
        if dec is not None:
            drawn = dec.sample(enc["input_ids"], enc["attention_mask"], max_new_tokens,
                               {tokenizer.eos_token_id}, temperature, top_p, rng)
            texts = tokenizer.batch_decode([ids for ids, _ in drawn], skip_special_tokens=True)
            out.extend(texts[j * n: (j + 1) * n] for j in range(len(chunk)))
            continue
        with torch.no_grad():
            gen = model.generate(**enc, do_sample=True, temperature=temperature, top_p=top_p,
                                 top_k=0, max_new_tokens=max_new_tokens,
                                 pad_token_id=tokenizer.pad_token_id,
                                 eos_token_id=tokenizer.eos_token_id)
        texts = tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        out.extend(texts[j * n: (j + 1) * n] for j in range(len(chunk)))
    return out
