"""The compact decoder (boundlab.sampling.compact) runs the same network as the model's own forward
and samples from the same distribution as `generate`.

- Its logits equal the model's, with left padding, on the toy world's base and on a random Llama
  with grouped-query attention.
- Greedy decoding gives the very tokens `generate` gives, while rows end at different steps (the
  ended ones are dropped from the batch and its cache).
- Its top-p cut keeps the tokens transformers' TopPLogitsWarper keeps; its temperature draws match
  softmax(logits / T).
- The probe key records the engine, so a store never mixes its samples with generate's; a model it
  cannot run exactly goes through generate.
"""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

from boundlab.sampling.base import GenSettings
from boundlab.sampling.compact import CompactDecoder
from boundlab.sampling.hf import HFSampler
from boundlab.worlds.toyworld2.paths import base_model_dir

PROMPTS = ["Q:9+6*1*5;", "Q:2#7;", "Q:(3+4)*2-1#5+8;", "Q:1+1;", "Q:7*8-3;"]


def toy2():
    d = base_model_dir()
    return AutoModelForCausalLM.from_pretrained(d).eval(), AutoTokenizer.from_pretrained(d)


def full_logits(dec: CompactDecoder, ids: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
    return dec.prefill(ids, attn, ids.shape[1])[0]


@torch.inference_mode()
def test_logits_equal_the_models_own_with_left_padding():
    model, tok = toy2()
    enc = tok(PROMPTS, return_tensors="pt", padding=True)
    assert (enc["attention_mask"] == 0).any(), "the batch must be left-padded"
    ref = model(**enc).logits[:, -1]
    assert CompactDecoder.supports(model)
    assert torch.allclose(full_logits(CompactDecoder(model), enc["input_ids"], enc["attention_mask"]), ref,
                          atol=1e-4)

    torch.manual_seed(0)
    gqa = LlamaForCausalLM(LlamaConfig(vocab_size=40, hidden_size=64, intermediate_size=96,
                                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                       max_position_embeddings=64, tie_word_embeddings=False)).eval()
    ids = torch.randint(2, 40, (3, 9))
    attn = torch.ones_like(ids)
    attn[0, :4] = 0
    attn[2, :1] = 0
    assert CompactDecoder.supports(gqa)
    assert torch.allclose(full_logits(CompactDecoder(gqa), ids, attn),
                          gqa(input_ids=ids, attention_mask=attn).logits[:, -1], atol=1e-4)


@torch.inference_mode()
def test_a_shared_prompt_is_prefilled_once_and_its_rows_match_a_prefill_of_each():
    """A problem's n rows share their prompt: prefill runs each distinct prompt once and copies its
    cache to the rows. The logits, the cache, the key bias and the next positions must equal those of
    prefilling every row on its own."""
    model, tok = toy2()
    dec = CompactDecoder(model)
    enc = tok([PROMPTS[0]] * 3 + [PROMPTS[2]] * 2 + [PROMPTS[0]], return_tensors="pt", padding=True)
    ids, attn = enc["input_ids"], enc["attention_mask"]
    total = ids.shape[1] + 4
    logits, cache, keybias, nextpos = dec.prefill(ids, attn, total)
    for r in range(len(ids)):
        one = dec.prefill(ids[r:r + 1], attn[r:r + 1], total)
        assert torch.allclose(logits[r], one[0][0], atol=1e-5)
        p = ids.shape[1]
        for kv, kv1 in zip(cache, one[1]):
            assert torch.allclose(kv[:, r, :, :p], kv1[:, 0, :, :p], atol=1e-5)
        assert torch.equal(keybias[r], one[2][0]) and nextpos[r] == one[3][0]
    calls = []
    forward = dec.forward
    dec.forward = lambda ids, *a: calls.append(ids.shape[0]) or forward(ids, *a)
    dec.prefill(ids, attn, total)
    assert calls == [2], "two distinct prompts: one forward over two rows"


def test_greedy_tokens_equal_generate_while_rows_end_at_different_steps():
    model, tok = toy2()
    rows = PROMPTS * 3
    settings = GenSettings(temperature=0.0, max_new_tokens=60)
    compact = HFSampler(model, tok, batch_size=64)
    plain = HFSampler(model, tok, batch_size=64, engine="generate")
    assert compact.key_engine(settings) == "compact" and plain.key_engine(settings) is None
    got = [c for cs in compact.generate([(p, 1) for p in rows], settings, seed=0) for c in cs]
    ref = [c for cs in plain.generate([(p, 1) for p in rows], settings, seed=0) for c in cs]
    assert [(c.text, c.n_tokens, c.finish) for c in got] == [(c.text, c.n_tokens, c.finish) for c in ref]
    assert len({c.n_tokens for c in got}) > 1, "rows must end at different steps"
    assert all(c.finish == "eos" for c in got)


def test_top_p_keeps_what_transformers_keeps():
    from transformers.generation.logits_process import TopPLogitsWarper

    torch.manual_seed(1)
    logits = torch.randn(64, 27) * 3
    for top_p in (0.3, 0.8, 0.95):
        ref = TopPLogitsWarper(top_p)(None, logits.clone())
        # Draws from our cut only ever land where transformers kept the token.
        gen = torch.Generator().manual_seed(0)
        for _ in range(20):
            drawn = CompactDecoder._draw(logits, 1.0, top_p, gen)
            assert torch.isfinite(ref.gather(1, drawn[:, None])).all()
        # And every token transformers kept has been drawn by ours at least once (row 0, many draws).
        gen = torch.Generator().manual_seed(0)
        seen = set(CompactDecoder._draw(logits[:1].expand(4000, -1), 1.0, top_p, gen).tolist())
        assert seen == set(torch.isfinite(ref[0]).nonzero().squeeze(1).tolist())


def test_temperature_draws_follow_softmax_of_scaled_logits():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]]).expand(20000, -1)
    gen = torch.Generator().manual_seed(0)
    for t in (0.5, 1.0, 2.0):
        drawn = CompactDecoder._draw(logits, t, 1.0, gen)
        freq = torch.bincount(drawn, minlength=4).float() / len(drawn)
        expect = (logits[0] / t).softmax(-1)
        # 20000 draws: a standard error below 0.0036 per cell.
        assert (freq - expect).abs().max() < 0.015, (t, freq, expect)


