"""Probe settings that fit the model: the toy world's `probe=toy` is never applied to a real model.

`conf/probe.yaml` and `conf/train.yaml` default to `probe: toy2` (max_new_tokens 108, enough for the
toy world's traces; the first edition's `probe=toy` has 32). A real model cut off there writes no
final answer, and every "correct" verdict would come from digits in cut-off text. Hydra cannot let a
model config choose a sibling group's default, so the entry point does it: when the probe group is
a toy-world one that the user did not name and the model is not a toy-world model, the config is
composed again with `probe=real` (the user's own overrides, `probe.n=8` say, still apply on top)
and a one-line note says so. Naming `probe=toy2` (or `probe=toy`) explicitly keeps it: that is a
choice, not a silent default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig

TOY_MODELS = frozenset({"toy", "toy_teacher", "toy2", "toy2_teacher", "toy_vlm"})
TOY_PROBES = frozenset({"toy", "toy2"})
REAL_PROBE = "real"


def _group(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~").split("@", 1)[0]


def fit_probe_settings(cfg: DictConfig, config_name: str) -> DictConfig:
    """`cfg`, or `cfg` recomposed with `probe=real` when a real model would get the toy settings."""
    from hydra.core.hydra_config import HydraConfig

    hc = HydraConfig.get()
    choices = hc.runtime.choices
    if choices.get("probe") not in TOY_PROBES or choices.get("model") in TOY_MODELS:
        return cfg
    overrides = list(hc.overrides.task)
    if any(_group(o) == "probe" for o in overrides):
        return cfg
    from hydra import compose

    fitted = compose(config_name=config_name, overrides=overrides + [f"probe={REAL_PROBE}"])
    print(f"[boundlab] model={choices.get('model')} is not a toy-world model: probe settings from "
          f"probe={REAL_PROBE} (max_new_tokens={fitted.probe.max_new_tokens}), not the toy world's "
          f"probe={choices.get('probe')} (name probe=... to choose)", flush=True)
    return fitted
