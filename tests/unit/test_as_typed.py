"""Typed inside (issue 37): an entry point converts its composed config to the schema once
(`as_typed`), copies are `dataclasses.replace`, and a key no schema knows is still one clear line."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from boundlab.config import (ConfigError, LoggerConfig, ModelConfig, ProbeMain, TaskConfig, Toy2TaskConfig, as_typed,
                             register_configs, to_dict, with_updates)
from boundlab.report.schema import ReportMain

CONF = Path(__file__).resolve().parents[2] / "conf"


def _compose(name: str, overrides: list[str] | None = None):
    from hydra import compose, initialize_config_dir

    import boundlab.builtins  # noqa: F401 - the ${toy_model:...} resolver and report_schema

    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(name, overrides=overrides or [])


def test_the_composed_probe_config_becomes_probe_main_with_the_same_values():
    cfg = _compose("probe", ["probe.n=4", "task.toy2.per_tier=3"])
    typed = as_typed(cfg, ProbeMain)
    assert type(typed) is ProbeMain and type(typed.task) is TaskConfig and type(typed.model) is ModelConfig
    assert typed.probe.n == 4 and typed.task.toy2.per_tier == 3
    # Resolved once: the ${toy_model:...} path and the ${oc.env:...} store path are plain strings.
    assert typed.model.path == cfg.model.path and "${" not in typed.store.path
    # What W&B gets as the run config is the same, key order included.
    assert to_dict(typed) == to_dict(cfg) and list(to_dict(typed)) == list(to_dict(cfg))
    assert as_typed(typed, ProbeMain) is typed  # a schema instance passes through


def test_the_composed_report_config_becomes_report_main():
    typed = as_typed(_compose("report", ["base=abc123", "task=math500"]), ReportMain)
    assert type(typed) is ReportMain and type(typed.task) is TaskConfig and typed.task.name == "math500"
    assert as_typed(_compose("report", ["base=abc123"]), ReportMain).task is None


def test_partial_configs_take_the_schema_defaults():
    assert (as_typed(SimpleNamespace(name="toy2", toy2={"per_tier": 3}), TaskConfig)
            == TaskConfig(name="toy2", toy2=Toy2TaskConfig(per_tier=3)))
    assert as_typed({"name": "gsm8k"}, TaskConfig) == TaskConfig(name="gsm8k")
    saved = OmegaConf.create({"name": "m", "path": "/x"})  # a run's saved config: untyped
    model = as_typed(saved, ModelConfig)
    assert (model.name, model.path, model.dtype, model.vision) == ("m", "/x", "auto", False)
    assert "${" not in model.cache_dir  # the schema's default, resolved like a composed one

    class Attrs:  # attributes on the class, not the instance (tests build task configs this way)
        name, split = "aime24", "train"

    assert as_typed(Attrs(), TaskConfig) == TaskConfig(name="aime24", split="train")


def test_a_key_the_schema_does_not_know_is_one_line():
    with pytest.raises(ConfigError) as e:
        as_typed(SimpleNamespace(name="toy2", limt=3), TaskConfig)
    assert str(e.value).startswith("unknown config key 'limt' for TaskConfig (known here: ")
    assert "\n" not in str(e.value)


def test_with_updates_copies_typed_nodes_with_replace_and_leaves_the_original():
    cfg = _compose("probe", ["logger=none"])
    copy = with_updates(cfg.logger, mode="offline", run_id="r1")
    assert type(copy) is LoggerConfig and copy.mode == "offline" and copy.run_id == "r1"
    assert cfg.logger.mode is None and cfg.logger.run_id is None
    typed = as_typed(cfg.model, ModelConfig)
    moved = with_updates(typed, path="/elsewhere", gguf_package=None)
    assert type(moved) is ModelConfig and moved.path == "/elsewhere" and typed.path != "/elsewhere"
    with pytest.raises(TypeError):
        with_updates(typed, no_such_field=1)  # replace refuses a field the schema lacks
    # An untyped node (a watched run's saved config) still gets a plain copy.
    plain = with_updates(OmegaConf.create({"name": "wandb", "mode": None}), mode="offline")
    assert plain.mode == "offline" and plain.name == "wandb"


def test_build_task_needs_a_name():
    from boundlab.tasks import build_task

    with pytest.raises(ValueError, match="needs a name"):
        build_task(SimpleNamespace(split="test"))
