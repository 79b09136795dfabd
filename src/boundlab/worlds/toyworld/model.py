"""The toy world's model: the worlds' tiny Llama-style decoder (`boundlab.worlds.common.model`), at its
defaults (about 1M parameters, 64 positions)."""

from __future__ import annotations

from boundlab.worlds.common.model import build_config, build_model

__all__ = ["build_config", "build_model"]
