"""Verifiers by name: `build_verifier("math")` -> a `Verifier`.

Adding a verifier: subclass `Verifier`, register a factory with `@VERIFIERS.register("name")` in its
module, and list that module in `boundlab/builtins.py` (this registry imports none of its entries).
A verifier's options come from its own block of the `verify` config (`verify.<name>.*`, typed in
boundlab.config) plus the shared keys (`verify.workers`) its constructor names; a verifier with no
block gets only those. Constructors take no `**kwargs`: an option a verifier does not know is a
TypeError at build time, never silently dropped.
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping

from boundlab.config import VerifyConfig
from boundlab.registry import Registry
from boundlab.verify.base import Verdict, Verifier

VERIFIERS: Registry[Verifier] = Registry("verifier")


def build_verifier(name: str, **options: Any) -> Verifier:
    return VERIFIERS.get(name)(**options)


def verifier_options(name: str, verify_cfg: VerifyConfig | Mapping[str, Any]) -> dict[str, Any]:
    """The options verifier `name` is built with from the `verify` config: its own block
    (`verify.<name>`) and those shared keys (every non-block key, e.g. `workers`) that its
    constructor takes. Other verifiers' blocks never reach it."""
    from boundlab.config import to_dict

    cfg = verify_cfg if isinstance(verify_cfg, dict) else to_dict(verify_cfg)
    shared = {k: v for k, v in cfg.items() if not isinstance(v, dict)}
    params = inspect.signature(VERIFIERS.get(name)).parameters
    return {**{k: v for k, v in shared.items() if k in params}, **cfg.get(name, {})}


__all__ = ["VERIFIERS", "Verdict", "Verifier", "build_verifier", "verifier_options"]
