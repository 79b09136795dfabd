"""Verifiers by name: `build_verifier("math")` -> a `Verifier`.

Adding a verifier: subclass `Verifier`, register a factory with `@VERIFIERS.register("name")` in its
module, and list that module in `boundlab/builtins.py` (this registry imports none of its entries). Factories take keyword options from the `verifier` config.
"""

from __future__ import annotations

from typing import Any

from boundlab.registry import Registry
from boundlab.verify.base import Verdict, Verifier

VERIFIERS: Registry[Verifier] = Registry("verifier")


def build_verifier(name: str, **options: Any) -> Verifier:
    return VERIFIERS.get(name)(**options)


__all__ = ["VERIFIERS", "Verdict", "Verifier", "build_verifier"]
