"""The shared math of BoundLab's RL trainers: KL estimators, advantages, losses, DAPO's filters.

Every function is small, pure torch, and unit-tested against hand-computed numbers
(`tests/unit/test_objectives.py`). Shapes: a batch of N completions padded to T tokens; `mask` [N, T]
is 1 on a completion's own tokens (through its EOS) and 0 on padding; per-sequence values are [N];
groups (completions of one prompt) are [G, k] or consecutive runs of k rows.

Where this departs from the papers, and why:
- Means and standard deviations over tokens or groups are Bessel-corrected (n - 1), as in verl's
  `masked_whiten` and TRL's group std; the papers do not say which.
- `reinforce_pp_advantages` whitens returns over the valid tokens of the whole batch (REINFORCE++,
  Hu 2025); `all_reduce` lets a multi-process trainer make that the global batch, not each
  process's share.
- `ppo_policy_loss` takes separate lower/upper clip ranges (DAPO's clip-higher); with
  eps_low == eps_high it is PPO's clipped objective (Schulman et al. 2017).
- `overlong_penalty` is DAPO's soft overlong punishment; completions are capped at `max_len` by
  generation, so the "beyond L_max" branch of the paper is the cap at -penalty.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor

AllReduce = Optional[Callable[[Tensor], Tensor]]


# ---- masked reductions ----

def masked_sum(x: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    return (x * mask).sum() if dim is None else (x * mask).sum(dim)


def masked_mean(x: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    if dim is None:
        return (x * mask).sum() / mask.sum().clamp(min=1)
    return (x * mask).sum(dim) / mask.sum(dim).clamp(min=1)


def masked_mean_std(x: Tensor, mask: Tensor, all_reduce: AllReduce = None) -> tuple[Tensor, Tensor]:
    """Mean and Bessel-corrected std of x over mask. `all_reduce` (a sum across processes) makes
    them the statistics of every process's tokens together."""
    reduce = all_reduce or (lambda t: t)
    sums = reduce(torch.stack([(x * mask).sum(), mask.sum()]).double())
    n = sums[1]
    mean = sums[0] / n.clamp(min=1)
    # Two passes (mean, then squared deviations) rather than E[x^2] - E[x]^2, which cancels badly.
    sq = reduce(((x.double() - mean) ** 2 * mask).sum())
    var = sq / (n - 1).clamp(min=1)
    return mean.to(x.dtype), var.sqrt().to(x.dtype)


def masked_whiten(x: Tensor, mask: Tensor, all_reduce: AllReduce = None, eps: float = 1e-8) -> Tensor:
    """(x - mean) / (std + eps) over the valid entries; padding stays 0."""
    mean, std = masked_mean_std(x, mask, all_reduce)
    return (x - mean) / (std + eps) * mask


def completion_mask(completion_ids: Tensor, eos_token_id: int | None) -> Tensor:
    """1 up to and including the first EOS, 0 after it; all 1 for a completion cut at the length
    limit (no EOS). Padding after EOS may reuse the EOS id, so only the first one counts."""
    n, t = completion_ids.shape
    if eos_token_id is None:
        return torch.ones_like(completion_ids, dtype=torch.float32)
    is_eos = completion_ids == eos_token_id
    first = torch.where(is_eos.any(1), is_eos.float().argmax(1), torch.full((n,), t, device=is_eos.device))
    pos = torch.arange(t, device=completion_ids.device).expand(n, t)
    return (pos <= first.unsqueeze(1)).float()


def loss_aggregate(x: Tensor, mask: Tensor, mode: str, denom: float | Tensor | None = None) -> Tensor:
    """Reduce per-token losses to a scalar.

    token: sum over every valid token / number of valid tokens (DAPO's token-level loss: long
      completions weigh by their length).
    seq: each sequence's token mean, then the mean over sequences (GRPO's original loss).
    `denom` replaces the count (tokens or sequences) when x is one micro-batch of a larger batch, so
    that the micro-batch losses add up to the batch's loss.
    """
    if mode == "token":
        return (x * mask).sum() / (mask.sum().clamp(min=1) if denom is None else denom)
    if mode == "seq":
        per_seq = (x * mask).sum(1) / mask.sum(1).clamp(min=1)
        return per_seq.sum() / (per_seq.numel() if denom is None else denom)
    raise ValueError(f"loss aggregation must be token or seq, not {mode!r}")


