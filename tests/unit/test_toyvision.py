"""The visual toy world (boundlab.worlds.toyvision) and the image path through probing.

- Rendering is deterministic: the same problem gives the same PNG bytes (pinned by sha256, so a
  Pillow or font change that moves a pixel fails here), distractors included.
- A task's fingerprint hashes its images' bytes: a redrawn image changes it, a moved one does not,
  and text tasks fingerprint exactly as before images existed (values taken on main before the change).
- toy_vision is toy2 drawn: same questions, answers, tiers and tags; toy2's strict verifier applies.
- The tiny VLM: its processor round-trips through AutoProcessor; the compact decoder's logits equal
  Llava's own forward, with images and left padding; the hf sampler feeds images and refuses to
  sample a VLM without them.
- Pretraining's `--bracket-share` replaces the corpus's bracket share and nothing else, and the
  spec it records (the audit's targets) is the mix actually used.
"""

from __future__ import annotations

import hashlib
import shutil

import pytest
import torch

from boundlab.sampling.base import GenSettings
from boundlab.sampling.compact import CompactDecoder, vlm_prompt_embeds
from boundlab.sampling.hf import HFSampler
from boundlab.tasks.base import Problem, Task
from boundlab.worlds.toyvision import render
from boundlab.worlds.toyvision.model import IMAGE_TOKEN, build_processor, build_tokenizer, build_vlm
from boundlab.worlds.toyvision.task import TEMPLATE, visual
from boundlab.worlds.toyworld2.paths import base_model_dir
from boundlab.worlds.toyworld2.task import toy2_problems
from boundlab.worlds.toyworld2.verifier import judge
from boundlab.worlds.toyworld2.world import PROMPT_TEMPLATE, canonical_trace

# sha256 of render.png_bytes("(2+3)*4#5") and of the same with 6 distractors (Pillow 13.0.0).
PINNED_CLEAN = "ae649e760a489ad03eefa58276b11ac1622f6aaaba7d7a847e793e310403af7d"
PINNED_NOISY = "74c54b3260daea4a65b798803544f5e693eeedc954f58d96cba218f91e4ee751"


def test_rendering_is_deterministic_and_pinned():
    a, b = render.png_bytes("(2+3)*4#5"), render.png_bytes("(2+3)*4#5")
    assert a == b
    assert render.png_bytes("(2+3)*4#6") != a
    noisy = render.png_bytes("(2+3)*4#5", distractors=6)
    assert noisy == render.png_bytes("(2+3)*4#5", distractors=6) and noisy != a
    assert hashlib.sha256(a).hexdigest() == PINNED_CLEAN
    assert hashlib.sha256(noisy).hexdigest() == PINNED_NOISY


def test_glyphs_sit_one_per_cell_right_aligned():
    im = render.draw("1+2")
    ink = [[any(im.getpixel((c * render.CELL + x, r * render.CELL + y)) < 128
                for x in range(render.CELL) for y in range(render.CELL))
            for c in range(render.GRID)] for r in range(render.GRID)]
    cells = [i for i, on in enumerate(sum(ink, [])) if on]
    assert cells == [render.GRID ** 2 - 3, render.GRID ** 2 - 2, render.GRID ** 2 - 1]


def test_bad_input_is_refused_in_one_line():
    with pytest.raises(ValueError, match="draws 1..16"):
        render.draw("1+" * 9 + "1")
    with pytest.raises(ValueError, match="distractors"):
        render.draw("1+1", distractors=-1)


def test_text_fingerprints_are_unchanged_by_images():
    # Computed with main's code before Problem had images.
    toy2 = Task("toy2", toy2_problems("test"), template=PROMPT_TEMPLATE, verifier="toy2", group_by="tier")
    assert toy2.fingerprint() == "29c5a5bd953c1263"
    small = Task("t", [Problem("a", "1+1", "2", {"tier": "E"}), Problem("b", "x", "y")],
                 template="Q:{question};", verifier="exact")
    assert small.fingerprint() == "549137c331c9f13e"


