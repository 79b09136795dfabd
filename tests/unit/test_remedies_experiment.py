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
# experiment=remedies_exploration (issue 39's exploration knobs): GRPO against its two arms.
EXPLORATION_ARMS = ["grpo", "outcome_bonus", "data_gate"]
register_configs()


def _compose(*overrides):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=["experiment=remedies", *overrides],
                       return_hydra_config=True)


def test_the_sweep_is_every_arm_at_three_seeds():
    params = OmegaConf.select(_compose(), "hydra.sweeper.params")
    assert str(params["+remedy"]).split(",") == ARMS
    assert sorted(p.stem for p in (CONF / "remedy").glob("*.yaml")) == sorted(set(ARMS) | set(EXPLORATION_ARMS))
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
    "outcome_bonus": ("grpo", 0.0, 0.0, 0.0, None),
    "data_gate": ("grpo", 0.0, 0.0, 0.0, None),
}
# arm -> ((reward.outcome_bonus.ucb_coef, .repeat_penalty), data.gate); every other arm has both off.
EXPLORATION = {"outcome_bonus": ((0.2, 0.1), "none"), "data_gate": ((0.0, 0.0), "zero_success")}


def _compose_exploration(*overrides):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=["experiment=remedies_exploration", *overrides],
                       return_hydra_config=True)


def test_the_exploration_sweep_is_its_arms_at_three_seeds():
    params = OmegaConf.select(_compose_exploration(), "hydra.sweeper.params")
    assert str(params["+remedy"]).split(",") == EXPLORATION_ARMS
    assert [int(s) for s in str(params["train.seed"]).split(",")] == [0, 1, 2]


@pytest.mark.parametrize("arm", EXPLORATION_ARMS)
def test_each_exploration_arm_sets_its_knob_only_and_passes_the_start_up_checks(arm):
    _check_arm(arm, _compose_exploration)


@pytest.mark.parametrize("arm", ARMS)
def test_each_arm_sets_its_remedy_only_and_passes_the_start_up_checks(arm):
    _check_arm(arm, _compose)


def _check_arm(arm, compose_with):
    from boundlab.validate import validate

    cfg = compose_with(f"+remedy={arm}", "train.seed=2")
    check_keys(cfg)
    name, kl, beta, ent, pw = EXPECTED[arm]
    ob, gate = cfg.reward.outcome_bonus, cfg.data.gate
    assert ((ob.ucb_coef, ob.repeat_penalty), gate) == EXPLORATION.get(arm, ((0.0, 0.0), "none"))
    assert (cfg.algo.name, cfg.kl.coef, cfg.algo.shaping.unlikeliness, cfg.algo.entropy_coef) == (name, kl, beta, ent)
    if pw is not None:
        assert cfg.algo.onpolicy.positive_weight == pw
    # Same base, task, probe and length for every arm; the seed is the sweep's.
    assert (cfg.model.name, cfg.task.name, cfg.train.max_steps, cfg.train.save_steps, cfg.train.seed) == \
        ("toy2", "toy2", 150, 75, 2)
    cfg_plain = compose_with(f"+remedy={arm}")
    assert OmegaConf.to_container(cfg_plain.probe) == OmegaConf.to_container(compose_with("+remedy=grpo").probe)
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
