"""Where the shipped toy models live. Both folders load with `AutoTokenizer` and
`AutoModelForCausalLM.from_pretrained(folder)`. Importing this module registers them as
`${toy_model:base}` and `${toy_model:teacher}` (boundlab.worlds.common.paths)."""

from __future__ import annotations

from pathlib import Path

from boundlab.worlds.common.paths import register_model


def assets_dir() -> Path:
    return Path(__file__).resolve().parent / "assets"


def base_model_dir() -> Path:
    """The noisy base model (the one RL starts from)."""
    return assets_dir() / "base"


def teacher_model_dir() -> Path:
    """The teacher for distillation: trained on correct precedence-aware traces only."""
    return assets_dir() / "teacher"


register_model("base", base_model_dir)
register_model("teacher", teacher_model_dir)
