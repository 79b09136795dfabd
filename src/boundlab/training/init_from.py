"""`train.init_from`: start training from other weights than the base, while the boundary is still
measured against the base (`model`). This is the cold-start-then-RL recipe (issue 39,
`experiment=sft_then_rl`): SFT on the teacher's verified traces, then GRPO from that checkpoint, every
probe compared with the original base, so SFT alone, RL alone and SFT-then-RL sit on one footing.

The value is a checkpoint folder, or a run dir (its latest complete checkpoint). Refused in one line:
a folder that is not there, a run dir with no complete checkpoint, a folder without a config or
weights, and weights whose vocabulary or architecture differ from the base's (the base's tokenizer
renders the prompts). The weights' content digest is recorded in the run's `run_info.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from boundlab.config import ConfigError, TrainMain
from boundlab.rundir import CHECKPOINTS_DIR


def resolve_init(value: Optional[str], base_dir: Optional[str]) -> Optional[Path]:
    """The folder to load the starting weights from (None: the base itself). With base_dir None the
    comparison with the base's config is left for a later call (a check before any model work)."""
    if value in (None, ""):
        return None
    from boundlab.rundir import checkpoints as ck

    p = Path(str(value)).expanduser()
    where = f"train.init_from={value}"
    if (p / CHECKPOINTS_DIR).is_dir():
        latest = ck.latest_complete(p / CHECKPOINTS_DIR)
        if latest is None:
            raise ConfigError(f"{where}: the run dir has no complete checkpoint under {p / CHECKPOINTS_DIR}")
        p = latest
    elif not p.is_dir():
        raise ConfigError(f"{where}: no such folder (a checkpoint folder or a run dir)")
    missing = [name for name, ok in (("config.json", (p / "config.json").is_file()),
                                     ("weights (*.safetensors or *.bin)",
                                      any(p.glob("*.safetensors")) or any(p.glob("*.bin"))))
               if not ok]
    if missing:
        raise ConfigError(f"{where}: {p} has no {' and no '.join(missing)}")
    mine, base = _config(p), (_config(Path(base_dir)) if base_dir is not None else None)
    if base is not None:
        for key in ("vocab_size", "model_type", "hidden_size", "num_hidden_layers"):
            if key in base and mine.get(key) != base.get(key):
                raise ConfigError(f"{where}: its {key} is {mine.get(key)} but the base's ({base_dir}) is "
                                  f"{base.get(key)}; start from a checkpoint of the same base")
    return p


def _config(folder: Path) -> Optional[dict]:
    f = folder / "config.json"
    if not f.is_file():
        return None
    try:
        return json.loads(f.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{f}: not a readable JSON config ({e})") from None


def check_required(cfg: TrainMain) -> None:
    """`experiment=sft_then_rl` is RL from an SFT checkpoint: without train.init_from it would be RL
    alone under the wrong name, so it is refused in one line."""
    try:
        from hydra.core.hydra_config import HydraConfig

        choice = HydraConfig.get().runtime.choices.get("experiment") if HydraConfig.initialized() else None
    except ValueError:
        choice = None
    if choice == "sft_then_rl" and not cfg.train.init_from:
        raise ConfigError("experiment=sft_then_rl starts RL from an SFT checkpoint: set train.init_from=<SFT run dir "
                          "or checkpoint folder> (scripts/sft_then_rl.sh runs all three arms)")
