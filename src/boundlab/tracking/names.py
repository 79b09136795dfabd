"""Metric names shared by training, probing and reports.

Keys are namespaced strings (`train/...`, `probe/...`). W&B's glob `probe/*` matches any depth, so a
task-qualified key like `probe/math500/pass@64` is still plotted against the probe step metric.
"""

from __future__ import annotations

TRAIN = "train"
PROBE = "probe"
# Per-group (per-tier) probe metrics: a prefix of their own, so W&B puts them in their own panel
# section instead of crowding the probe section (`probe_tier/<tag>/<metric>/pass@k`).
PROBE_TIER = "probe_tier"

# Probes are keyed by the training global step, not by W&B's internal `_step`: a probe worker may log
# into the run later, from another process, out of order with training's own logging.
TRAIN_STEP = "train/global_step"
PROBE_STEP = "probe/step"


def metric_key(prefix: str, *parts: str) -> str:
    """`metric_key("probe", "math500", "pass@1") -> "probe/math500/pass@1"`."""
    return "/".join((prefix, *[p for p in parts if p]))


def passk_key(k: int, prefix: str = PROBE, task: str | None = None) -> str:
    """The key of pass@k: `probe/pass@64`, or `probe/<task>/pass@64` when a task is named."""
    return metric_key(prefix, task or "", f"pass@{int(k)}")


def tier_prefix(prefix: str) -> str:
    """The per-group twin of a probe prefix: `probe` -> `probe_tier`, `probe/null` -> `probe_tier/null`."""
    head, _, rest = prefix.partition("/")
    return metric_key(f"{head}_tier", rest) if head == PROBE else metric_key(prefix, "tier")
