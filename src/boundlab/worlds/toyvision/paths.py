"""Where the visual toy world's shipped models live. Importing this module registers the VLM as
`${toy_model:vlm}` (boundlab.worlds.common.paths)."""

from __future__ import annotations

from pathlib import Path

from boundlab.worlds.common.paths import register_model


def assets_dir() -> Path:
    return Path(__file__).resolve().parent / "assets"


def base_model_dir() -> Path:
    return assets_dir() / "base"


register_model("vlm", base_model_dir)
