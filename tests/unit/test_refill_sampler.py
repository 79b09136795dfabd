"""The continuously batched compact decoder (boundlab.sampling.refill, sampler.hf.engine=compact-cb)
samples from the same distribution as the compact decoder and `generate`.

- Every token is drawn from the logits the compact decoder gives on the same prefix (rows refilled
  mid-batch, across problems, at other lengths than their batch-mates), on the toy world's base and
  on a random Llama with grouped-query attention.
- Greedy decoding gives the very tokens `generate` gives, with a batch narrower than the rows.
- A row's sample depends on the seed and its index only, not on the batch width (the schedule).
- Its draws follow softmax(logits / T); its top-p keeps what transformers keeps.
- Each prompt is prefilled once; the probe key records the engine.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

from boundlab.sampling.base import GenSettings, prompt_token_ids
from boundlab.sampling.compact import CompactDecoder
from boundlab.sampling.hf import HFSampler
from boundlab.sampling.refill import RefillDecoder, draw_rows, row_keys, uniforms
from boundlab.worlds.toyworld2.paths import base_model_dir

torch.set_num_threads(1)
PROMPTS = ["Q:9+6*1*5;", "Q:2#7;", "Q:(3+4)*2-1#5+8;", "Q:1+1;", "Q:7*8-3;"]


def toy2():
    d = base_model_dir()
    return AutoModelForCausalLM.from_pretrained(d).eval(), AutoTokenizer.from_pretrained(d)


def random_gqa():
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=40, hidden_size=64, intermediate_size=96,
                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                        max_position_embeddings=64, tie_word_embeddings=False,
                                        eos_token_id=1)).eval()


def check_logits_against_compact(model, prompts, counts, width, max_new):
    """Run the refill engine with a trace; every traced row's logits must equal the compact
    decoder's last-position logits on (its prompt + the tokens it had drawn before)."""
    eng = RefillDecoder(model)
    trace: list = []
    out = eng.sample(prompts, counts, width, max_new, {1}, 1.0, 1.0, seed=5, trace=trace)
    flat = [(p, row) for p, c, rows in zip(prompts, counts, out) for row in rows]
    seen_rows_per_draw = {len([r for r in rows if r >= 0]) for rows, _ in trace}
    starts = {}  # row -> index of the draw its first token came from
    for t, (rows, _) in enumerate(trace):
        for r in rows:
            if r >= 0:
                starts.setdefault(r, t)
    # Rows start at different draws: some were refilled into a running batch.
    assert len(set(starts.values())) > 1
    ref = CompactDecoder(model)
    checked = 0
    for t, (rows, logits) in enumerate(trace):
        for s, r in enumerate(rows):
            if r < 0:
                continue
            prompt, (ids, _) = flat[r]
            k = t - starts[r]  # tokens this row had drawn before this draw
            if k >= len(ids):
                continue
            prefix = torch.tensor([list(prompt) + ids[:k]])
            want = ref.prefill(prefix, torch.ones_like(prefix), prefix.shape[1])[0][0]
            assert torch.allclose(logits[s], want, atol=1e-4), (r, k)
            checked += 1
    assert checked == sum(len(ids) for _, (ids, _) in flat)
    return seen_rows_per_draw


@pytest.mark.parametrize("group_rows,reorder_every", [(64, 16), (2, 3)])
@torch.inference_mode()
def test_every_token_is_drawn_from_the_compact_decoders_logits_on_its_prefix(monkeypatch, group_rows,
                                                                            reorder_every):
    """(2, 3): attention in groups of two slots, slots re-sorted by length every third step."""
    import boundlab.sampling.refill as refill

    monkeypatch.setattr(refill, "GROUP_ROWS", group_rows)
    monkeypatch.setattr(refill, "REORDER_EVERY", reorder_every)
    model, tok = toy2()
    prompts = prompt_token_ids(tok, PROMPTS[:4])
    assert len({len(p) for p in prompts}) > 1
    widths = check_logits_against_compact(model, prompts, [3, 2, 4, 3], width=4, max_new=40)
    assert 4 in widths, "the batch stays full while the queue has rows"
    gqa = random_gqa()
    torch.manual_seed(1)
    prompts = [torch.randint(2, 40, (n,)).tolist() for n in (3, 7, 5)]
    check_logits_against_compact(gqa, prompts, [4, 3, 5], width=3, max_new=12)


def test_greedy_tokens_equal_generate_with_a_batch_narrower_than_the_rows():
    model, tok = toy2()
    settings = GenSettings(temperature=0.0, max_new_tokens=60)
    cb = HFSampler(model, tok, batch_size=4, engine="compact-cb")
    plain = HFSampler(model, tok, batch_size=64, engine="generate")
    compact = HFSampler(model, tok, batch_size=64)
    requests = [(p, 2) for p in PROMPTS * 2]
    got = [c for cs in cb.generate(requests, settings, seed=0) for c in cs]
    ref = [c for cs in plain.generate(requests, settings, seed=0) for c in cs]
    ref2 = [c for cs in compact.generate(requests, settings, seed=0) for c in cs]
    assert [(c.text, c.n_tokens, c.finish) for c in got] == [(c.text, c.n_tokens, c.finish) for c in ref]
    assert [(c.text, c.n_tokens, c.finish) for c in got] == [(c.text, c.n_tokens, c.finish) for c in ref2]
    assert len({c.n_tokens for c in got}) > 1, "rows must end at different steps"