def test_same_seed_same_samples_and_what_it_cannot_run_goes_through_generate():
    model, tok = toy2()
    s = HFSampler(model, tok)
    settings = GenSettings(temperature=1.0, max_new_tokens=60)
    a = s.generate([(PROMPTS[0], 8), (PROMPTS[1], 8)], settings, seed=3)
    b = s.generate([(PROMPTS[0], 8), (PROMPTS[1], 8)], settings, seed=3)
    assert a == b
    assert s.key_engine(GenSettings(stop=(";",))) is None  # stop strings: generate
    assert not CompactDecoder.supports(model.to(torch.float64))


def test_the_probe_key_records_the_compact_engine(tmp_path):
    import boundlab.builtins  # noqa: F401  (registers the toy2 task and verifier)
    from boundlab.probe.context import ProbeContext
    from boundlab.probe.runner import probe_model
    from boundlab.probe.spec import ProbeSpec
    from boundlab.probe.store import Store
    from boundlab.tasks import build_task
    from boundlab.verify import build_verifier
    from types import SimpleNamespace

    model, tok = toy2()
    task = build_task(SimpleNamespace(name="toy2", split="test", toy2={"tiers": ["H1"], "per_tier": 2}))
    store = Store(tmp_path / "store.sqlite")
    gen = GenSettings(temperature=1.0, max_new_tokens=60)
    keys = {}
    for engine in ("auto", "generate"):
        r = probe_model(ProbeContext(task, store, build_verifier("toy2"), progress=False),
                        ProbeSpec(4, gen, 0, bootstrap_iters=10), HFSampler(model, tok, engine=engine), "fp")
        keys[engine] = r.key
    assert keys["auto"] != keys["generate"]
    assert store.probe_info(keys["auto"])["settings"]["engine"] == "compact"
    assert "engine" not in store.probe_info(keys["generate"])["settings"]
