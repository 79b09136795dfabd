"""The unlikeliness reward (He et al. 2025, arXiv 2506.02355) on TRL's GRPOTrainer and RLOOTrainer.

The math is `objectives.unlikeliness_rewards` (the on-policy trainer applies it to its own rollouts).
TRL computes advantages inside `_generate_and_score_completions` from the sum of its reward
functions, and a reward function sees text and token ids, not log-probs. Of the two ways in, a
subclass overriding TRL's private `_calculate_rewards`, or a reward function that computes the
log-probs itself, this takes the second: reward functions are TRL's public surface (DESIGN, style 5),
and the cost is one extra no-grad forward pass over the completions per generation round.

How: `with_unlikeliness` wraps the task's reward functions so each records what it returned, and
appends one more reward function, `unlikeliness`, which TRL calls after them in the same round (it
calls synchronous reward functions in list order). It returns, for each completion, the change the
shaping makes: R_i * (1 - beta * rank_i / G) - R_i, R_i the recorded sum, rank_i by the mean token
log-prob of the completion under the model being trained (logits / temperature, the sampling
distribution). TRL sums the functions, so the total is the shaped reward; `rewards/unlikeliness/mean`
in the logs is the mean change (<= 0).

Departures, and why: the log-prob is recomputed from the prompt text tokenised as TRL tokenises a
plain-text prompt (`processing_class(text=prompts)`); for a chat-formatted prompt this differs from
what TRL fed the model, so the call refuses a prompt that is not a string. Groups must be whole on each process
(TRL deals each process `per_device_train_batch_size` consecutive completions, a multiple of
`algo.rollouts`, checked at start); a split group is refused at run time, never ranked in part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

import numpy as np
import torch

from boundlab.algos import objectives as O

if TYPE_CHECKING:
    from boundlab.config import AlgoConfig

NAME = "unlikeliness"


class _Recorded:
    """A reward function that keeps its last output for the shaping function of the same round."""

    def __init__(self, fn: Callable[..., list], owner: "UnlikelinessReward"):
        self.fn, self.owner = fn, owner
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, *args: Any, **kwargs: Any) -> list:
        out = self.fn(*args, **kwargs)
        self.owner.record(self, kwargs.get("completions"), out)
        return out


class UnlikelinessReward:
    """The appended reward function: see the module docstring. `bind(trainer)` after the trainer is
    built gives it the model, tokenizer and temperature."""

    def __init__(self, beta: float, rollouts: int, base: list[Callable[..., list]]):
        if not 0 < beta <= 1:
            raise ValueError(f"the unlikeliness beta must be in (0, 1], not {beta}")
        self.beta, self.rollouts = float(beta), int(rollouts)
        self.wrapped = [_Recorded(f, self) for f in base]
        self._last: dict[int, tuple[Any, list]] = {}
        self.trainer: Any = None
        self.__name__ = NAME

    def record(self, fn: _Recorded, completions: Any, out: list) -> None:
        self._last[id(fn)] = (completions, out)

    def bind(self, trainer: Any) -> None:
        self.trainer = trainer

    def funcs(self) -> list[Callable[..., list]]:
        """The reward functions to hand TRL: the recorded task rewards, then this one."""
        return [*self.wrapped, self]

    def _base_rewards(self, completions: Any) -> torch.Tensor:
        total = torch.zeros(len(completions), dtype=torch.float64)
        for f in self.wrapped:
            got = self._last.pop(id(f), None)
            if got is None or got[0] is not completions:
                raise RuntimeError(f"unlikeliness reward: reward function {f.__name__} did not run on "
                                   f"this round's completions before it (TRL must call them in order)")
            total += torch.tensor([0.0 if r is None else float(r) for r in got[1]], dtype=torch.float64)
        return total

    def seq_logp(self, prompts: list[str], completion_ids: list[list[int]]) -> torch.Tensor:
        """Mean token log-prob of each completion given its prompt under the bound trainer's model."""
        t = self.trainer
        if t is None:
            raise RuntimeError("unlikeliness reward used before bind(trainer)")
        from boundlab.sampling.scoring import completion_logprobs

        tok, model = t.processing_class, t.model
        temperature = float(getattr(t, "temperature", None) or t.args.temperature)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        sums, counts = completion_logprobs(model, tok(text=prompts)["input_ids"], completion_ids,
                                           temperature, pad, batch_size=max(1, self.rollouts))
        # An empty completion scores 0, as a masked mean over no tokens did.
        return torch.from_numpy(sums / np.maximum(counts, 1))

    def __call__(self, prompts: list[Any], completions: list[Any], completion_ids: Optional[list] = None,
                 **_: Any) -> list[float]:
        k = self.rollouts
        if completion_ids is None:
            raise RuntimeError("unlikeliness reward needs completion_ids (TRL >= 0.20 passes them)")
        if any(not isinstance(p, str) for p in prompts):
            raise ValueError("unlikeliness reward ranks completions of plain-text prompts only")
        if len(prompts) % k or any(len(set(prompts[i:i + k])) != 1 for i in range(0, len(prompts), k)):
            raise RuntimeError(f"unlikeliness reward: this process holds {len(prompts)} completions that "
                               f"are not whole groups of algo.rollouts={k} consecutive rows of one prompt")
        base = self._base_rewards(completions)
        logp = self.seq_logp(prompts, [list(c) for c in completion_ids])
        shaped = O.unlikeliness_rewards(base.view(-1, k), logp.view(-1, k), self.beta).view(-1)
        return (shaped - base).tolist()


def with_unlikeliness(algo: AlgoConfig, reward_funcs: list) -> tuple[list, Optional[UnlikelinessReward]]:
    """The reward functions to hand a TRL trainer, and the shaper to `bind` once it is built (None
    when algo.shaping.unlikeliness is 0)."""
    beta = float(algo.shaping.unlikeliness)
    if beta == 0:
        return list(reward_funcs), None
    shaper = UnlikelinessReward(beta, algo.rollouts, list(reward_funcs))
    return shaper.funcs(), shaper
