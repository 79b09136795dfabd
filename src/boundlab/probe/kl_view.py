"""KL(base || model) per probed checkpoint (issue 39; "RL's Razor", arXiv 2509.04259, ties forgetting to
the forward KL from the base), estimated on the base's own stored probe samples: no new sampling.

    KL(base || model) = E_{y ~ base}[log p_base(y | x) - log p_model(y | x)]

averaged over problems, each problem's expectation estimated from the first `m` base samples that
can be scored exactly. Scored under the sampling distribution softmax(logits / T) at the probe's
temperature, over the completion's tokens and the EOS that ended it, so the estimator is unbiased for
the KL between the two sampling distributions. Left out (and counted): samples cut by a stop string
(their last tokens are not stored) and samples whose text does not re-tokenize to the stored token
count (a BPE round trip that would score another sequence than the one sampled). With top-p < 1 the
two truncated distributions can have disjoint support (an infinite KL), so the view is not computed.
The base itself is 0 by definition, and so is the null (the same model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class KLEstimate:
    value: float          # mean over problems of each problem's mean log ratio (nats per sequence)
    se: float             # standard error over problems
    samples: int          # scored samples
    skipped: int          # left out (stop strings, re-tokenization mismatches)


def kl_estimate(logp_base: np.ndarray, logp_model: np.ndarray, problem: np.ndarray) -> KLEstimate:
    """Per-sample sequence log-probs of base samples under both models -> the estimate (mean over
    problems of the per-problem mean of log p_base - log p_model) and its SE over problems."""
    lb, lm, pid = (np.asarray(a) for a in (logp_base, logp_model, problem))
    if not (lb.shape == lm.shape == pid.shape) or lb.ndim != 1:
        raise ValueError("log-probs and problem ids must be 1-D arrays of one length")
    if not len(lb):
        raise ValueError("KL from the base of no samples")
    diff = lb.astype(np.float64) - lm.astype(np.float64)
    uniq, inv = np.unique(pid, return_inverse=True)
    per = np.bincount(inv, weights=diff) / np.bincount(inv)
    se = float(per.std(ddof=1) / np.sqrt(len(per))) if len(per) > 1 else float("nan")
    return KLEstimate(float(per.mean()), se, int(len(lb)), 0)


def sequence_logprobs(model: Any, prompt_ids: Sequence[Sequence[int]], completion_ids: Sequence[Sequence[int]],
                      temperature: float, pad_id: int, batch_size: int = 32) -> np.ndarray:
    """Sum over each completion's tokens of log softmax(logits / T) under `model`, given its prompt
    (`boundlab.sampling.scoring`)."""
    from boundlab.sampling.scoring import completion_logprobs

    return completion_logprobs(model, prompt_ids, completion_ids, temperature, pad_id, batch_size)[0]


@dataclass
class BaseSamples:
    """The base samples the view scores: their problem index, prompt and completion token ids."""
    problem: np.ndarray
    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    skipped: int


def base_samples(store: Any, key: str, task: Any, tok: Any, m: int) -> BaseSamples:
    """The first m scoreable samples of each problem of the base's probe `key`."""
    from boundlab.sampling.base import prompt_token_ids

    eos = tok.eos_token_id
    prob, p_ids, c_ids, skipped = [], [], [], 0
    problems = list(task.problems)
    prompts = prompt_token_ids(tok, [task.render(p, tok) for p in problems])
    for i, p in enumerate(problems):
        taken = 0
        for row in store.samples(key, p.problem_id):
            if taken >= m:
                break
            finish = (row.info or {}).get("finish", "eos")
            if row.text_dropped or finish == "stop":
                skipped += 1
                continue
            ids = list(tok(row.text, add_special_tokens=False)["input_ids"])
            if finish == "eos":
                ids.append(eos)
            if len(ids) != row.n_tokens:
                skipped += 1
                continue
            prob.append(i)
            p_ids.append(prompts[i])
            c_ids.append(ids)
            taken += 1
    return BaseSamples(np.asarray(prob, dtype=np.int64), p_ids, c_ids, skipped)


def kl_from_base(base_logp: np.ndarray, model: Any, tok: Any, samples: BaseSamples, temperature: float,
                 batch_size: int = 32) -> Optional[KLEstimate]:
    """The view for one checkpoint; None when no base sample could be scored."""
    if not len(samples.problem):
        return None
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    lm = sequence_logprobs(model, samples.prompt_ids, samples.completion_ids, temperature, pad, batch_size)
    est = kl_estimate(base_logp, lm, samples.problem)
    return KLEstimate(est.value, est.se, est.samples, samples.skipped)
