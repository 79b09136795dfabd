"""Where the shipped toy models live. Both folders load with `AutoTokenizer` and
`AutoModelForCausalLM.from_pretrained(folder)`."""

from __future__ import annotations

from pathlib import Path


def assets_dir() -> Path:
    return Path(__file__).resolve().parent / "assets"


def base_model_dir() -> Path:
    """The noisy base model (the one RL starts from)."""
    return assets_dir() / "base"


def teacher_model_dir() -> Path:
    """The teacher for distillation: trained on correct precedence-aware traces only."""
    return assets_dir() / "teacher"


def toy_model(which: str = "base") -> str:
    """The `${toy_model:base}` / `${toy_model:teacher}` resolver of conf/model/toy*.yaml
    (`base2` / `teacher2`: the second-edition world's; `vlm`: the visual world's VLM)."""
    if which == "vlm":
        from boundlab.toyvision import paths as pv

        return str(pv.base_model_dir())
    if which in ("base2", "teacher2"):
        from boundlab.toyworld2 import paths as p2

        return str({"base2": p2.base_model_dir, "teacher2": p2.teacher_model_dir}[which]())
    return str({"base": base_model_dir, "teacher": teacher_model_dir}[which]())


def register_resolver() -> None:
    """Registers `toy_model` with OmegaConf. Called by boundlab.builtins: the config layer does not
    know the toy world, which is a plug-in like any other world."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("toy_model"):
        OmegaConf.register_new_resolver("toy_model", toy_model)
