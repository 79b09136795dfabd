"""Where the second-edition toy world's shipped models live. Importing this module registers them as
`${toy_model:base2}` and `${toy_model:teacher2}` (boundlab.worlds.common.paths)."""

from __future__ import annotations

from pathlib import Path

from boundlab.worlds.common.paths import register_model


def assets_dir() -> Path:
    return Path(__file__).resolve().parent / "assets"


def base_model_dir() -> Path:
    return assets_dir() / "base"


def teacher_model_dir() -> Path:
    return assets_dir() / "teacher"


register_model("base2", base_model_dir)
register_model("teacher2", teacher_model_dir)
