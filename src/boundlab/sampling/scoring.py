"""Score given completions under a model: the log-probability of each completion's tokens given its
prompt, at a sampling temperature. One scorer for every view and reward that needs it: the
KL-from-base view (`probe/kl_view.py`, sums over the base's cached samples) and the unlikeliness
reward (`algos/shaping.py`, per-token means over a training group).

Prompts are left-padded and completions right-padded in one batch; position ids count real tokens
only, so a row scores as it would alone.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def completion_logprobs(model: Any, prompt_ids: Sequence[Sequence[int]],
                        completion_ids: Sequence[Sequence[int]], temperature: float, pad_id: int,
                        batch_size: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """For each (prompt, completion): the sum over the completion's tokens of
    log softmax(logits / temperature), in float64, and the completion's token count."""
    import torch

    sums: list[float] = []
    counts: list[int] = []
    device = next(model.parameters()).device
    with torch.inference_mode():
        for s in range(0, len(prompt_ids), max(1, batch_size)):
            p_ids, c_ids = prompt_ids[s:s + batch_size], completion_ids[s:s + batch_size]
            lp, lc = max(map(len, p_ids)), max(1, max(map(len, c_ids)))
            ids = torch.full((len(p_ids), lp + lc), pad_id, dtype=torch.long)
            attn = torch.zeros_like(ids)
            cmask = torch.zeros(len(p_ids), lc, dtype=torch.float64)
            for i, (p, c) in enumerate(zip(p_ids, c_ids)):
                ids[i, lp - len(p):lp] = torch.tensor(list(p), dtype=torch.long)
                ids[i, lp:lp + len(c)] = torch.tensor(list(c), dtype=torch.long)
                attn[i, lp - len(p):lp + len(c)] = 1
                cmask[i, :len(c)] = 1
            pos = (attn.cumsum(1) - 1).clamp(min=0)
            logits = model(input_ids=ids.to(device), attention_mask=attn.to(device),
                           position_ids=pos.to(device), use_cache=False).logits
            logits = logits[:, lp - 1:-1].float() / temperature
            logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, lp:].to(device).unsqueeze(-1))
            sums.extend((logp.squeeze(-1).double().cpu() * cmask).sum(1).tolist())
            counts.extend(len(c) for c in c_ids)
    return np.asarray(sums, dtype=np.float64), np.asarray(counts, dtype=np.int64)