@torch.inference_mode()
def test_a_rows_sample_depends_on_the_seed_and_its_index_not_on_the_batch_width():
    gqa = random_gqa()
    eng = RefillDecoder(gqa)
    torch.manual_seed(2)
    prompts = [torch.randint(2, 40, (n,)).tolist() for n in (4, 6, 3)]
    runs = [eng.sample(prompts, [5, 3, 6], w, 16, {1}, 1.0, 0.9, seed=11, entropy=True) for w in (1, 3, 64)]
    import boundlab.sampling.refill as refill

    grouped = (refill.GROUP_ROWS, refill.REORDER_EVERY)
    refill.GROUP_ROWS, refill.REORDER_EVERY = 2, 2  # groups and re-sorting change no sample
    try:
        runs.append(eng.sample(prompts, [5, 3, 6], 5, 16, {1}, 1.0, 0.9, seed=11, entropy=True))
    finally:
        refill.GROUP_ROWS, refill.REORDER_EVERY = grouped
    tokens = [[[row[:2] for row in rows] for rows in run] for run in runs]
    assert tokens[0] == tokens[1] == tokens[2] == tokens[3]
    for a, b in zip(runs[0], runs[2]):
        for ra, rb in zip(a, b):
            assert ra[2] == pytest.approx(rb[2], rel=1e-5)
    other = eng.sample(prompts, [5, 3, 6], 3, 16, {1}, 1.0, 0.9, seed=12)
    assert [[row[0] for row in rows] for rows in other] != [[row[0] for row in rows] for rows in runs[0]]
    # Rows of one prompt draw different samples (their own streams).
    assert len({tuple(row[0]) for row in runs[0][2]}) > 1
    # Rows end at different lengths (so slots are refilled at different steps).
    assert len({len(row[0]) for rows in runs[0] for row in rows}) > 1


def test_draws_follow_softmax_of_scaled_logits_and_uniforms_are_uniform():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, float("-inf")]]).expand(20000, -1)
    keys = row_keys(3, torch.arange(20000))
    for step, t in enumerate((0.5, 1.0, 2.0)):
        drawn, _ = draw_rows(logits, t, 1.0, keys, torch.full((20000,), step))
        freq = torch.bincount(drawn, minlength=5).double() / len(drawn)
        expect = (logits[0] / t).double().softmax(-1)
        # 20000 draws: a standard error below 0.0036 per cell; the -inf token is never drawn.
        assert (freq - expect).abs().max() < 0.015, (t, freq, expect)
        assert freq[4] == 0
    u = uniforms(keys, torch.zeros(20000, dtype=torch.int64))
    assert 0 <= float(u.min()) and float(u.max()) < 1
    # Deciles hold 2000 each (SD about 42); successive steps of one row are not correlated.
    assert (torch.histc(u.float(), bins=10, min=0, max=1) - 2000).abs().max() < 200
    u1 = uniforms(keys, torch.ones(20000, dtype=torch.int64))
    assert abs(float(torch.corrcoef(torch.stack([u, u1]))[0, 1])) < 0.03


def test_top_p_keeps_what_transformers_keeps():
    from transformers.generation.logits_process import TopPLogitsWarper

    torch.manual_seed(1)
    logits = torch.randn(64, 27) * 3
    for top_p in (0.3, 0.8, 0.95):
        ref = TopPLogitsWarper(top_p)(None, logits.clone())
        for step in range(20):
            drawn, _ = draw_rows(logits, 1.0, top_p, row_keys(0, torch.arange(64)), torch.full((64,), step))
            assert torch.isfinite(ref.gather(1, drawn[:, None])).all()
        drawn, _ = draw_rows(logits[:1].expand(4000, -1), 1.0, top_p, row_keys(0, torch.arange(4000)),
                             torch.zeros(4000, dtype=torch.int64))
        assert set(drawn.tolist()) == set(torch.isfinite(ref[0]).nonzero().squeeze(1).tolist())


@torch.inference_mode()
def test_each_prompt_is_prefilled_once():
    model, tok = toy2()
    eng = RefillDecoder(model)
    rows = []
    real = eng.dec.prefill
    eng.dec.prefill = lambda ids, *a, **k: rows.extend(ids.tolist()) or real(ids, *a, **k)
    prompts = prompt_token_ids(tok, PROMPTS)
    eng.sample(prompts, [6, 6, 6, 6, 6], 4, 30, {1}, 1.0, 1.0, seed=0)
    assert sorted(tuple(x for x in r if x != 0) for r in rows) == sorted(tuple(p) for p in prompts)


def test_the_probe_key_records_the_engine_and_unsupported_models_are_refused(tmp_path):
    import boundlab.builtins  # noqa: F401  (registers the toy2 task and verifier)
    from types import SimpleNamespace

    from boundlab.probe.context import ProbeContext
    from boundlab.probe.runner import probe_model
    from boundlab.probe.spec import ProbeSpec
    from boundlab.probe.store import Store
    from boundlab.tasks import build_task
    from boundlab.verify import build_verifier

    model, tok = toy2()
    task = build_task(SimpleNamespace(name="toy2", split="test", toy2={"tiers": ["H1"], "per_tier": 2}))
    store = Store(tmp_path / "store.sqlite")
    gen = GenSettings(temperature=1.0, max_new_tokens=60)
    keys = {}
    for engine in ("auto", "compact-cb"):
        r = probe_model(ProbeContext(task, store, build_verifier("toy2"), progress=False),
                        ProbeSpec(4, gen, 0, bootstrap_iters=10), HFSampler(model, tok, engine=engine), "fp")
        keys[engine] = r.key
        assert (r.n == 4).all()
    assert keys["auto"] != keys["compact-cb"]
    assert store.probe_info(keys["compact-cb"])["settings"]["engine"] == "compact-cb"
    assert HFSampler(model, tok, engine="compact-cb").key_engine(GenSettings(stop=(";",))) is None
    with pytest.raises(ValueError, match="compact-cb"):
        HFSampler(model.to(torch.float64), tok, engine="compact-cb")
