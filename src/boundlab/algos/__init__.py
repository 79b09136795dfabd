"""Algorithms by name. Each is an `Algorithm` (spec.py): the `algo.<family>` config block it reads,
the checks it declares, and a builder that turns one `BuildInputs` into a configured trainer: TRL's
own where TRL has the algorithm (`grpo.py`, `distill.py`), our `OnPolicyTrainer` where it does not
(`onpolicy/`).

Built-ins are one explicit list (`_BUILTINS`), one line per algorithm: adding an algorithm is its
own module, its `conf/algo/NAME.yaml` and one line here. `check(cfg)` is the one validator of the
algorithm choice (boundlab.validate and training/app.py call it, before any model work): the name,
the chosen algorithm's declared checks and the training options it rules out; `check_images` is
its part for a task that shows images.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from boundlab.algos.spec import Algorithm, BuildContext, BuildInputs
from boundlab.registry import Registry

if TYPE_CHECKING:
    from boundlab.config import TrainMain

ALGOS: Registry = Registry("algorithm")


def _builtins() -> tuple[Algorithm, ...]:
    from boundlab.algos import distill, grpo, onpolicy

    return (
        grpo.GRPO,
        grpo.DR_GRPO,
        grpo.RLOO,
        onpolicy.PPO,
        onpolicy.REINFORCE_PP,
        onpolicy.REINFORCE_PP_BASELINE,
        onpolicy.REMAX,
        onpolicy.DAPO,
        onpolicy.GRPO_ONPOLICY,
        onpolicy.PASSK_GRPO,
        onpolicy.WEIGHTED_REINFORCE,
        onpolicy.NSR,
        onpolicy.PKPO,
        distill.SFT_DISTILL,
        distill.ONPOLICY_DISTILL,
    )


for _algo in _builtins():
    ALGOS.register(_algo.name)(_algo)


def get(name: str) -> Algorithm:
    """The registered algorithm `name`; KeyError names the known ones."""
    return ALGOS.get(name)  # type: ignore[return-value]


def check(cfg: TrainMain) -> Algorithm:
    """Fail fast, in one line, on an unknown algorithm or a combination it cannot honour; return
    the chosen algorithm."""
    from boundlab.config import ConfigError

    try:
        algo = get(cfg.algo.name)
    except KeyError as e:  # algo.name set by hand to a name no builder has
        raise ConfigError(f"algo.name={cfg.algo.name}: {e.args[0]}; choose the algorithm with algo=NAME") \
            from None
    algo.check(cfg)
    if cfg.train.ref_reset_every:
        from boundlab.algos.resets import check_reset

        if algo.family == "distill":
            raise ConfigError(f"train.ref_reset_every: algo={algo.name} distils from a teacher and has no KL "
                              f"reference to reset")
        check_reset(cfg)
    chunk = cfg.train.generation_chunk
    if chunk is not None and (algo.family != "onpolicy" or cfg.rollout.name != "hf"):
        raise ConfigError(f"train.generation_chunk={chunk}: chunks our trainer's generate calls (rollout=hf, e.g. "
                          f"algo=grpo_onpolicy); algo={cfg.algo.name} with rollout={cfg.rollout.name} samples "
                          f"each batch in one engine call")
    return algo


def check_images(name: str) -> None:
    """A task that shows images trains only with an algorithm whose trainer feeds them (`images`)."""
    from boundlab.config import ConfigError

    if not get(name).images:
        feeding = [n for n in ALGOS.in_order() if get(n).images]
        raise ConfigError(f"algo={name} does not feed images to the model; a visual task trains "
                          f"with algo in {feeding}")


def build(inputs: BuildInputs) -> Any:
    """The configured trainer for `inputs.cfg.algo.name`."""
    return get(inputs.cfg.algo.name).build(inputs)


__all__ = ["ALGOS", "Algorithm", "BuildContext", "BuildInputs", "build", "check", "check_images", "get"]
