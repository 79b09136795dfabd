"""Algorithms by name. Each builder returns a configured trainer: TRL's own where TRL has the
algorithm (`grpo.py`, `distill.py`), our `OnPolicyTrainer` where it does not (`onpolicy.py`).

A builder may carry a `check(cfg)` attribute that raises ConfigError for a combination it cannot
honour; `check(cfg)` below runs it at start, before any model work."""

from __future__ import annotations

from boundlab.registry import Registry

ALGOS: Registry = Registry("algorithm")

from boundlab.algos import distill as _distill  # noqa: E402,F401
from boundlab.algos import grpo as _grpo  # noqa: E402,F401
from boundlab.algos import onpolicy as _onpolicy  # noqa: E402,F401


def check(cfg) -> None:
    """Fail fast, in one line, on an unknown algorithm or a combination it cannot honour."""
    from boundlab.config import ConfigError

    try:
        builder = ALGOS.get(cfg.algo.name)
    except KeyError as e:  # algo.name set by hand to a name no builder has
        raise ConfigError(f"algo.name={cfg.algo.name}: {e.args[0]}; choose the algorithm with algo=NAME") \
            from None
    chk = getattr(builder, "check", None)
    if chk is not None:
        chk(cfg)

__all__ = ["ALGOS", "check"]
