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
a stationary chain, not a claim of mixing). The rows of a call run their chains in lockstep
(left-padded batched forwards with a KV cache, `sampler.batch_size` rows at a time); each row draws
from its own torch.Generator, seeded from the probe's seed and the row's index in the call, in the
same order whatever the batch (tokens by the inverse CDF of one uniform each), so a row's draws do
not depend on how rows are batched (up to float rounding of padded batches flipping a draw). Each sample costs mcmc_steps + 1 generations and as
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
from boundlab.sampling.base import Completion, GenSettings, Sampler, eos_and_pad, prompt_token_ids


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
        self.eos_ids, self.pad_id = eos_and_pad(model, tokenizer)
        # transformers 5.x renamed `past_key_values` to `cache` (the old name warns, then goes).
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    def key_engine(self, settings: GenSettings) -> str:
        """Part of the probe key: samples of another alpha, step count or plain sampling never mix."""
        a = f"{self.alpha:g}"
        if float(a) != self.alpha:  # :g keeps 6 digits; two alphas must never share a key
            a = repr(self.alpha)
        return f"power:alpha={a}:steps={self.mcmc_steps}"

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
        ids = prompt_token_ids(self.tok, [p for p, _ in requests])
        rows = [pids for pids, (_, count) in zip(ids, requests) for _ in range(count)]
        gens = [torch.Generator().manual_seed(row_seed(seed, i)) for i in range(len(rows))]
        drawn: list[tuple[list[int], str]] = []
        for start in range(0, len(rows), self.rows_per_call):
            end = start + self.rows_per_call
            drawn.extend(self.sample_rows(rows[start:end], settings, gens[start:end]))
        comps = [Completion(self.tok.decode(y[:-1] if fin == "eos" else y, skip_special_tokens=True),
                            len(y), fin, None) for y, fin in drawn]
        grouped, i = [], 0
        for _, count in requests:
            grouped.append(comps[i : i + count])
            i += count
        return grouped

    # -- the chains ------------------------------------------------------------------------------
    def sample_ids(self, prompt: list[int], s: GenSettings, gen: torch.Generator
                   ) -> tuple[list[int], str]:
        """One completion (token ids, EOS included if it ended there) and its finish."""
        return self.sample_rows([prompt], s, [gen])[0]

    @torch.inference_mode()
    def sample_rows(self, prompts: list[list[int]], s: GenSettings, gens: list[torch.Generator]
                    ) -> list[tuple[list[int], str]]:
        """One chain per row, run in lockstep (batched forwards); row i draws only from gens[i],
        in the same order whatever the batch, so its result does not depend on the other rows."""
        T, limit = s.temperature, s.max_new_tokens
        q_temp = T / self.alpha
        ys = self.extend_rows(prompts, [limit] * len(prompts), q_temp, gens)
        scores = self.score_rows(prompts, ys, T)
        for _ in range(self.mcmc_steps):
            live = [i for i, y in enumerate(ys) if y]
            if not live:
                break
            ts = {i: int(torch.randint(len(ys[i]), (1,), generator=gens[i])) for i in live}
            suffixes = self.extend_rows([prompts[i] + ys[i][: ts[i]] for i in live],
                                        [limit - ts[i] for i in live], q_temp, [gens[i] for i in live])
            news = [ys[i][: ts[i]] + suf for i, suf in zip(live, suffixes)]
            new_scores = self.score_rows([prompts[i] for i in live], news, T)
            for i, new, (lp_new, lq_new) in zip(live, news, new_scores):
                (lp, lq), t = scores[i], ts[i]
                la = log_accept(self.alpha, sum(lp), sum(lp_new), sum(lq[t:]), sum(lq_new[t:]),
                                len(ys[i]), len(new))
                u = float(torch.rand(1, generator=gens[i], dtype=torch.float64))
                if la >= 0 or u < math.exp(la):  # (u may be 0: no log of it)
                    ys[i], scores[i] = new, (lp_new, lq_new)
        return [(y, "eos" if y and y[-1] in self.eos_ids else "length") for y in ys]

    def _padded(self, seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Left-padded ids, attention mask and position ids (positions count real tokens only)."""
        width = max(len(x) for x in seqs)
        ids = torch.tensor([[self.pad_id] * (width - len(x)) + x for x in seqs], device=self.device)
        attn = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in seqs], device=self.device)
        return ids, attn, (attn.cumsum(-1) - 1).clamp(min=0)

    def extend_rows(self, starts: list[list[int]], budgets: list[int], temperature: float,
                    gens: list[torch.Generator]) -> list[list[int]]:
        """Per row, up to budgets[i] tokens drawn at `temperature` after starts[i], ending at EOS.
        Row i's token is the inverse CDF of one uniform from gens[i]."""
        if any(not x for x in starts):
            raise ValueError("power sampling needs a prompt of at least one token")
        out: list[list[int]] = [[] for _ in starts]
        live = [b > 0 for b in budgets]
        ids, attn, pos = self._padded(starts)
        cache = {self._cache_arg: DynamicCache()}  # filled in place by each forward
        while any(live):
            logits = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True,
                                logits_to_keep=1, **cache).logits[:, -1]
            cdf = torch.softmax(logits.double().cpu() / temperature, dim=-1).cumsum(-1)
            nxt = []
            for i in range(len(starts)):
                tok = self.pad_id
                if live[i]:
                    u = torch.rand(1, generator=gens[i], dtype=torch.float64)
                    tok = min(int(torch.searchsorted(cdf[i], u * cdf[i, -1], right=True)),
                              cdf.shape[1] - 1)
                    out[i].append(tok)
                    live[i] = tok not in self.eos_ids and len(out[i]) < budgets[i]
                nxt.append(tok)
            ids = torch.tensor(nxt, device=self.device).unsqueeze(1)
            attn = torch.cat([attn, torch.ones_like(ids)], dim=1)
            pos = pos[:, -1:] + 1
        return out

    def score(self, prompt: list[int], y: list[int], temperature: float
              ) -> tuple[list[float], list[float]]:
        """Per-position log p (logits / T) and log q (logits / (T / alpha)) of each token of y given
        the prompt and the tokens before it."""
        return self.score_rows([prompt], [y], temperature)[0]

    def score_rows(self, prompts: list[list[int]], ys: list[list[int]], temperature: float
                   ) -> list[tuple[list[float], list[float]]]:
        """`score` for many rows, from one left-padded forward pass."""
        if any(not x for x in prompts):
            raise ValueError("power sampling needs a prompt of at least one token")
        out: list[tuple[list[float], list[float]]] = [([], []) for _ in ys]
        rows = [i for i, y in enumerate(ys) if y]
        if not rows:
            return out
        ids, attn, pos = self._padded([prompts[i] + ys[i] for i in rows])
        logits = self.model(input_ids=ids, attention_mask=attn, position_ids=pos).logits
        width = ids.shape[1]
        for r, i in enumerate(rows):
            n = len(ys[i])
            at = logits[r, width - n - 1 : width - 1].double().cpu()
            target = torch.tensor(ys[i]).unsqueeze(1)
            lp = torch.log_softmax(at / temperature, -1).gather(1, target).squeeze(1)
            lq = torch.log_softmax(at * (self.alpha / temperature), -1).gather(1, target).squeeze(1)
            out[i] = (lp.tolist(), lq.tolist())
        return out
