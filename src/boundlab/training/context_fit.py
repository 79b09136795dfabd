"""Refuse, before anything is written, a model whose context cannot hold the task: the longest
prompt plus the tokens a probe or a rollout may add must fit the model's positions. Past them a
model reads positions it never learned (transformers only warns), and the hint a cut-off answer gets
(raise max_new_tokens) cannot help."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from boundlab.config import ConfigError

_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")


def model_positions(model_dir: str | Path) -> int | None:
    """The positions the model was built for, from its config.json (None: not said, or a Hub id)."""
    f = Path(model_dir) / "config.json"
    if not f.is_file():
        return None
    cfg = json.loads(f.read_text())
    for node in (cfg, cfg.get("text_config") or {}):
        for k in _POSITION_KEYS:
            if isinstance(node.get(k), int) and node[k] > 0:
                return node[k]
    return None


def check_context(model_name: str, model_dir: str | Path, tokenizer: Any, task: Any,
                  new_tokens: dict[str, int]) -> None:
    """ConfigError (one line) when `task`'s longest prompt plus the largest of `new_tokens`
    ({setting: tokens}) exceeds the model's positions."""
    positions = model_positions(model_dir)
    if positions is None or not len(task):
        return
    longest, pid = max((len(tokenizer(task.render(p, tokenizer), add_special_tokens=False,
                                      verbose=False)["input_ids"]),
                        p.problem_id) for p in task.problems)
    key, more = max(new_tokens.items(), key=lambda kv: kv[1])
    if longest + more <= positions:
        return
    if longest >= positions:
        why = f"its longest prompt alone is {longest} tokens (problem {pid})"
        fix = "choose a model with a longer context or a task made for this model"
    else:
        why = f"its longest prompt is {longest} tokens (problem {pid}) and {key}={more} more"
        room = positions - longest
        fix = (f"set {' and '.join(f'{k}<={room}' for k in new_tokens)} (debug=smoke sets 80 for the second "
               f"toy world), or choose a model with a longer context")
    raise ConfigError(f"model={model_name} holds {positions} positions, but task={task.name} cannot fit: "
                      f"{why}; {fix}")
