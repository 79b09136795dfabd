"""A LoRA checkpoint probed with sampler=vllm: the factory merges the adapter into its base, saves
the merged model to a folder and hands vLLM that folder (vLLM loads only folders). vLLM itself is
replaced by a recorder (no GPU here); everything else is the real path (boundlab.sampling.checkpoint)."""

from __future__ import annotations

import sys
import types

import pytest
import torch


class _RecordingLLM:
    seen: list[dict] = []

    def __init__(self, model: str, **kw):
        from pathlib import Path

        from transformers import AutoModelForCausalLM

        p = Path(model)
        # What vLLM would load, read now (the folder is deleted on close).
        self.seen.append({"path": p, "files": sorted(f.name for f in p.iterdir()),
                          "state": AutoModelForCausalLM.from_pretrained(p).state_dict()})


@pytest.fixture
def fake_vllm(monkeypatch):
    mod = types.ModuleType("vllm")
    mod.LLM = _RecordingLLM
    monkeypatch.setitem(sys.modules, "vllm", mod)
    _RecordingLLM.seen = []
    return _RecordingLLM


def _model_cfg(path):
    from omegaconf import OmegaConf

    return OmegaConf.create(dict(name="tiny", path=str(path), gguf_package=None, gguf_file=None,
                                 cache_dir="/nonexistent", dtype="float32", allow_download=False,
                                 trust_remote_code=False))


def _vllm_cfg():
    from omegaconf import OmegaConf

    from boundlab.config import SamplerConfig

    return OmegaConf.merge(OmegaConf.structured(SamplerConfig),
                           {"name": "vllm", "device": "cpu", "batch_size": 4,
                            "vllm": {"gpu_memory_utilization": 0.5, "tensor_parallel_size": 1}})


def test_lora_checkpoint_reaches_vllm_as_a_merged_folder(tiny_lm, tmp_path, fake_vllm):
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    from boundlab.sampling.checkpoint import sampler_factory

    torch.manual_seed(0)
    peft = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_lm, dtype=torch.float32),
                          LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
    ckpt = tmp_path / "checkpoint-2"
    peft.save_pretrained(ckpt)
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(tiny_lm).save_pretrained(ckpt)  # HF checkpoints hold the tokenizer
    expected = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_lm, dtype=torch.float32),
                                         ckpt).merge_and_unload().state_dict()

    scfg = _vllm_cfg()
    sampler, tok = sampler_factory(_model_cfg(tiny_lm), scfg)(str(ckpt))
    assert len(fake_vllm.seen) == 1
    seen = fake_vllm.seen[0]
    assert seen["path"] != ckpt and seen["path"].parent != ckpt  # not the adapter folder
    assert "config.json" in seen["files"] and "model.safetensors" in seen["files"]
    assert "tokenizer.json" in seen["files"] and "adapter_config.json" not in seen["files"]
    assert set(seen["state"]) == set(expected)
    for k, v in expected.items():
        assert torch.equal(seen["state"][k], v), k
    # The base's weights differ from the merged ones: the adapter really was applied.
    base = AutoModelForCausalLM.from_pretrained(tiny_lm, dtype=torch.float32).state_dict()
    assert any(not torch.equal(base[k], expected[k]) for k in expected)
    assert seen["path"].is_dir()
    sampler.close()
    assert not seen["path"].exists()  # the merged copy is the sampler's own, deleted on close


def test_full_checkpoint_goes_to_vllm_as_is(tiny_lm, fake_vllm):
    from boundlab.sampling.checkpoint import sampler_factory

    scfg = _vllm_cfg()
    sampler, _ = sampler_factory(_model_cfg(tiny_lm), scfg)(str(tiny_lm))
    assert fake_vllm.seen[0]["path"] == tiny_lm
    sampler.close()
    assert tiny_lm.is_dir()  # a folder the sampler did not make is never deleted