def test_fingerprint_follows_image_bytes_not_paths(tmp_path):
    probs = visual(toy2_problems("test")[:3], tmp_path / "a")
    fp = Task("toy_vision", probs, template=TEMPLATE, verifier="toy2").fingerprint()
    # Same bytes elsewhere: same key.
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    moved = [Problem(p.problem_id, p.question, p.answer, p.meta,
                     [str(tmp_path / "b" / render.file_name(p.question))]) for p in probs]
    assert Task("toy_vision", moved, template=TEMPLATE, verifier="toy2").fingerprint() == fp
    # A changed image: another key (the file's mtime moves too, so the hash cache cannot hide it).
    f = tmp_path / "b" / render.file_name(probs[1].question)
    f.write_bytes(render.png_bytes(probs[1].question, distractors=3))
    assert Task("toy_vision", moved, template=TEMPLATE, verifier="toy2").fingerprint() != fp
    # Without images, a different key again.
    bare = [Problem(p.problem_id, p.question, p.answer, p.meta) for p in probs]
    assert Task("toy_vision", bare, template=TEMPLATE, verifier="toy2").fingerprint() != fp


def test_a_missing_image_is_a_one_line_error(tmp_path):
    p = Problem("a", "1+1", "2", images=[str(tmp_path / "gone.png")])
    with pytest.raises(FileNotFoundError, match="gone.png"):
        Task("t", [p]).fingerprint()


def test_toy_vision_is_toy2_drawn(tmp_path):
    text = toy2_problems("test", ["H1", "B3", "X"], 2)
    vis = visual(text, tmp_path)
    assert [p.problem_id for p in vis] == [t.problem_id.replace("tw2-", "tv-") for t in text]
    for t, v in zip(text, vis):
        assert (v.question, v.answer, v.meta["tier"], v.meta["cells"]) == \
            (t.question, t.answer, t.meta["tier"], t.meta["cells"])
        assert open(v.images[0], "rb").read() == render.png_bytes(t.question)
        # toy2's strict verifier, unchanged: the canonical trace is strict, an answer alone is not.
        assert judge(v, canonical_trace(v.question)).strict
        assert not judge(v, f";A:{v.answer}").strict


@pytest.fixture(scope="module")
def vlm():
    torch.manual_seed(0)
    tok = build_tokenizer()
    return build_vlm(base_model_dir(), tok).eval(), build_processor(tok)


def test_processor_round_trips_and_expands_the_image_token(vlm, tmp_path):
    from transformers import AutoProcessor

    _, proc = vlm
    proc.save_pretrained(tmp_path)
    again = AutoProcessor.from_pretrained(tmp_path)
    im = render.draw("2+3*4").convert("RGB")
    enc = again(text=[TEMPLATE], images=[im], return_tensors="pt")
    ids = enc["input_ids"][0].tolist()
    image_id = again.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    assert ids.count(image_id) == render.GRID ** 2 and len(ids) == 3 + render.GRID ** 2
    assert again.tokenizer.decode(again.tokenizer("3*4=12;A:12")["input_ids"]) == "3*4=12;A:12"
    # TRL's conversational prompt renders to exactly the probe's string.
    msgs = [[{"role": "user", "content": [{"type": "text", "text": "Q:"}, {"type": "image", "image": im},
                                          {"type": "text", "text": ";"}]}]]
    chat = again.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=True)
    assert list(chat["input_ids"][0]) == ids


@torch.inference_mode()
def test_compact_logits_equal_llavas_forward_with_images_and_padding(vlm):
    model, proc = vlm
    ims = [render.draw(q).convert("RGB") for q in ("2+3*4", "(1+2)*3", "7#2")]
    enc = proc(text=[TEMPLATE, "Q:" + IMAGE_TOKEN + ";1+", "Q:" + IMAGE_TOKEN + ";"], images=ims,
               return_tensors="pt", padding=True)
    assert (enc["attention_mask"] == 0).any(), "the batch must be left-padded"
    ref = model(**enc).logits[:, -1]
    assert CompactDecoder.supports(model)
    emb = vlm_prompt_embeds(model, enc["input_ids"], enc["pixel_values"])
    dec = CompactDecoder(model)
    got = dec.prefill(enc["input_ids"], enc["attention_mask"], enc["input_ids"].shape[1], emb)[0]
    assert torch.allclose(got, ref, atol=1e-4)
    # Same tokens, other images: the shared-prefill must not merge them.
    assert not torch.allclose(got[0], got[2], atol=1e-3)


