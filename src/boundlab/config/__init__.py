"""Typed schemas for every config group (`probing.py`: what probe.py and the probe read;
`training.py`: what train.py adds), registered with Hydra here, and the key checks.

Each primary config (`conf/probe.yaml`, ...) starts its defaults list with the matching schema
registered here, so Hydra merges the YAML files into these dataclasses: a misspelt key or a value of
the wrong type fails at start with a message that names it.
"""

from __future__ import annotations

from typing import Any

from hydra.core.config_store import ConfigStore

from boundlab.config.probing import (MOVED_KEYS, CodeVerifyConfig, HFSamplerConfig, LoggerConfig,
                                     MatchEntropyConfig, MathVerifyConfig, ModelConfig, PowerSamplerConfig,
                                     ProbeMain,
                                     ProbeSettings, ProbingMain, SamplerConfig, StoreConfig,
                                     TaskConfig, VLLMSamplerConfig, VerifyConfig,
                                     lift_flat_option_keys)  # noqa: F401 - re-exported
from boundlab.config.training import (AlgoConfig, BackendConfig, CriticConfig, DataConfig, DistillConfig,
                                      GRPOFamilyConfig, KLConfig, OnPolicyConfig, OutcomeBonusConfig, PeftConfig,
                                      PolicyGradientConfig, RewardConfig, RolloutConfig, ShapingConfig,
                                      TrainLoop, TrainMain,
                                      lift_flat_algo_keys)  # noqa: F401 - re-exported


def register_configs() -> None:
    from omegaconf import OmegaConf

    # ${toy_model:...} and report_schema are registered by boundlab.builtins (entry layer): the
    # config layer imports nothing above it.
    if not OmegaConf.has_resolver("basename"):
        # ${basename:${hydra:sweep.dir}}: a sweep's W&B group is named after its sweep dir.
        OmegaConf.register_new_resolver("basename", lambda p: str(p).rstrip("/").rsplit("/", 1)[-1])
    if not OmegaConf.has_resolver("if_null"):
        # ${if_null:${resume},outputs/...}: the first value unless it is null (oc.select only
        # falls back for missing keys, not for null ones).
        OmegaConf.register_new_resolver("if_null", lambda x, default: default if x is None else x)
    if not OmegaConf.has_resolver("mul"):
        # ${mul:${algo.rollouts},4}: keep prompts per batch fixed while the rollout count varies.
        OmegaConf.register_new_resolver("mul", lambda a, b: int(a) * int(b))
    cs = ConfigStore.instance()
    cs.store(name="probe_schema", node=ProbeMain)
    cs.store(name="train_schema", node=TrainMain)
    # Group schemas live in their own `schema` group, not in the groups users choose from: stored
    # as `algo/schema`, `algo=schema` was a valid choice that silently ran the schema's defaults
    # (GRPO). Each group YAML pulls its schema in with `- /schema/<group>@_here_`.
    for group, node in (("model", ModelConfig), ("task", TaskConfig), ("probe", ProbeSettings),
                        ("sampler", SamplerConfig), ("logger", LoggerConfig), ("algo", AlgoConfig),
                        ("backend", BackendConfig), ("rollout", RolloutConfig)):
        cs.store(group="schema", name=group, node=node)


def to_dict(cfg: Any) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def with_updates(node: Any, **updates: Any) -> Any:
    """A plain copy of a config node with some values replaced (the node itself is not touched)."""
    from types import SimpleNamespace

    d = dict(to_dict(node))
    d.update(updates)
    return SimpleNamespace(**d)


class ConfigError(ValueError):
    pass


def check_keys(cfg: Any, schema: Any = None, path: str = "") -> None:
    """Reject keys the schema does not know, including ones added with Hydra's `+key=value`
    (Hydra applies `+` with the struct flag lifted, so typos would otherwise slip through)."""
    import dataclasses

    from omegaconf import DictConfig, OmegaConf

    if not isinstance(cfg, DictConfig):
        return
    schema = schema or OmegaConf.get_type(cfg)
    if not dataclasses.is_dataclass(schema):
        return
    fields = {f.name: f for f in dataclasses.fields(schema)}
    for key in cfg.keys():
        if key == "hydra":
            continue
        if key not in fields:
            where = f"{path}.{key}" if path else str(key)
            known = ", ".join(sorted(fields))
            raise ConfigError(f"unknown config key '{where}' (known here: {known})")
        child = cfg._get_node(key)
        if isinstance(child, DictConfig):
            check_keys(child, OmegaConf.get_type(child), f"{path}.{key}" if path else str(key))
