"""Verifiers by name: `build_verifier("math")` -> a `Verifier`.

Adding a verifier: subclass `Verifier`, register a factory with `@VERIFIERS.register("name")` in a
module imported below. Factories take keyword options from the `verifier` config.
"""

from __future__ import annotations

from typing import Any

from boundlab.registry import Registry
from boundlab.verify.base import Verdict, Verifier

VERIFIERS: Registry[Verifier] = Registry("verifier")

from boundlab.verify import exact as _exact  # noqa: E402,F401
from boundlab.verify import math as _math  # noqa: E402,F401

try:  # code sandbox and the toy world register themselves when present
    from boundlab.verify import code as _code  # noqa: E402,F401
except ImportError:  # pragma: no cover
    pass
try:
    from boundlab.toyworld import verifier as _toy  # noqa: E402,F401
except ImportError:  # pragma: no cover
    pass


def build_verifier(name: str, **options: Any) -> Verifier:
    return VERIFIERS.get(name)(**options)


__all__ = ["VERIFIERS", "Verdict", "Verifier", "build_verifier"]
