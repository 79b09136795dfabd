"""Algorithms as typed plug-ins: every registered algorithm declares its config family, its config
file sets only its own family's block, the generic start-up check runs the checks an algorithm
declares, builders get one `BuildInputs`, and a wrong key inside a family block fails in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from boundlab import algos
from boundlab.algos.spec import FAMILIES, Algorithm, BuildContext, BuildInputs
from boundlab.config import AlgoConfig, ConfigError, check_keys, register_configs
from boundlab.validate import validate

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
register_configs()


def _compose(overrides=()):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_every_algorithm_has_a_family_and_a_config_file():
    names = algos.ALGOS.names()
    for name in names:
        algo = algos.get(name)
        assert isinstance(algo, Algorithm) and algo.name == name
        assert algo.family in FAMILIES
        assert (CONF / "algo" / f"{name}.yaml").is_file(), f"conf/algo/{name}.yaml is missing"
        assert _compose([f"algo={name}"]).algo.name == name
    # Every config file is a registered algorithm: no orphan file, no unregistered builder.
    assert sorted(p.stem for p in (CONF / "algo").glob("*.yaml")) == names


@pytest.mark.parametrize("name", algos.ALGOS.names())
def test_config_file_sets_only_its_own_family_block(name):
    family = algos.get(name).family
    foreign = set(FAMILIES) - {family}
    doc = yaml.safe_load((CONF / "algo" / f"{name}.yaml").read_text())
    assert not foreign & set(doc), f"conf/algo/{name}.yaml sets another family's block"
    # and no family knob sits at the top level: the top level holds AlgoConfig's shared knobs only
    shared = set(AlgoConfig.__dataclass_fields__) - set(FAMILIES)
    assert set(doc) - {"defaults"} <= shared | {family}, set(doc) - shared


def test_family_blocks_are_what_the_trainers_read():
    cfg = _compose(["algo=dapo"])
    assert (cfg.algo.onpolicy.loss_type, cfg.algo.onpolicy.epsilon_high, cfg.algo.onpolicy.dynamic_sampling,
            cfg.algo.onpolicy.overlong_buffer) == ("dapo", 0.28, True, 8)
    cfg = _compose(["algo=dr_grpo"])
    assert (cfg.algo.grpo.loss_type, cfg.algo.grpo.scale_rewards) == ("dr_grpo", "none")
    cfg = _compose(["algo=sft_distill", "debug=smoke"])
    assert (cfg.algo.distill.teacher_samples, cfg.algo.distill.max_traces_per_problem) == (2, 4)


@pytest.mark.parametrize("override,line", [
    ("+algo.onpolicy.gama=0.9", "unknown config key 'algo.onpolicy.gama' (known here: "),
    ("+algo.distill.teacher_sample=3", "unknown config key 'algo.distill.teacher_sample' (known here: "),
    ("+algo.grpo.critic=1", "unknown config key 'algo.grpo.critic' (known here: "),
])
def test_wrong_key_in_a_family_block_is_one_line(override, line):
    with pytest.raises(ConfigError) as e:
        check_keys(_compose([override]))
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_old_flat_family_key_no_longer_composes():
    # The family knobs moved into their blocks: the old flat spelling must not be silently accepted.
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="gamma"):
        _compose(["algo=ppo", "algo.gamma=0.9"])


def test_range_check_names_the_block_key():
    with pytest.raises(ConfigError) as e:
        validate(_compose(["algo=ppo", "algo.onpolicy.lam=2"]))
    assert str(e.value) == "algo.onpolicy.lam=2.0: must be in [0, 1]"
    with pytest.raises(ConfigError) as e:
        validate(_compose(["algo=grpo", "algo.grpo.epsilon=0"]))
    assert str(e.value) == "algo.grpo.epsilon=0.0: must be > 0"


@pytest.fixture
def fake_algo():
    """A throwaway algorithm registered for one test, then removed (the registry is global)."""
    seen: dict = {}

    def refuse_odd(cfg):
        if cfg.algo.rollouts % 2:
            raise ConfigError(f"algo=test_plugins_fake needs an even algo.rollouts (got {cfg.algo.rollouts})")

    def build(x: BuildInputs):
        seen["inputs"] = x
        return "trainer"

    algo = Algorithm("test_plugins_fake", "grpo", build, (refuse_odd,))
    algos.ALGOS.register(algo.name)(algo)
    try:
        yield algo, seen
    finally:
        del algos.ALGOS._items[algo.name]


def test_generic_check_runs_the_declared_checks(fake_algo):
    algo, _ = fake_algo
    with pytest.raises(ConfigError) as e:
        algos.check(_compose(["algo.name=test_plugins_fake", "algo.rollouts=3"]))
    assert str(e.value) == "algo=test_plugins_fake needs an even algo.rollouts (got 3)"
    algos.check(_compose(["algo.name=test_plugins_fake", "algo.rollouts=4"]))  # passes


def test_the_algorithm_choice_has_one_validator(fake_algo):
    # boundlab.algos.check returns the chosen algorithm (validate.py and training/app.py read its
    # family from it) and refuses what the choice rules out elsewhere (train.generation_chunk).
    algo, _ = fake_algo
    assert algos.check(_compose(["algo.name=test_plugins_fake", "algo.rollouts=4"])) is algo
    with pytest.raises(ConfigError, match="algo=test_plugins_fake with rollout=hf samples each batch"):
        algos.check(_compose(["algo.name=test_plugins_fake", "algo.rollouts=4", "train.generation_chunk=8"]))


def test_feeding_images_is_declared_with_the_algorithm(fake_algo):
    algo, _ = fake_algo
    with pytest.raises(ConfigError) as e:
        algos.check_images(algo.name)
    assert str(e.value) == ("algo=test_plugins_fake does not feed images to the model; a visual task trains "
                            "with algo in ['grpo', 'dr_grpo']")
    algos.check_images("grpo")  # passes
    algos.check_images("dr_grpo")


def test_build_hands_the_one_inputs_value_to_the_builder(fake_algo, tmp_path):
    _, seen = fake_algo
    cfg = _compose(["algo.name=test_plugins_fake"])
    ctx = BuildContext(task="task", verifier="verifier", store="store", run_dir=tmp_path)
    x = BuildInputs(cfg, "model", "tok", "data", [len], [], str(tmp_path), [], None, ctx)
    assert algos.build(x) == "trainer"
    assert seen["inputs"] is x and seen["inputs"].context.run_dir == tmp_path


def test_unknown_family_is_refused_when_declared():
    with pytest.raises(ValueError, match="family 'rl' is not one of grpo, onpolicy, distill"):
        Algorithm("x", "rl", lambda x: None)


def test_no_source_file_over_500_lines():
    for f in (ROOT / "src/boundlab").rglob("*.py"):
        n = len(f.read_text().splitlines())
        assert n <= 500, f"{f.relative_to(ROOT)} has {n} lines"


@pytest.mark.parametrize("name", ["ppo", "dapo", "grpo", "sft_distill"])
def test_a_run_dir_from_before_the_blocks_is_lifted_into_them(name):
    # A run saved with the flat algo.* keys (as every run before the family blocks) must resume with
    # the same settings: its .hydra/config.yaml is lifted into the blocks before the schema merge.
    from omegaconf import OmegaConf

    from boundlab.config import TrainMain, lift_flat_algo_keys

    fresh = _compose([f"algo={name}", "debug=smoke", "algo.onpolicy.gamma=0.5"] if name == "ppo"
                     else [f"algo={name}", "debug=smoke"])
    data = OmegaConf.to_container(fresh, resolve=False)
    algo = data["algo"]
    family = algos.get(name).family
    old = {k: v for k, v in algo.items() if k not in FAMILIES}
    # The old files held every knob flat: the on-policy ones, then the policy-gradient ones as the
    # algorithm's own family set them.
    # (Knobs added after the blocks existed were never flat.)
    old.update({k: v for k, v in algo["onpolicy"].items() if k not in ("passk_k", "passk_k_final", "positive_weight")})
    old.update(algo["grpo"] if family == "grpo" else {})
    old.update({("distill_beta" if k == "beta" else k): v for k, v in algo["distill"].items()})
    data["algo"] = old
    saved = OmegaConf.create(data)
    with pytest.raises(Exception, match="not in 'AlgoConfig'"):  # what resume met before the lift
        OmegaConf.merge(OmegaConf.structured(TrainMain), saved)
    cfg = OmegaConf.merge(OmegaConf.structured(TrainMain), lift_flat_algo_keys(saved))
    check_keys(cfg)
    got = cfg.algo
    # Knobs that were never flat (passk_k, positive_weight) cannot come from an old run: a lifted run
    # gets the schema's defaults for them (debug=smoke sets passk_k=2 in a fresh run); the rest match.
    never_flat = ("passk_k", "passk_k_final", "positive_weight")
    if family == "onpolicy":
        from boundlab.config.training import OnPolicyConfig

        assert {k: got.onpolicy[k] for k in never_flat} == \
            {k: OnPolicyConfig.__dataclass_fields__[k].default for k in never_flat}
    assert {k: v for k, v in got[family].items() if k not in never_flat} == \
        {k: v for k, v in fresh.algo[family].items() if k not in never_flat}
    assert got.distill == fresh.algo.distill
    assert {k: got[k] for k in old if k in AlgoConfig.__dataclass_fields__} == \
        {k: fresh.algo[k] for k in old if k in AlgoConfig.__dataclass_fields__}
    if name == "ppo":
        assert got.onpolicy.gamma == 0.5


def test_a_config_already_in_blocks_is_not_touched():
    from boundlab.config import lift_flat_algo_keys

    cfg = _compose(["algo=dapo"])
    assert lift_flat_algo_keys(cfg) is cfg