# ---- log-probabilities and entropy ----

def token_logprobs(logits: Tensor, ids: Tensor) -> Tensor:
    """log p(ids) under logits [N, T, V] -> [N, T]."""
    return torch.gather(logits.log_softmax(-1), -1, ids.unsqueeze(-1)).squeeze(-1)


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Per-position entropy of softmax(logits) [..., V] -> [...], in nats."""
    logp = logits.log_softmax(-1)
    return -(logp.exp() * logp).sum(-1)


# ---- KL estimators (Schulman, "Approximating KL divergence", 2020); p the policy, q the reference ----

def kl_k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """log p/q: unbiased for KL(p||q) on samples from p, high variance, can be negative."""
    return logp - ref_logp


def kl_k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """(log p/q)^2 / 2: biased, low variance, never negative."""
    return 0.5 * (logp - ref_logp) ** 2


def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """q/p - 1 - log q/p: unbiased, low variance, never negative."""
    d = ref_logp - logp
    return torch.exp(d) - 1 - d


KL_ESTIMATORS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}


def kl_per_token(logp: Tensor, ref_logp: Tensor, estimator: str) -> Tensor:
    try:
        return KL_ESTIMATORS[estimator](logp, ref_logp)
    except KeyError:
        raise ValueError(f"KL estimator must be one of {sorted(KL_ESTIMATORS)}, not {estimator!r}") from None


# ---- rewards, returns, advantages ----

def outcome_token_rewards(scores: Tensor, mask: Tensor, kl: Tensor | None = None,
                          kl_coef: float = 0.0) -> Tensor:
    """Token rewards: the sequence's score on its last valid token, minus kl_coef * KL on every
    valid token (KL in the reward, as in InstructGPT-style PPO and REINFORCE++)."""
    n, t = mask.shape
    pos = torch.arange(t, device=mask.device).expand(n, t)
    last = (pos * mask).argmax(1)
    r = torch.zeros(n, t, dtype=scores.dtype, device=mask.device)
    r[torch.arange(n, device=mask.device), last] = scores
    if kl is not None and kl_coef:
        r = r - kl_coef * kl * mask
    return r * mask


def discounted_returns(rewards: Tensor, mask: Tensor, gamma: float = 1.0) -> Tensor:
    """G_t = r_t + gamma * G_{t+1} over valid tokens (masked positions are skipped, not zeroed into
    the sum)."""
    out = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.size(1))):
        m = mask[:, t]
        running = m * (rewards[:, t] + gamma * running) + (1 - m) * running
        out[:, t] = running * m
    return out


def gae(rewards: Tensor, values: Tensor, mask: Tensor, gamma: float, lam: float) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation (Schulman et al. 2016) -> (advantages, returns).

    delta_t = r_t + gamma V_{t+1} - V_t;  A_t = delta_t + gamma lam A_{t+1};  returns = A + V.
    The value after the last valid token is 0 (the episode ends there).
    """
    adv = torch.zeros_like(rewards)
    next_value = torch.zeros_like(rewards[:, 0])
    next_adv = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.size(1))):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        a = delta + gamma * lam * next_adv
        # Padding carries the next valid position's value and advantage through unchanged.
        next_adv = m * a + (1 - m) * next_adv
        next_value = m * values[:, t] + (1 - m) * next_value
        adv[:, t] = a * m
    return adv, (adv + values) * mask


def rloo_baseline(rewards: Tensor) -> Tensor:
    """Leave-one-out baseline for groups [G, k]: the mean reward of the other k - 1 samples."""
    k = rewards.size(-1)
    if k < 2:
        raise ValueError("RLOO needs at least 2 samples per group")
    return (rewards.sum(-1, keepdim=True) - rewards) / (k - 1)


