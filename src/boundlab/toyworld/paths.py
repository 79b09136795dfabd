"""Where the shipped toy models live. Both folders load with `AutoTokenizer` and
`AutoModelForCausalLM.from_pretrained(folder)`."""

from __future__ import annotations

from pathlib import Path


def assets_dir() -> Path:
    return Path(__file__).resolve().parent / "assets"


def base_model_dir() -> Path:
    """The noisy base model (the one RL starts from)."""
    return assets_dir() / "base"


def teacher_model_dir() -> Path:
    """The teacher for distillation: trained on correct precedence-aware traces only."""
    return assets_dir() / "teacher"
