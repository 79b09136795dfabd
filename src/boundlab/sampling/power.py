"""Power sampling: completions from the sharpened sequence distribution pi(y) ∝ p(y)^alpha.

The training-free baseline of issue 39 (Karan & Du 2025, "Reasoning with Sampling: Your Base Model
is Smarter Than You Think", arXiv 2510.14901): sharpening the base's *sequence* distribution is said
to match RL's pass@1 without losing pass@k. Probing it (`probe.py sampler=power`) puts that claim
on the same curves as every trained checkpoint.

- Target: p is the base at the probe temperature T (logits / T, no top-p, no stop strings: both
  would change p and are refused in one line), pi ∝ p^alpha over completions of at most
  max_new_tokens tokens (a completion ends at EOS, or is cut at the limit).
- Proposal q: the base at temperature T / alpha, token by token. Low-temperature sampling sharpens
  each *token's* distribution, which is not p^alpha over sequences (the paper's point);
  `mcmc_steps=0` returns these q samples, the token-level baseline to contrast with.
- Metropolis-Hastings per row: y starts as a q sample; each step picks t uniformly in [0, len(y)),
  resamples the suffix from t under q (y' = y[:t] + suffix, at most max_new_tokens in all) and
  accepts with `log_accept`. The same t is the reverse move's choice (y'[:t] = y[:t] and
  len(y') > t), so detailed balance holds for each t, hence for the kernel; its 1/len(y) is in the
  ratio. tests/unit/test_power_sampler.py checks pi K = pi exactly by enumeration.

Departures from the paper: the paper resamples blocks of a fixed size in a sequence grown block by
block with a schedule of intermediate targets; here the whole completion is the state from the
start and t is uniform over it (the simpler kernel the issue asks for, exact for any mcmc_steps as
a stationary chain, not a claim of mixing). Sampling is one row at a time with a KV cache and a
per-row torch.Generator seeded from the probe's seed and the row's index in the call, so a row's
draws do not depend on how rows are batched. Each sample costs mcmc_steps + 1 generations and as
many scoring passes. Everything stays in token ids; text is decoded only for the Completion.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from typing import Any, Sequence

import torch
from transformers import DynamicCache

from boundlab.config import ConfigError
from boundlab.sampling.base import Completion, GenSettings, Sampler, prompt_token_ids


def log_accept(alpha: float, logp_cur: float, logp_new: float, logq_cur_suffix: float,
               logq_new_suffix: float, len_cur: int, len_new: int) -> float:
    """log of the Metropolis-Hastings ratio for the move y -> y' that resampled the suffix from t.

    logp_*: log p of the whole completion (at temperature T); logq_*_suffix: log q of its tokens
    from t on given the shared prefix (the proposal's probability of drawing that suffix);
    len_*: completion lengths (t is uniform in [0, len), so choosing it has probability 1/len)."""
    return (alpha * (logp_new - logp_cur) + logq_cur_suffix - logq_new_suffix
            + math.log(len_cur) - math.log(len_new))


def row_seed(seed: int, index: int) -> int:
    """A row's generator seed: from the call's seed and the row's index only."""
    return int.from_bytes(hashlib.sha256(f"power:{seed}:{index}".encode()).digest()[:8], "little") >> 1


class PowerSampler(Sampler):
    name = "power"

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 64, alpha: float = 4.0,
                 mcmc_steps: int = 8):
        if not alpha >= 1:
            raise ConfigError(f"sampler.power.alpha={alpha}: must be >= 1 (1 = the base itself)")
        if mcmc_steps < 0:
            raise ConfigError(f"sampler.power.mcmc_steps={mcmc_steps}: must be >= 0 "
                              "(0 = plain samples at temperature T / alpha)")
        self.model = model
        self.tok = tokenizer
        self.alpha = float(alpha)
        self.mcmc_steps = int(mcmc_steps)
        self.rows_per_call = int(batch_size)
        self.device = next(model.parameters()).device
        eos = model.generation_config.eos_token_id
        if eos is None:
            eos = tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, (list, tuple)) else [eos])
        # transformers 5.x renamed `past_key_values` to `cache` (the old name warns, then goes).
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    def key_engine(self, settings: GenSettings) -> str:
        """Part of the probe key: samples of another alpha, step count or plain sampling never mix."""
        return f"power:alpha={self.alpha:g}:steps={self.mcmc_steps}"

    def check(self, s: GenSettings) -> None:
        if not s.temperature > 0:
            raise ConfigError(f"probe.temperature={s.temperature}: sampler=power needs a temperature "
                              "> 0 (p is the base at that temperature)")
        if s.top_p != 1.0:
            raise ConfigError(f"probe.top_p={s.top_p}: sampler=power needs top_p=1 (top-p would change "
                              "p, whose power it samples)")
        if s.stop:
            raise ConfigError(f"probe.stop={list(s.stop)}: sampler=power takes no stop strings (they "
                              "would cut completions outside p); leave probe.stop empty")

    @torch.inference_mode()
    def generate(self, requests: Sequence[tuple[str, int]], settings: GenSettings,
                 seed: int) -> list[list[Completion]]:
        self.check(settings)
        prompts = [p for p, _ in requests]
        ids = prompt_token_ids(self.tok, prompts)
        grouped, row = [], 0
        for pids, (_, count) in zip(ids, requests):
            out = []
            for _ in range(count):
                gen = torch.Generator().manual_seed(row_seed(seed, row))
                y, finish = self.sample_ids(pids, settings, gen)
                body = y[:-1] if finish == "eos" else y
                out.append(Completion(self.tok.decode(body, skip_special_tokens=True), len(y), finish,
                                      None))
                row += 1
            grouped.append(out)
        return grouped

    # -- the chain -------------------------------------------------------------------------------
    @torch.inference_mode()
    def sample_ids(self, prompt: list[int], s: GenSettings, gen: torch.Generator
                   ) -> tuple[list[int], str]:
        """One completion (token ids, EOS included if it ended there) and its finish."""
        T, limit = s.temperature, s.max_new_tokens
        q_temp = T / self.alpha
        y = self.extend(prompt, [], limit, q_temp, gen)
        lp, lq = self.score(prompt, y, T)
        for _ in range(self.mcmc_steps if y else 0):
            t = int(torch.randint(len(y), (1,), generator=gen))
            new = y[:t] + self.extend(prompt, y[:t], limit - t, q_temp, gen)
            lp_new, lq_new = self.score(prompt, new, T)
            la = log_accept(self.alpha, sum(lp), sum(lp_new), sum(lq[t:]), sum(lq_new[t:]),
                            len(y), len(new))
            u = float(torch.rand(1, generator=gen, dtype=torch.float64))
            if la >= 0 or u < math.exp(la):  # (u may be 0: no log of it)
                y, lp, lq = new, lp_new, lq_new
        return y, ("eos" if y and y[-1] in self.eos_ids else "length")

    def extend(self, prompt: list[int], prefix: list[int], budget: int, temperature: float,
               gen: torch.Generator) -> list[int]:
        """Up to `budget` tokens drawn at `temperature` after prompt + prefix, ending at EOS."""
        out: list[int] = []
        inp = torch.tensor([prompt + prefix], device=self.device)
        cache = {self._cache_arg: DynamicCache()}  # filled in place by each forward
        while len(out) < budget:
            logits = self.model(input_ids=inp, use_cache=True, logits_to_keep=1, **cache).logits
            probs = torch.softmax(logits[0, -1].double().cpu() / temperature, dim=-1)
            tok = int(torch.multinomial(probs, 1, generator=gen))
            out.append(tok)
            if tok in self.eos_ids:
                break
            inp = torch.tensor([[tok]], device=self.device)
        return out

    def score(self, prompt: list[int], y: list[int], temperature: float
              ) -> tuple[list[float], list[float]]:
        """Per-position log p (logits / T) and log q (logits / (T / alpha)) of each token of y given
        the prompt and the tokens before it, from one forward pass."""
        if not y:
            return [], []
        if not prompt:
            raise ValueError("power sampling needs a prompt of at least one token")
        ids = torch.tensor([prompt + y], device=self.device)
        logits = self.model(input_ids=ids).logits[0, len(prompt) - 1 : -1].double().cpu()
        target = torch.tensor(y).unsqueeze(1)
        lp = torch.log_softmax(logits / temperature, -1).gather(1, target).squeeze(1)
        lq = torch.log_softmax(logits * (self.alpha / temperature), -1).gather(1, target).squeeze(1)
        return lp.tolist(), lq.tolist()
