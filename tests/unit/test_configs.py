"""Every config composes; a wrong key or type fails at start with a message naming it."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from boundlab.config import check_keys, register_configs

CONF = Path(__file__).resolve().parents[2] / "conf"
PRIMARY = sorted(p.stem for p in CONF.glob("*.yaml"))
register_configs()


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def _compose(config_name: str, overrides=()):
    """Compose as a run would: with the hydra node set, so ${hydra:...} interpolations resolve."""
    from hydra.core.hydra_config import HydraConfig

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name=config_name, overrides=list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    return cfg


def _resolve(cfg):
    """Resolve every interpolation outside the hydra node (??? marks required user input)."""
    for key in cfg:
        if key != "hydra":
            node = cfg[key]
            if OmegaConf.is_config(node):
                OmegaConf.to_container(node, resolve=True, throw_on_missing=False)


def group_cases():
    cases = []
    for primary in PRIMARY:
        cfg = _compose(primary)
        for group in ("model", "task", "probe", "sampler", "logger", "algo", "backend"):
            if group in cfg:
                cases += [(primary, group, opt) for opt in options(group)]
        # Override-only groups (`# @package _global_`) of the training config.
        if "algo" in cfg:
            cases += [(primary, group, opt) for group in ("debug", "experiment")
                      for opt in options(group)]
    return cases


def test_primary_configs_exist():
    assert "probe" in PRIMARY


@pytest.mark.parametrize("primary,group,option", group_cases())
def test_every_group_option_composes(primary, group, option):
    cfg = _compose(primary, [f"{group}={option}"])
    check_keys(cfg)
    # A sweep: every value of every swept parameter composes too.
    params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
    for key, values in params.items():
        for value in str(values).split(","):
            swept = _compose(primary, [f"{group}={option}", f"{key}={value}"])
            check_keys(swept)
            _resolve(swept)
    _resolve(cfg)


@pytest.mark.parametrize("override,needle", [
    ("probe.nn=3", "nn"),
    ("+model.colour=red", "colour"),
    ("probe.n=many", "n"),
    ("sampler.batch_size=1.5", "batch_size"),
])
def test_wrong_key_or_type_fails_naming_it(override, needle):
    with pytest.raises(Exception) as e:
        check_keys(_compose("probe", [override]))
    assert needle in str(e.value)


def test_comments_above_every_schema_field():
    # Style rule: every config field says what it does (in the schema, where it is typed).
    src = (Path(__file__).resolve().parents[2] / "src/boundlab/config.py").read_text().splitlines()
    in_class = False
    for i, line in enumerate(src):
        if line.startswith("class ") and line.endswith("Config:") or line.startswith("class ProbeSettings"):
            in_class = True
            continue
        if line and not line.startswith(" "):
            in_class = False
        if in_class and line.startswith("    ") and not line.startswith("     ") and ": " in line \
                and "=" in line and not line.strip().startswith(("#", "def", "return")):
            prev = src[i - 1].strip()
            assert prev.startswith("#") or src[i - 1].strip().endswith(",") or "=" in src[i - 1], \
                f"config.py:{i + 1} {line.strip()} has no comment above it"


@pytest.mark.parametrize("primary", PRIMARY)
def test_run_dir_resolves_without_overrides(primary):
    # The quick start runs without hydra.run.dir: the default run dir must resolve to a path.
    cfg = _compose(primary)
    run_dir = OmegaConf.select(cfg, "hydra.run.dir")
    assert isinstance(run_dir, str) and run_dir.startswith("outputs/"), run_dir


def test_resume_sets_the_run_dir():
    cfg = _compose("train", ["resume=/tmp/some/run"])
    assert OmegaConf.select(cfg, "hydra.run.dir") == "/tmp/some/run"
