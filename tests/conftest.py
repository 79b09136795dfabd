"""Shared fixtures: a tiny causal LM built locally (no hub), isolated store and W&B dirs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# What the entry points do first: register every built-in task, verifier, sampler, algorithm and the
# toy world (the core registries import none of them).
import boundlab.builtins  # noqa: E402,F401

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch, tmp_path_factory):
    # No test may reach a hub or a W&B server, or read the developer's credentials.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    # An in-process wandb.init (tracking tests) publishes its service in WANDB_SERVICE; a child
    # train.py would inherit it and share that service, which keeps a SIGKILLed child's run id
    # "in use" so its resume is refused. Every test's subprocesses get their own service.
    monkeypatch.delenv("WANDB_SERVICE", raising=False)
    # Nothing a test does lands in the user's home, store or cache: HOME, the W&B dir and the probe
    # store are the test's own; BOUNDLAB_CACHE (a SmolLM2 conversion takes ~26 s) and the build caches
    # of matplotlib and torch extensions are shared by the session's tests, never the user's.
    shared = _session_dirs(tmp_path_factory)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BOUNDLAB_CACHE", str(shared / "boundlab_cache"))
    monkeypatch.setenv("BOUNDLAB_STORE", str(home / "store.sqlite"))
    monkeypatch.setenv("WANDB_DIR", str(home / "wandb"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(home / "wandb_config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(home / "wandb_cache"))
    monkeypatch.setenv("HF_HOME", str(shared / "hf_home"))
    monkeypatch.setenv("MPLCONFIGDIR", str(shared / "matplotlib"))
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(shared / "torch_extensions"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


# The user's home as the session found it: the isolation test checks that nothing resolves into it.
REAL_HOME = Path(os.path.expanduser("~")).resolve()
_SHARED: list[Path] = []


@pytest.fixture
def real_home() -> Path:
    """The home the session started with (before any test's own HOME)."""
    return REAL_HOME


def _session_dirs(tmp_path_factory) -> Path:
    if not _SHARED:
        _SHARED.append(tmp_path_factory.mktemp("session_caches"))
    return _SHARED[0]


def build_tiny_lm(out: Path, hidden: int = 32, layers: int = 2, seed: int = 0) -> Path:
    """A byte-level BPE tokenizer and a random 2-layer Qwen2 model, saved as an HF folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<eos>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = ["The answer is \\boxed{42}. Find the number of minutes 0123456789 + - * / = ( )"] * 20
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>",
                                   padding_side="left")
    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=len(fast), hidden_size=hidden, intermediate_size=hidden * 2,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=2048, eos_token_id=fast.eos_token_id,
                      pad_token_id=fast.pad_token_id, tie_word_embeddings=True)
    model = Qwen2ForCausalLM(cfg)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    fast.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory) -> Path:
    import torch

    torch.set_num_threads(1)
    return build_tiny_lm(tmp_path_factory.mktemp("tiny_lm"))
