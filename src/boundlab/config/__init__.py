"""Typed schemas for every config group (`probing.py`: what probe.py and the probe read;
`training.py`: what train.py adds), registered with Hydra here, and the key checks.

Each primary config (`conf/probe.yaml`, ...) starts its defaults list with the matching schema
registered here, so Hydra merges the YAML files into these dataclasses: a misspelt key or a value of
the wrong type fails at start with a message that names it. After its checks, an entry point turns the
composed DictConfig into its dataclass once (`as_typed`; probe.py -> ProbeMain, report.py ->
ReportMain) and hands typed values down; a copy with changes is `dataclasses.replace` (`with_updates`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, TypeVar

from hydra.core.config_store import ConfigStore

if TYPE_CHECKING:
    from omegaconf import DictConfig

from boundlab.config.migrate import MOVED_KEYS, lift_flat_option_keys, migrate_saved  # noqa: F401
from boundlab.config.probing import (CodeVerifyConfig, EvalPlusTaskConfig, HFSamplerConfig,  # noqa: F401
                                     LiveCodeBenchTaskConfig, LoggerConfig, MatchEntropyConfig,
                                     MathVerifyConfig, ModelConfig, PowerSamplerConfig, ProbeMain,
                                     ProbeSettings, ProbingMain, SamplerConfig, SandboxSettings, StoreConfig,
                                     TaskConfig, Toy2TaskConfig, ToyVisionTaskConfig, VerifyConfig,
                                     VisualTaskConfig, VLLMSamplerConfig)
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
    """A config (a DictConfig or a schema instance) as plain, resolved Python containers."""
    import dataclasses

    from omegaconf import OmegaConf

    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return dataclasses.asdict(cfg)
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


T = TypeVar("T")


def as_typed(cfg: Any, schema: type[T]) -> T:
    """`cfg` as an instance of the dataclass `schema`, converted once at an entry point.

    A `schema` instance passes through; a DictConfig composed onto the schema (what Hydra gives an
    entry point) becomes its dataclass (`OmegaConf.to_object`: every value resolved and typed); an
    untyped node (a run's saved `.hydra/config.yaml`), a mapping or a namespace is merged onto the
    schema's defaults, so a key the schema does not know is refused in one line, as on the command
    line, and a field it lacks takes the schema's default. A `hydra` node is left out."""
    import dataclasses

    from omegaconf import DictConfig, OmegaConf, open_dict

    if isinstance(cfg, schema):
        return cfg
    if isinstance(cfg, DictConfig) and "hydra" in cfg:
        # Hydra's own node (a config composed with return_hydra_config) is no schema field, as in
        # check_keys; left in, to_object would resolve it too (hydra.job.num outside a sweep).
        cfg = cfg.copy()
        with open_dict(cfg):
            del cfg["hydra"]
    if isinstance(cfg, DictConfig) and OmegaConf.get_type(cfg) is schema:
        return OmegaConf.to_object(cfg)  # type: ignore[return-value]
    known = {f.name for f in dataclasses.fields(schema)}  # type: ignore[arg-type]
    if isinstance(cfg, DictConfig):
        data = OmegaConf.to_container(cfg, resolve=True)
    elif isinstance(cfg, Mapping):
        data = dict(cfg)
    else:  # a namespace or any object: its attributes (its own, or its class's) that are fields
        data = {k: getattr(cfg, k) for k in known if hasattr(cfg, k)}
        data.update(getattr(cfg, "__dict__", {}))
    unknown = sorted(set(map(str, data)) - known)  # type: ignore[arg-type]
    if unknown:
        raise ConfigError(f"unknown config key '{unknown[0]}' for {schema.__name__} "
                          f"(known here: {', '.join(sorted(known))})")
    merged = OmegaConf.merge(OmegaConf.structured(schema), data)
    return OmegaConf.to_object(merged)  # type: ignore[return-value]


def with_updates(node: Any, **updates: Any) -> Any:
    """A copy of a config node with some values replaced (the node itself is not touched): a
    schema instance (or a DictConfig composed onto a schema) is copied with `dataclasses.replace`;
    an untyped node (a run's saved config read by the watcher) into a plain namespace."""
    import dataclasses

    from omegaconf import DictConfig, OmegaConf

    if isinstance(node, DictConfig) and dataclasses.is_dataclass(OmegaConf.get_type(node)):
        node = OmegaConf.to_object(node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.replace(node, **updates)
    from types import SimpleNamespace

    d = dict(to_dict(node))
    d.update(updates)
    return SimpleNamespace(**d)


class ConfigError(ValueError):
    pass


def check_keys(cfg: DictConfig, schema: type | None = None, path: str = "") -> None:
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
