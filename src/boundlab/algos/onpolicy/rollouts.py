"""A round of rollouts (`Rollouts`) and the data side of a round: each DataLoader batch is one
round of prompts (`RoundSampler`), repeated once per micro-step so HF's step accounting stays exact."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterator, Optional

import torch
from torch import Tensor


@dataclass
class Rollouts:
    """Completions of one round, `rollouts` consecutive rows per prompt."""
    prompt_ids: Tensor                      # [N, Lp], left-padded
    prompt_mask: Tensor                     # [N, Lp]
    completion_ids: Tensor                  # [N, Lc], right-padded
    completion_mask: Tensor                 # [N, Lc] float, through the first EOS
    rewards: Tensor                         # [N] sum of the reward functions (what is logged)
    scores: Tensor                          # [N] rewards + overlong shaping (what is optimised)
    greedy_scores: Optional[Tensor] = None  # [N] ReMax: the score of the prompt's greedy completion
    old_logp: Optional[Tensor] = None       # [N, Lc] behaviour policy, when needed
    ref_logp: Optional[Tensor] = None       # [N, Lc]
    old_values: Optional[Tensor] = None     # [N, Lc] critic at rollout time
    advantages: Optional[Tensor] = None     # [N, Lc]
    returns: Optional[Tensor] = None        # [N, Lc] value targets

    def __len__(self) -> int:
        return self.prompt_ids.size(0)

    def rows(self, idx: Tensor) -> "Rollouts":
        return Rollouts(**{f.name: None if getattr(self, f.name) is None else getattr(self, f.name)[idx]
                           for f in fields(self)})

    @staticmethod
    def cat(parts: list["Rollouts"], pad_id: int) -> "Rollouts":
        def pad(ts: list[Tensor], value: float, left: bool) -> Tensor:
            width = max(x.size(1) for x in ts)
            out = []
            for x in ts:
                filler = x.new_full((x.size(0), width - x.size(1)), value)
                out.append(torch.cat([filler, x] if left else [x, filler], 1))
            return torch.cat(out)

        return Rollouts(
            prompt_ids=pad([p.prompt_ids for p in parts], pad_id, True),
            prompt_mask=pad([p.prompt_mask for p in parts], 0, True),
            completion_ids=pad([p.completion_ids for p in parts], pad_id, False),
            completion_mask=pad([p.completion_mask for p in parts], 0, False),
            rewards=torch.cat([p.rewards for p in parts]),
            scores=torch.cat([p.scores for p in parts]),
            greedy_scores=(None if parts[0].greedy_scores is None
                           else torch.cat([p.greedy_scores for p in parts])),
        )

    def to(self, device: Any) -> "Rollouts":
        return Rollouts(**{f.name: None if getattr(self, f.name) is None else getattr(self, f.name).to(device)
                           for f in fields(self)})

    def trimmed(self) -> "Rollouts":
        """Drop all-padding columns (left of the prompts, right of the completions) to save compute."""
        first = int(self.prompt_mask.any(0).float().argmax())
        last = int(self.completion_mask.any(0).nonzero().max()) + 1
        out = {}
        for f in fields(self):
            x = getattr(self, f.name)
            if f.name.startswith("prompt"):
                x = x[:, first:]
            elif x is not None and x.dim() == 2:
                x = x[:, :last]
            out[f.name] = x
        return Rollouts(**out)


# ---- data: one batch = one round of prompts ----

class RoundSampler:
    """A batch sampler. Each round takes `per_round * world` prompts from a seeded permutation of the
    dataset; this process's `per_round` of them form the batch, yielded `repeats` times (once per
    micro-step of the round). It shards by process itself, so the DataLoader is not passed through
    accelerate's sharding (which would deal the repeats out to different processes)."""

    def __init__(self, n: int, per_round: int, repeats: int, rank: int, world: int, seed: int):
        self.n, self.per_round, self.repeats = n, per_round, repeats
        self.rank, self.world, self.seed = rank, world, seed
        self.epoch = 0
        self.rounds = n // (per_round * world)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.rounds * self.repeats

    def __iter__(self) -> Iterator[list[int]]:
        g = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        perm = torch.randperm(self.n, generator=g).tolist()
        span = self.per_round * self.world
        for r in range(self.rounds):
            start = r * span + self.rank * self.per_round
            batch = perm[start:start + self.per_round]
            for _ in range(self.repeats):
                yield batch


def _collate(features: list[dict[str, Any]]) -> dict[str, list[Any]]:
    # Prompts stay strings (tokenised at generation time); every other column (problem_id, ...)
    # passes through to the reward functions.
    return {k: [f[k] for f in features] for k in features[0]}

