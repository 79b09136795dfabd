"""The worlds' shared pretraining loop (boundlab.worlds.common.pretrain): the schedule by hand, micro-batches
giving the gradient of one padded batch, and resume needing the corpus's RNG. The worlds' own tests
(test_toyworld2, test_toyvision) check resume and reproducibility bit for bit through it."""

from __future__ import annotations

import math
import random

import pytest
import torch

from boundlab.worlds.common.model import build_model
from boundlab.worlds.common.pretrain import encode_pairs, lr_at, train_loop
from boundlab.worlds.common.tokenizer import build_char_tokenizer

CHARS = tuple("0123456789+=;:QA")


def test_lr_schedule_by_hand():
    assert lr_at(0, 100, 1.0, 10) == pytest.approx(0.1)
    assert lr_at(9, 100, 1.0, 10) == pytest.approx(1.0)
    assert lr_at(10, 100, 1.0, 10) == pytest.approx(1.0)  # the cosine starts at the top
    mid = 10 + 45
    assert lr_at(mid, 100, 1.0, 10) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 2)))
    assert lr_at(100, 100, 2.0, 10) == pytest.approx(0.2)  # ends at 10% of lr


def _rows(rng: random.Random, n: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        a, b = rng.randint(0, 99), rng.randint(0, 9 ** rng.randint(1, 4))
        out.append((f"Q:{a}+{b};", f"A:{a + b}"))
    return out


def _model(tok):
    torch.manual_seed(0)
    return build_model(tok, hidden=16, layers=1, heads=2, intermediate=32)


def test_micro_batches_give_the_gradient_of_one_padded_batch():
    tok = build_char_tokenizer(CHARS, max_length=64)
    vocab, eos, pad = tok.get_vocab(), tok.eos_token_id, tok.pad_token_id

    def run(micro: int):
        rng = random.Random(1)
        model = _model(tok)

        def batches():
            rows = sorted(_rows(rng, 8), key=lambda pc: len(pc[0]) + len(pc[1]))
            return [encode_pairs(vocab, rows[i: i + micro], eos, pad) for i in range(0, 8, micro)]

        info = train_loop(model, batches, steps=3, lr=1e-2, warmup=1, seed=0, log_every=1)
        return model, info

    whole, info1 = run(8)
    split, info2 = run(3)  # uneven parts (3, 3, 2), each weighted by its completion tokens
    assert [h["step"] for h in info1["history"]] == [1, 2, 3] and info1["resumed_from"] == 0
    for h1, h2 in zip(info1["history"], info2["history"]):
        assert h1["loss"] == pytest.approx(h2["loss"], abs=2e-4)
    changed = False
    for (name, a), (_, b) in zip(whole.state_dict().items(), split.state_dict().items()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)
        changed |= not torch.equal(a, _model(tok).state_dict()[name])
    assert changed


def test_resume_needs_the_corpus_rng(tmp_path):
    tok = build_char_tokenizer(CHARS, max_length=64)
    with pytest.raises(ValueError, match="corpus's rng"):
        train_loop(_model(tok), lambda: [], steps=1, lr=1e-3, warmup=1, seed=0, partial=tmp_path)