def rloo_advantages(rewards: Tensor) -> Tensor:
    return rewards - rloo_baseline(rewards)


def group_advantages(rewards: Tensor, scale: str = "group", eps: float = 1e-6) -> Tensor:
    """GRPO/DAPO advantages for groups [G, k]: reward minus the group mean, divided by the group's
    std (scale=group), the whole batch's std (batch), or nothing (none, Dr. GRPO)."""
    centred = rewards - rewards.mean(-1, keepdim=True)
    if scale == "group":
        return centred / (rewards.std(-1, keepdim=True) + eps)
    if scale == "batch":
        return centred / (rewards.std() + eps)
    if scale == "none":
        return centred
    raise ValueError(f"reward scaling must be group, batch or none, not {scale!r}")


def reinforce_pp_advantages(scores: Tensor, mask: Tensor, kl: Tensor | None = None, kl_coef: float = 0.0,
                            group_size: int | None = None, all_reduce: AllReduce = None) -> Tensor:
    """REINFORCE++ (Hu 2025): no critic. Token rewards are the outcome on the last token minus
    kl_coef * KL per token; returns are their reverse cumulative sum (gamma = 1); advantages are the
    returns whitened over the batch's valid tokens.

    group_size=k gives REINFORCE++-baseline: the mean outcome of each run of k consecutive rows (one
    prompt's samples) is subtracted from the outcome first.
    """
    if group_size:
        g = scores.view(-1, group_size)
        scores = (g - g.mean(-1, keepdim=True)).view(-1)
    returns = discounted_returns(outcome_token_rewards(scores, mask, kl, kl_coef), mask, 1.0)
    return masked_whiten(returns, mask, all_reduce)


def remax_advantages(scores: Tensor, greedy_scores: Tensor, mask: Tensor, kl: Tensor | None = None,
                     kl_coef: float = 0.0) -> Tensor:
    """ReMax (Li et al. 2024): return-to-go minus the score of the greedy completion of the same
    prompt (`greedy_scores` [N], already repeated per sample)."""
    returns = discounted_returns(outcome_token_rewards(scores, mask, kl, kl_coef), mask, 1.0)
    return (returns - greedy_scores.unsqueeze(1)) * mask


# ---- remedies: raise pass@1 without narrowing the boundary (issue 14) ----

def passk_advantages(correct: Tensor, k: int) -> Tensor:
    """Pass@k Training's analytical advantage (Chen et al. 2025, arXiv 2508.10751) for groups
    [G, N] of binary outcomes: the reward of a group is its pass@k over all size-k subsets,
    R = 1 - C(N_neg, k) / C(N, k), with std s = sqrt(R (1 - R)); a correct sample gets
    (1 - R) / s, a wrong one (1 - R - C(N_neg - 1, k - 1) / C(N - 1, k - 1)) / s. Advantages sum to 0
    within a group; a group with s = 0 (every k-subset solved, or none) gets 0. k = 1 is GRPO's
    group-normalised advantage with the population std."""
    g, n = correct.shape
    if not 1 <= k <= n:
        raise ValueError(f"pass@k advantage needs 1 <= k <= the group size ({n}), not k={k}")
    c = correct.to(torch.float64)
    neg = n - c.sum(-1, keepdim=True)

    def comb(a: Tensor, b: int) -> Tensor:  # C(a, b) for a tensor a, 0 where a < b
        if b == 0:
            return torch.ones_like(a)
        out = torch.ones_like(a)
        for i in range(b):
            out = out * (a - i) / (i + 1)
        return torch.where(a >= b, out, torch.zeros_like(a))

    total = comb(torch.full_like(neg, float(n)), k)
    r = 1 - comb(neg, k) / total
    std = torch.sqrt(r * (1 - r))
    a_pos = 1 - r
    a_neg = 1 - r - comb(neg - 1, k - 1) / comb(torch.full_like(neg, float(n - 1)), k - 1)
    adv = torch.where(c > 0, a_pos, a_neg)
    adv = torch.where(std > 0, adv / std.clamp_min(1e-12), torch.zeros_like(adv))
    return adv.to(torch.float32)


