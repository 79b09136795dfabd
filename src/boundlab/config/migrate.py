"""Config keys that moved, in one table, and the migration of a run dir's saved config.

A run dir keeps the config it was composed with (`.hydra/config.yaml`); resume, the watcher and the
report read it back with today's schema. Each key that moved is listed once in MOVED_KEYS: the
command line refuses the old key in one line naming the new one (cli.unknown_key, resume's override
check), and `migrate_saved` moves it in a saved config, saying in one line which keys moved. The
algorithm family knobs that moved into `algo.<family>` have their own table (training.py:
`lift_flat_algo_keys`: one old key, several blocks).
"""

from __future__ import annotations

import sys
from typing import Any

# Old key -> where it lives now.
MOVED_KEYS: dict[str, str] = {
    # Flat before the per-verifier and per-sampler blocks existed.
    **{f"verify.{k}": f"verify.math.{k}" for k in ("deadline_s", "max_answer_chars", "extraction")},
    **{f"verify.{k}": f"verify.code.{k}" for k in ("timeout_s", "memory_mb", "allow_weak_isolation")},
    **{f"sampler.{k}": f"sampler.vllm.{k}" for k in ("gpu_memory_utilization", "tensor_parallel_size")},
    # The confinement opt-out is the sandbox's, not one verifier's (issue 35's `sandbox.allow_weaker`).
    "verify.code.allow_weaker": "sandbox.allow_weaker",
    # task.limit and probe.limit were two settings for one thing (the probe's first N problems of the
    # task; training's split has train.train_limit): one is kept, probe.limit.
    "task.limit": "probe.limit",
    # Issue 37 item 2: what one task or family reads is in its own block under `task`, not flat
    # beside what every task reads. toy_vision draws toy2's problems, so it reads task.toy2 too.
    **{f"task.{k}": f"task.toy2.{k}" for k in ("tiers", "per_tier", "slice", "train_mix")},
    **{f"task.{k}": f"task.toy_vision.{k}" for k in ("render_dir", "distractors")},
    "task.tests": "task.evalplus.tests",
    **{f"task.{k}": f"task.livecodebench.{k}" for k in ("date_from", "date_to")},
    **{f"task.{k}": f"task.visual.{k}" for k in ("image_dir", "question_type")},
}


def _parent(tree: Any, dotted: str) -> Any:
    *path, _ = dotted.split(".")
    node = tree
    for part in path:
        node = node.get(part) if hasattr(node, "get") else None
        if node is None or not hasattr(node, "keys"):
            return None
    return node


def _has(tree: Any, dotted: str) -> bool:
    node = _parent(tree, dotted)
    return node is not None and dotted.rsplit(".", 1)[-1] in node


def moved_in(saved: Any) -> list[str]:
    """The old keys of MOVED_KEYS that `saved` (a DictConfig or a dict) still holds."""
    return [old for old in MOVED_KEYS if _has(saved, old)]


def lift_flat_option_keys(saved: Any) -> Any:
    """A saved config (a DictConfig) with the old keys of MOVED_KEYS moved where they live now, so a
    run dir saved before the move resumes (and is watched and reported) with the same settings. A
    config already in the new shape comes back unchanged (the same object). A saved task.limit joins
    probe.limit: a null one changes nothing, and with both set the smaller was the probed set (both
    cut the first N problems)."""
    from omegaconf import OmegaConf

    if not moved_in(saved):
        return saved
    data = OmegaConf.to_container(saved, resolve=False)
    for old, new in MOVED_KEYS.items():
        if _has(data, old):
            value = _parent(data, old).pop(old.rsplit(".", 1)[-1])
            *path, name = new.split(".")
            node = data
            for part in path:
                node = node.setdefault(part, {})
            if old == "task.limit":
                kept = node.get(name)
                if value is None or (isinstance(kept, int) and isinstance(value, int) and kept <= value):
                    continue
            node[name] = value
    return OmegaConf.create(data)


def migrate_saved(saved: Any, source: object) -> Any:
    """A run dir's saved config (`source`: its file, named in the line) in today's shape: the keys of
    MOVED_KEYS and the flat algorithm knobs moved. When anything moved, one line says which keys (on
    stderr, so a command's own output stays as it was)."""
    from boundlab.config.training import _FLAT_ALGO_KEYS, lift_flat_algo_keys

    algo = saved.get("algo") if hasattr(saved, "get") else None
    moved = [f"{old} -> {MOVED_KEYS[old]}" for old in moved_in(saved)]
    if hasattr(algo, "keys"):
        moved += [f"algo.{k} -> algo.{'|'.join(b for b, _ in _FLAT_ALGO_KEYS[k])}.{_FLAT_ALGO_KEYS[k][0][1]}"
                  for k in _FLAT_ALGO_KEYS if k in algo]
    if moved:
        print(f"[boundlab] {source}: saved before these config keys moved, read as today's: "
              f"{', '.join(moved)}", file=sys.stderr, flush=True)
    return lift_flat_option_keys(lift_flat_algo_keys(saved))