def test_hf_sampler_feeds_images_and_needs_them(vlm, tmp_path):
    model, proc = vlm
    files = [str(render.render_to(tmp_path, q)) for q in ("2+3*4", "7#2")]
    s = GenSettings(temperature=1.0, max_new_tokens=12)
    for engine in ("auto", "generate"):
        sampler = HFSampler(model, None, batch_size=8, engine=engine, processor=proc)
        assert sampler.accepts_images
        out = sampler.generate([(TEMPLATE, 3), (TEMPLATE, 2)], s, seed=0, images=[[files[0]], [files[1]]])
        assert [len(o) for o in out] == [3, 2]
        assert all(c.n_tokens > 0 and IMAGE_TOKEN not in c.text for o in out for c in o)
    with pytest.raises(ValueError, match="needs each prompt's images"):
        sampler.generate([(TEMPLATE, 1)], s, seed=0)


def test_pretraining_is_reproducible_and_resumes_bit_identical(tmp_path):
    from boundlab.worlds.toyvision.pretrain import Encoder, corpus_from, train

    tok = build_tokenizer()
    proc = build_processor(tok)

    def fresh():
        torch.manual_seed(0)
        return build_vlm(base_model_dir(), tok)

    def corpus():
        return corpus_from(base_model_dir(), 0)[0]

    kw = dict(batch_size=4, lr=1e-3, lm_lr=1e-4, warmup=1, seed=0, log_every=1, micro=2)
    whole, again = fresh(), fresh()
    info = train(whole, Encoder(proc), corpus(), steps=3, partial=None, **kw)
    train(again, Encoder(proc), corpus(), steps=3, partial=None, **kw)
    assert info["final_loss"] > 0
    changed = [n for n, p in fresh().state_dict().items() if not torch.equal(p, whole.state_dict()[n])]
    assert any("vision_tower" in n for n in changed) and any("language_model" in n for n in changed)
    for (name, a), (_, b) in zip(whole.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), name
    # Killed after step 1 (its partial state saved), then the same command again.
    part = tmp_path / "base.partial"
    train(fresh(), Encoder(proc), corpus(), steps=1, partial=part, save_every=1, **kw)
    assert not (part / "state.pt").exists()  # the end itself is the final model, not a partial
    train(fresh(), Encoder(proc), corpus(), steps=2, partial=part, save_every=1, **kw)
    assert torch.load(part / "state.pt", weights_only=False)["step"] == 1
    resumed = fresh()
    info = train(resumed, Encoder(proc), corpus(), steps=3, partial=part, save_every=1, **kw)
    assert info["resumed_from"] == 1
    for (name, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), name


def test_bracket_share_replaces_only_the_corpus_bracket_share(tmp_path):
    import json

    from boundlab.worlds.toyvision.pretrain import corpus_from
    from boundlab.worlds.toyworld2.expr import Decision

    text_mix = json.loads((base_model_dir() / "train_info.json").read_text())["mix"]
    bracket, prec = Decision("bracket", 1, "sep", "q"), Decision("prec", 1, "sep", "q")
    kept, spec = corpus_from(base_model_dir(), 0)
    assert spec["mix"] == text_mix and kept.mix.share(bracket) == text_mix["default_bracket"]
    corpus, spec = corpus_from(base_model_dir(), 0, 0.013)
    assert corpus.mix.share(bracket) == 0.013 and spec["mix"]["default_bracket"] == 0.013
    assert corpus.mix.share(prec) == kept.mix.share(prec)
    assert {k: v for k, v in spec["mix"].items() if k != "default_bracket"} == \
        {k: v for k, v in text_mix.items() if k != "default_bracket"}
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="bracket share"):
            corpus_from(base_model_dir(), 0, bad)
    # A text base whose mix lists a bracket cell: the knob would not reach that cell, so it refuses.
    info = json.loads((base_model_dir() / "train_info.json").read_text())
    info["mix"] = {**info["mix"], "cells": {**info["mix"]["cells"], "bracket/1/sep/q": 0.02}}
    (tmp_path / "train_info.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="lists bracket cells"):
        corpus_from(tmp_path, 0, 0.013)
