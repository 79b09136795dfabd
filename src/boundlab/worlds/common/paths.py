"""The `${toy_model:<name>}` resolver of conf/model/toy*.yaml, over a registry the worlds fill in.

Each world's `paths` module registers the folders of its shipped models when it is imported
(`MODELS.register("base")(base_model_dir)`), so this module imports no world and no world imports
another to resolve a name. The names are part of saved configs (a run's `.hydra/config.yaml` keeps
`${toy_model:base2}` until resolved): they never change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from boundlab.registry import Registry

# name -> a function returning the model's folder (loads with AutoTokenizer/AutoProcessor and
# AutoModelFor...from_pretrained).
MODELS: Registry[Path] = Registry("toy model")


def register_model(name: str, folder: Callable[[], Path]) -> None:
    """Registers a shipped model's folder under `name` (once per process; a module imported again
    under another name would register twice and fail loudly)."""
    MODELS.register(name)(folder)


def toy_model(which: str = "base") -> str:
    """The `${toy_model:...}` resolver: the folder of the shipped model registered as `which`."""
    return str(MODELS.get(which)())


def register_resolver() -> None:
    """Registers `toy_model` with OmegaConf. Called by boundlab.builtins after it has imported the
    worlds: the config layer knows no world, each world is a plug-in like any other."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("toy_model"):
        OmegaConf.register_new_resolver("toy_model", toy_model)
