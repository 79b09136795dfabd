"""A sampler for any model folder a run produces: the base, a full checkpoint, or a PEFT (LoRA)
adapter checkpoint, which is merged into its base first. Training's inline probes and the detached
watcher build their samplers here, so the two probe a checkpoint the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from boundlab.config import ModelConfig, SamplerConfig, with_updates


def sampler_factory(model_cfg: ModelConfig, sampler_cfg: SamplerConfig) -> Callable[[str], tuple[Any, Any]]:
    """model dir -> (sampler, tokenizer). `model_cfg` is the run's base model group."""
    from boundlab.models import load_model, load_tokenizer, resolve_model_path
    from boundlab.sampling import build_sampler, pick_device

    def make(model_dir: str):
        mcfg = with_updates(model_cfg, path=model_dir, gguf_package=None, gguf_file=None)
        tok = load_tokenizer(mcfg, model_dir)
        if (Path(model_dir) / "adapter_config.json").is_file():
            from peft import PeftModel

            base = load_model(model_cfg, pick_device(sampler_cfg.device), resolve_model_path(model_cfg),
                              whole=True)
            model = PeftModel.from_pretrained(base, model_dir).merge_and_unload()
            return build_sampler(mcfg, sampler_cfg, model=model, tokenizer=tok), tok
        return build_sampler(mcfg, sampler_cfg, tokenizer=tok), tok

    return make
