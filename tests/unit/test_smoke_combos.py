"""Every shipped algorithm and remedy composes and passes the start-up checks under debug=smoke (the
natural first demo): composition, key checks, validation and the algorithm's own combination checks,
which is everything train.py does before it loads a model."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig

from boundlab.config import check_keys, register_configs

CONF = Path(__file__).resolve().parents[2] / "conf"
ALGOS = sorted(p.stem for p in (CONF / "algo").glob("*.yaml"))
REMEDIES = sorted(p.stem for p in (CONF / "remedy").glob("*.yaml"))
register_configs()


def _start_up_checks(*overrides):
    from boundlab.algos import check as check_algo
    from boundlab.probe.fit import fit_probe_settings
    from boundlab.validate import validate

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="train", overrides=list(overrides), return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        check_keys(cfg)
        cfg = fit_probe_settings(cfg, "train")
        validate(cfg)
        check_algo(cfg)
    return cfg


def test_every_shipped_algorithm_and_remedy_is_listed():
    assert len(ALGOS) >= 10 and "passk_grpo" in ALGOS and "passk_grpo" in REMEDIES


@pytest.mark.parametrize("algo", ALGOS)
def test_every_algorithm_passes_the_start_up_checks_under_smoke(algo):
    cfg = _start_up_checks(f"algo={algo}", "debug=smoke")
    assert cfg.algo.name == algo and cfg.train.max_steps == 4


@pytest.mark.parametrize("remedy", REMEDIES)
def test_every_remedy_passes_the_start_up_checks_under_smoke(remedy):
    cfg = _start_up_checks("experiment=remedies", f"+remedy={remedy}", "debug=smoke")
    assert cfg.train.max_steps == 4


def test_passk_smoke_keeps_k_below_the_rollouts():
    cfg = _start_up_checks("algo=passk_grpo", "debug=smoke")
    assert 1 <= cfg.algo.onpolicy.passk_k < cfg.algo.rollouts
