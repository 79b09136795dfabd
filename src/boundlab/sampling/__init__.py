"""Samplers by name: `hf` (transformers generate), `vllm` (GPU) and `power` (p^alpha by MCMC).

A sampler factory reads the shared `sampler.*` knobs (name, batch_size, device, torch_threads) and
only its own block: `sampler.hf`, `sampler.vllm` and `sampler.power` go, as keyword arguments, to their sampler alone,
whose constructor takes no catch-all, so an option it does not know is a TypeError.
"""

from __future__ import annotations

from typing import Any

from boundlab.config import ModelConfig, SamplerConfig, as_typed, to_dict
from boundlab.registry import Registry
from boundlab.sampling.base import Completion, GenSettings, Sampler

SAMPLERS: Registry[Sampler] = Registry("sampler")


@SAMPLERS.register("hf")
def _hf(model_cfg: ModelConfig, sampler_cfg: SamplerConfig, model: Any = None, tokenizer: Any = None) -> Sampler:
    from boundlab.models import load_model, load_tokenizer, resolve_model_path
    from boundlab.sampling.hf import HFSampler

    device = pick_device(sampler_cfg.device)
    if model is None:
        resolved = resolve_model_path(model_cfg)
        tokenizer = tokenizer or load_tokenizer(model_cfg, resolved)
        # Samplers hold a whole model on one rank, never a ZeRO-3 partition.
        model = load_model(model_cfg, device, resolved, whole=True)
    options = to_dict(sampler_cfg.hf)
    if model_cfg.vision:
        from boundlab.models import load_processor

        options["processor"] = load_processor(model_cfg)
    return HFSampler(model, tokenizer, batch_size=sampler_cfg.batch_size, **options)


@SAMPLERS.register("vllm")
def _vllm(model_cfg: ModelConfig, sampler_cfg: SamplerConfig, model: Any = None, tokenizer: Any = None) -> Sampler:
    from boundlab.sampling.vllm import VLLMSampler, save_for_vllm

    options = to_dict(sampler_cfg.vllm)
    if model is None:
        return VLLMSampler(model_cfg, tokenizer=tokenizer, **options)
    # A model built in memory (a LoRA checkpoint merged into its base): vLLM loads only folders,
    # so it gets a saved copy, deleted when the sampler closes.
    folder = save_for_vllm(model, tokenizer)
    return VLLMSampler(model_cfg, path=str(folder), owned_dir=folder, tokenizer=tokenizer, **options)


@SAMPLERS.register("power")
def _power(model_cfg: ModelConfig, sampler_cfg: SamplerConfig, model: Any = None, tokenizer: Any = None) -> Sampler:
    from boundlab.models import load_model, load_tokenizer, resolve_model_path
    from boundlab.sampling.power import PowerSampler

    if model_cfg.vision:
        from boundlab.config import ConfigError

        raise ConfigError("sampler=power samples text models only; use sampler=hf for a "
                          "vision-language model")
    if model is None:
        resolved = resolve_model_path(model_cfg)
        tokenizer = tokenizer or load_tokenizer(model_cfg, resolved)
        model = load_model(model_cfg, pick_device(sampler_cfg.device), resolved, whole=True)
    return PowerSampler(model, tokenizer, batch_size=sampler_cfg.batch_size,
                        **to_dict(sampler_cfg.power))


def pick_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("sampler.device=cuda but no CUDA device is visible")
    return name


def build_sampler(model_cfg: ModelConfig, sampler_cfg: SamplerConfig, **kw: Any) -> Sampler:
    """The sampler `sampler_cfg.name` for `model_cfg`; the factories get both typed (`as_typed`:
    training and the watcher hold DictConfigs)."""
    model_cfg, sampler_cfg = as_typed(model_cfg, ModelConfig), as_typed(sampler_cfg, SamplerConfig)
    return SAMPLERS.get(sampler_cfg.name)(model_cfg, sampler_cfg, **kw)


__all__ = ["SAMPLERS", "Completion", "GenSettings", "Sampler", "build_sampler", "pick_device"]