def _pass_at(n: int, c: Tensor, k: int) -> Tensor:
    """Unbiased pass@k, 1 - C(n - c, k) / C(n, k), for a tensor of counts c out of n (float64);
    0 for k = 0 (an empty subset solves nothing)."""
    if k == 0:
        return torch.zeros_like(c, dtype=torch.float64)
    i = torch.arange(n - k + 1, n + 1, dtype=torch.float64)  # C(n-c,k)/C(n,k) = prod (n-c-j)/(n-j)
    num = (n - c.to(torch.float64)).unsqueeze(-1) - (n - i)
    ratio = torch.where(num > 0, num, torch.zeros_like(num)) / i
    return 1 - ratio.prod(-1)


def pkpo_advantages(correct: Tensor, k: int) -> Tensor:
    """PKPO (Walder & Karkhanis 2025, arXiv 2505.15201) for groups [G, N] of binary outcomes.

    The pass@k estimate of a group averages, over all size-k subsets S, f(S) = max of S's outcomes.
    Its score-function gradient gives each sample the mean of f over the subsets that hold it:
    r_i = (k / N) * (1 if sample i is correct else pass@(k-1) of the other N - 1 samples). The
    baseline is (k / N) * pass@k of the other N - 1 samples (leave-one-out: it does not depend on
    sample i, so the estimate stays unbiased). Returned without the common factor k / N:
    sum_i a_i * grad log p(x_i) estimates (N / k) * grad pass@k, for every k in 1..N-1. A correct
    sample gets 1 - pass@k(others), a wrong one pass@(k-1)(others) - pass@k(others) <= 0."""
    g, n = correct.shape
    if not 1 <= k < n:
        raise ValueError(f"PKPO needs 1 <= k < the group size ({n}) for its leave-one-out baseline, not k={k}")
    c = correct.to(torch.float64)
    others = c.sum(-1, keepdim=True) - c  # correct samples among the other N - 1
    base = _pass_at(n - 1, others, k)
    reward = torch.where(correct.bool(), torch.ones_like(c), _pass_at(n - 1, others, k - 1))
    return (reward - base).to(torch.float32)


def annealed_k(k_start: int, k_end: Optional[int], step: int, max_steps: int) -> int:
    """PKPO's k annealed linearly from k_start (step 0) to k_end (the last step), rounded to the
    nearest integer; k_end None keeps k_start."""
    if k_end is None or max_steps <= 1:
        return int(k_start)
    frac = min(max(step / (max_steps - 1), 0.0), 1.0)
    return int(round(k_start + (k_end - k_start) * frac))


def weighted_reinforce_advantages(correct: Tensor, positive_weight: float) -> Tensor:
    """Weighted-REINFORCE (Zhu et al. 2025, arXiv 2506.01347): +lambda for a correct sample, -1 for a
    wrong one, no baseline. lambda = 0 is pure negative-sample reinforcement (NSR): only wrong
    samples are pushed down, and probability mass flows to the model's other candidates by its own
    prior; the paper's recommended lambda is 0.1."""
    if positive_weight < 0:
        raise ValueError(f"the positive-sample weight must be >= 0, not {positive_weight}")
    return torch.where(correct, torch.full(correct.shape, float(positive_weight)),
                       torch.full(correct.shape, -1.0))


def unlikeliness_ranks(seq_logp: Tensor) -> Tensor:
    """For groups [G, k] of sequence log-probs: each sample's rank in its group, 0 for the least
    likely and k - 1 for the most likely (ties broken by position: a stable sort)."""
    order = torch.sort(seq_logp, dim=-1, stable=True).indices
    return torch.argsort(order, dim=-1, stable=True)


