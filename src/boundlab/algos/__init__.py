"""Algorithms by name. Each builder returns a configured TRL trainer (see `grpo.py`)."""

from __future__ import annotations

from boundlab.registry import Registry

ALGOS: Registry = Registry("algorithm")

from boundlab.algos import distill as _distill  # noqa: E402,F401
from boundlab.algos import grpo as _grpo  # noqa: E402,F401

__all__ = ["ALGOS"]
