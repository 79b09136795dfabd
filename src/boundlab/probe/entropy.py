"""The entropy view: how spread out a probed model's sampling distribution is, beside its boundary.

Each stored sample carries its mean per-token entropy (nats) of the distribution its tokens were
drawn from, at the probe's temperature and top-p (`boundlab.sampling`, from the logits the sampler
already computed). A probe's summary is the mean of those per-sample means and their 10th, 50th and
90th percentiles (numpy's default, linear interpolation), over each problem's first n samples; the
same per group. RL-trained models are reported to sample with less entropy than their base (Yue et
al. 2025, section 4); `boundlab.probe.entropy_match` asks whether raising the temperature until the
entropies match is enough to recover the base's pass@k.

Samples stored without an entropy (an older store, vLLM, greedy decoding, external samples) are
left out and counted: `recorded` < `samples` says so, and a probe with none has no entropy view
(None), never a 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

QUANTILES = (("p10", 0.10), ("p50", 0.50), ("p90", 0.90))


@dataclass(frozen=True)
class EntropyStats:
    # Samples looked at, and how many of them have an entropy.
    samples: int
    recorded: int
    mean: float
    p10: float
    p50: float
    p90: float

    def fields(self, prefix: str = "entropy_") -> dict[str, Any]:
        """Row fields: entropy_mean, entropy_p10/p50/p90, entropy_samples (recorded ones)."""
        out = {f"{prefix}mean": self.mean, f"{prefix}samples": self.recorded}
        out.update({f"{prefix}{name}": getattr(self, name) for name, _ in QUANTILES})
        return out


def entropy_values(store: Any, key: str, problem_ids: Sequence[str],
                   n_max: int | None = None) -> list[np.ndarray]:
    """Per problem (in `problem_ids` order), its first `n_max` samples' entropies (NaN where a
    sample has none)."""
    per: dict[str, list[float]] = {pid: [] for pid in problem_ids}
    if getattr(store, "has_entropy", True):
        q = ("SELECT problem_id, entropy FROM (SELECT problem_id, idx, entropy, ROW_NUMBER() OVER"
             " (PARTITION BY problem_id ORDER BY idx) AS rn FROM samples WHERE key=?)"
             " WHERE rn <= ? ORDER BY problem_id, idx")
        for pid, ent in store.db.execute(q, (key, n_max or 2**62)):
            if pid in per:
                per[pid].append(np.nan if ent is None else float(ent))
    else:  # a read-only store from before the column: every sample lacks it
        for pid, cnt in store.counts_done(key).items():
            if pid in per:
                per[pid] = [np.nan] * min(cnt, n_max or cnt)
    return [np.asarray(per[pid], dtype=np.float64) for pid in problem_ids]


def summarize(values: Iterable[np.ndarray]) -> EntropyStats | None:
    """The summary of these per-sample entropies; None when none was recorded."""
    arrays = [np.asarray(v, dtype=np.float64) for v in values]
    allv = np.concatenate(arrays) if arrays else np.zeros(0)
    got = allv[~np.isnan(allv)]
    if got.size == 0:
        return None
    qs = np.quantile(got, [q for _, q in QUANTILES])
    return EntropyStats(int(allv.size), int(got.size), float(got.mean()),
                        *(float(x) for x in qs))


def probe_entropy(store: Any, key: str, problem_ids: Sequence[str],
                  n_max: int | None = None) -> tuple[EntropyStats | None, list[np.ndarray]]:
    """(the probe's summary, per-problem values) over each problem's first n_max samples."""
    values = entropy_values(store, key, problem_ids, n_max)
    return summarize(values), values


def group_entropy(values: Sequence[np.ndarray], idx: Iterable[int]) -> EntropyStats | None:
    """The summary over the problems at positions `idx` (a group)."""
    return summarize([values[i] for i in idx])


def summary_line(stats: EntropyStats | None) -> str | None:
    """The probe summary's entropy line; None when no sample has one."""
    if stats is None:
        return None
    part = "" if stats.recorded == stats.samples else (
        f"; only {stats.recorded} of {stats.samples} samples recorded one")
    return (f"  entropy: mean {stats.mean:.4f} nats/token per sample (p10 {stats.p10:.4f}, p50 "
            f"{stats.p50:.4f}, p90 {stats.p90:.4f}; at the probe's temperature and top-p{part})")