def unlikeliness_rewards(rewards: Tensor, seq_logp: Tensor, beta: float) -> Tensor:
    """The unlikeliness reward (He et al. 2025, "Rewarding the Unlikely", arXiv 2506.02355) for
    groups [G, k]: r_i * (1 - beta * rank_i / k), rank_i from `unlikeliness_ranks` over all k samples
    of the group, so the least likely keeps its reward and the most likely correct one loses
    beta * (k - 1) / k of it; a wrong sample's 0 stays 0. Written as the paper's
    1 - beta * (k - rank_i) / k with rank_i in 1..k counted from the most likely, it is the same
    number. Ranked as in the authors' release (verl `_compute_advantages`): by the *mean* token
    log-prob under the rollout policy, over every sample of the group, not only the correct ones."""
    if not 0 <= beta <= 1:
        raise ValueError(f"the unlikeliness beta must be in [0, 1], not {beta}")
    k = rewards.size(-1)
    return rewards * (1 - beta * unlikeliness_ranks(seq_logp).to(rewards.dtype) / k)


# ---- losses ----

def ppo_policy_loss(logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, eps_low: float,
                    eps_high: float, agg: str = "token", denom: float | Tensor | None = None
                    ) -> tuple[Tensor, Tensor]:
    """Clipped surrogate -> (loss, clip fraction).

    per token: max(-A r, -A clip(r, 1 - eps_low, 1 + eps_high)), r = exp(logp - old_logp).
    The clip fraction is the share of valid tokens where the clipped term was the larger (it set the
    loss and cut the gradient).
    """
    ratio = torch.exp(logp - old_logp)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    per_token = torch.maximum(unclipped, clipped)
    clip_frac = masked_mean((clipped > unclipped).float(), mask)
    return loss_aggregate(per_token, mask, agg, denom), clip_frac


def entropy_bonus(entropy: Tensor, mask: Tensor, coef: float, agg: str = "token",
                  denom: float | Tensor | None = None) -> Tensor:
    """The entropy term added to the loss: -coef * the aggregated token entropy (a bonus: minimising
    the loss raises entropy), aggregated like the policy loss it joins (`loss_aggregate`)."""
    return -coef * loss_aggregate(entropy, mask, agg, denom)


def clipped_value_loss(values: Tensor, old_values: Tensor, returns: Tensor, mask: Tensor, clip: float,
                       agg: str = "token", denom: float | Tensor | None = None) -> tuple[Tensor, Tensor]:
    """PPO's clipped value loss -> (loss, clip fraction).

    per token: 0.5 * max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2).
    """
    v_clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    unclipped = (values - returns) ** 2
    clipped = (v_clipped - returns) ** 2
    per_token = 0.5 * torch.maximum(unclipped, clipped)
    clip_frac = masked_mean((clipped > unclipped).float(), mask)
    return loss_aggregate(per_token, mask, agg, denom), clip_frac


def explained_variance(values: Tensor, returns: Tensor, mask: Tensor) -> Tensor:
    """1 - Var(R - V) / Var(R) over valid tokens: 1 is a perfect critic, 0 no better than a constant."""
    _, std_res = masked_mean_std(returns - values, mask)
    _, std_ret = masked_mean_std(returns, mask)
    return 1 - std_res ** 2 / (std_ret ** 2).clamp(min=1e-12)


# ---- DAPO ----

def dynamic_sampling_keep(rewards: Tensor) -> Tensor:
    """DAPO's dynamic sampling: for groups [G, k], True where the rewards are not all equal (a group
    whose samples all score the same has zero advantage and teaches nothing)."""
    return rewards.max(-1).values != rewards.min(-1).values


def overlong_penalty(lengths: Tensor, max_len: int, buffer: int, penalty: float = 1.0) -> Tensor:
    """DAPO's soft overlong punishment, added to the reward: 0 up to max_len - buffer tokens, then
    falling linearly to -penalty at max_len (and capped there)."""
    if buffer <= 0:
        return torch.zeros_like(lengths, dtype=torch.float32)
    over = (lengths.float() - (max_len - buffer)).clamp(min=0)
    return (-over / buffer * penalty).clamp(min=-penalty)
