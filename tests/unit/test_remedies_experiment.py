"""experiment=remedies (issues 14 and 39): eight arms at three seeds from one base, each arm setting only
its remedy, every run passing the start-up checks."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from boundlab.config import check_keys, register_configs

CONF = Path(__file__).resolve().parents[2] / "conf"
ARMS = ["grpo", "passk_grpo", "weighted_reinforce", "nsr", "unlikeliness", "entropy", "kl_strong", "pkpo"]
register_configs()


def _compose(*overrides):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=["experiment=remedies", *overrides],
                       return_hydra_config=True)


def test_the_sweep_is_every_arm_at_three_seeds():
    params = OmegaConf.select(_compose(), "hydra.sweeper.params")
    assert str(params["+remedy"]).split(",") == ARMS
    assert sorted(p.stem for p in (CONF / "remedy").glob("*.yaml")) == sorted(ARMS)
    assert [int(s) for s in str(params["train.seed"]).split(",")] == [0, 1, 2]


# arm -> (algo.name, kl.coef, algo.shaping.unlikeliness, algo.entropy_coef, positive_weight)
EXPECTED = {
    "grpo": ("grpo", 0.0, 0.0, 0.0, None),
    "passk_grpo": ("passk_grpo", 0.0, 0.0, 0.0, None),
    "weighted_reinforce": ("weighted_reinforce", 0.0, 0.0, 0.0, 0.1),
    "nsr": ("nsr", 0.0, 0.0, 0.0, 0.0),
    "unlikeliness": ("grpo", 0.0, 0.25, 0.0, None),
    "entropy": ("grpo", 0.0, 0.0, 0.01, None),
    "kl_strong": ("grpo", 0.1, 0.0, 0.0, None),
    "pkpo": ("pkpo", 0.0, 0.0, 0.0, None),
}


@pytest.mark.parametrize("arm", ARMS)
def test_each_arm_sets_its_remedy_only_and_passes_the_start_up_checks(arm):
    from boundlab.validate import validate

    cfg = _compose(f"+remedy={arm}", "train.seed=2")
    check_keys(cfg)
    name, kl, beta, ent, pw = EXPECTED[arm]
    assert (cfg.algo.name, cfg.kl.coef, cfg.algo.shaping.unlikeliness, cfg.algo.entropy_coef) == (name, kl, beta, ent)
    if pw is not None:
        assert cfg.algo.onpolicy.positive_weight == pw
    # Same base, task, probe and length for every arm; the seed is the sweep's.
    assert (cfg.model.name, cfg.task.name, cfg.train.max_steps, cfg.train.save_steps, cfg.train.seed) == \
        ("toy2", "toy2", 150, 75, 2)
    cfg_plain = _compose(f"+remedy={arm}")
    assert OmegaConf.to_container(cfg_plain.probe) == OmegaConf.to_container(_compose("+remedy=grpo").probe)
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().set_config(cfg)
    validate(cfg)


@pytest.mark.parametrize("arm", ARMS)
def test_the_documented_smoke_launch_passes_the_start_up_checks_for_every_arm(arm):
    # `python train.py -m experiment=remedies debug=smoke algo.onpolicy.passk_k=2` (the file's header).
    from hydra.core.hydra_config import HydraConfig

    from boundlab.validate import validate

    cfg = _compose(f"+remedy={arm}", "debug=smoke", "algo.onpolicy.passk_k=2")
    HydraConfig.instance().set_config(cfg)
    validate(cfg)
    assert (cfg.algo.rollouts, cfg.train.max_steps) == (4, 4)
