"""Are two probes alike enough to compare? One check for every comparison (the report, the
dashboard's lost/gained, the W&B delta against the base).

Two probes compare like with like when they share their task (its fingerprint: problems, template,
verifier choice) and every setting in their probe key but the seed: temperature, top_p,
max_new_tokens, stop strings, prompt style, the verifier's identity, and for external samples their
source. The seed is left out on purpose: the null is the base probed again with another seed, and a
checkpoint may be probed with its own. `n` is not in the key (it can grow) and is reported apart.

A difference is never silent: each comparison names it beside the table it draws (a note under the
report's models table, an `unlike_base` field on the probe row, in the dashboard and in W&B).
"""

from __future__ import annotations

import json
from typing import Any

# Differences that do not make two probes unlike (see above).
IGNORED = frozenset({"seed"})


_UNSET = object()


def _show(v: Any) -> str:
    if v is _UNSET:
        return "(unset)"
    if isinstance(v, dict) and "name" in v:  # a verifier identity
        extra = {k: x for k, x in v.items() if k not in ("name", "version")}
        return f"{v['name']} v{v.get('version', '?')}" + (f" {json.dumps(extra, sort_keys=True)}" if extra else "")
    return json.dumps(v) if not isinstance(v, str) else repr(v)


def differences(a: dict[str, Any] | None, b: dict[str, Any] | None, a_task_fp: str | None = None,
                b_task_fp: str | None = None) -> list[str]:
    """What differs between two probes' settings (and tasks), as 'key A vs B' phrases, in key order;
    [] when they are alike. A probe whose settings are unknown (None) is compared on its task only."""
    out = []
    if a_task_fp is not None and b_task_fp is not None and a_task_fp != b_task_fp:
        out.append(f"task fingerprint {a_task_fp} vs {b_task_fp}")
    if a is None or b is None:
        return out
    for key in sorted((set(a) | set(b)) - IGNORED):
        va, vb = a.get(key, _UNSET), b.get(key, _UNSET)
        if va != vb:
            out.append(f"{key} {_show(va)} vs {_show(vb)}")
    return out


def store_differences(store: Any, key_a: str, key_b: str) -> list[str]:
    """`differences` of two probes by their keys in `store` ([] if either is not there)."""
    ia, ib = store.probe_info(key_a), store.probe_info(key_b)
    if ia is None or ib is None:
        return []
    return differences(ia["settings"], ib["settings"], ia["task_fp"], ib["task_fp"])


def note(label: str, other: str, diffs: list[str]) -> str:
    """The one line a comparison shows for an unlike pair."""
    return (f"{label} was probed unlike {other} ({'; '.join(diffs)}): its differences from {other} "
            f"mix the training's effect with these settings")
