"""arm_intervals.run_arms: runs are seeds of one arm only when their names say so and their saved
configs differ in the seed alone. The settled sweep's `grpo_s0..2` and its controls
`grpo_shuffled_reward` and `grpo_strict_reward` all run algo=grpo: the controls must not be pooled
as more GRPO seeds (they were, in the verdict's "RL" family, before this rule)."""

from __future__ import annotations

from omegaconf import OmegaConf

from boundlab.report.arm_intervals import recipe, run_arms
from boundlab.report.comparisons import RunProgress


def _run(label: str, seed: int, **reward) -> RunProgress:
    cfg = OmegaConf.create({"algo": {"name": "grpo"}, "train": {"seed": seed, "max_steps": 300},
                            "reward": {"strict": False, "shuffle_within_group": False, **reward},
                            "logger": {"group": f"sweep-{label}"}, "store": {"path": f"/tmp/{label}.sqlite"}})
    return RunProgress(label, "grpo", config=cfg)


def test_controls_are_their_own_arms_not_more_seeds():
    runs = [_run("grpo_s0", 0), _run("grpo_s1", 1), _run("grpo_shuffled_reward", 0, shuffle_within_group=True),
            _run("grpo_strict_reward", 0, strict=True), _run("grpo_s2", 2)]
    names = run_arms(runs)
    assert [names[id(r)] for r in runs] == ["grpo", "grpo", "grpo_shuffled_reward", "grpo_strict_reward", "grpo"]


def test_seeds_differ_in_the_seed_and_where_they_ran_only():
    a, b = _run("3_grpo_s0", 0), _run("3_grpo_s1", 1)
    assert recipe(a) == recipe(b)
    assert set(run_arms([a, b]).values()) == {"grpo"}
    c = _run("3_grpo_s2", 2)
    c.config.train.max_steps = 150  # a different recipe under the same name: split, named apart
    names = run_arms([a, b, c])
    assert names[id(a)] == names[id(b)] != names[id(c)] and names[id(c)].startswith("grpo #")


def test_runs_without_a_config_keep_the_name_rule():
    a, b = RunProgress("grpo_s0", "grpo"), RunProgress("grpo_s1", "grpo")
    assert set(run_arms([a, b]).values()) == {"grpo"}


def test_the_shuffled_reward_arm_is_the_drift_control_in_the_verdict():
    from boundlab.report.sections.verdict import _Arm

    seeds = [_run("grpo_s0", 0), _run("grpo_s1", 1)]
    for r in seeds:
        r.checkpoints = [(300, "k", {})]
    drift = _run("grpo_shuffled_reward", 0, shuffle_within_group=True)
    drift.checkpoints = [(300, "k", {})]
    assert _Arm("grpo", seeds).family == "RL"
    assert _Arm("grpo_shuffled_reward", [drift]).family == "drift control"
