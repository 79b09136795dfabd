"""The on-policy trainer's vLLM rollouts (`rollout=vllm_colocate|vllm_server`), through TRL's public
`VLLMGeneration`: it owns the engine (a colocated `LLM` or a client to `trl vllm-serve`), the weight
pushes (ZeRO-3 gathers and PEFT merges included) and the server's prefix-cache reset. This module only
decides when weights are pushed (once per optimizer step, before the step's first generation: DAPO's
refill rounds in the same step reuse them) and turns the engine's token lists into the trainer's
right-padded completion tensor.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor


def pad_completions(completions: list[list[int]], pad_id: int) -> tuple[Tensor, Tensor]:
    """Right-pad token lists into ids [N, L] and a float mask [N, L] of the sampled tokens (L >= 1).
    The mask is what the engine returned, end token included, never the padding: a row that
    stopped at an end token other than the tokenizer's EOS is not extended into its padding."""
    width = max([len(c) for c in completions] + [1])
    ids = torch.full((len(completions), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(completions), width))
    for i, c in enumerate(completions):
        if c:
            ids[i, :len(c)] = torch.tensor(list(c), dtype=torch.long)
            mask[i, :len(c)] = 1.0
    return ids, mask


class VLLMRollouts:
    def __init__(self, policy: Any, accelerator: Any, tokenizer: Any, args: dict[str, Any]):
        from trl.generation.vllm_generation import VLLMGeneration

        self.engine = VLLMGeneration(model=policy, accelerator=accelerator, processing_class=tokenizer, **args)
        self._synced: Optional[int] = None

    def sample(self, prompt_ids: list[list[int]], rollouts: int, step: int) -> list[list[int]]:
        """`rollouts` completions (token ids) per prompt, consecutive, sampled with the weights of
        optimizer step `step`."""
        if self._synced != step:
            self.engine.sync_weights()
            self._synced = step
        repeated = [list(ids) for ids in prompt_ids for _ in range(rollouts)]
        _, completion_ids, _, _ = self.engine.generate(repeated, None, rollouts)
        if len(completion_ids) != len(repeated):
            raise RuntimeError(f"vLLM returned {len(completion_ids)} completions for {len(repeated)} rows")
        return [list(c) for c in completion_ids]
