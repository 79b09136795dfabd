"""Where the visual toy world's shipped models live."""

from __future__ import annotations

from pathlib import Path


def assets_dir() -> Path:
    return Path(__file__).resolve().parent / "assets"


def base_model_dir() -> Path:
    return assets_dir() / "base"
