"""The toy world: tokenizer, shipped models, splits, verifier, task registration. Seconds."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch

from boundlab.tasks.base import Problem
from boundlab.worlds.toyworld import world
from boundlab.worlds.toyworld.paths import base_model_dir, teacher_model_dir
from boundlab.worlds.toyworld.tokenizer import build_tokenizer

torch.set_num_threads(1)

TRACE = "3*4=12,7-12=-5;A:-5"


def _problem(question: str) -> Problem:
    e = world.Expr.parse(question)
    return Problem("p", question, str(e.value), {"hard": e.hard, "ops": e.ops})


# --- tokenizer ------------------------------------------------------------------------------

def test_tokenizer_round_trip_through_auto_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    from boundlab.worlds.toyworld.model import build_model

    built = build_tokenizer()
    built.save_pretrained(tmp_path)
    # Saved beside a model config, as in the shipped folders: AutoTokenizer then consults the
    # model_type, and for some types (qwen2) swaps in a byte-level tokenizer class.
    build_model(built, hidden=16, layers=1, heads=2, intermediate=32).config.save_pretrained(tmp_path)
    tok = AutoTokenizer.from_pretrained(tmp_path)
    assert type(tok.backend_tokenizer.decoder).__name__ == "Fuse"
    assert tok("A: 5")["input_ids"] == built("A: 5")["input_ids"]
    assert tok.unk_token_id not in tok("A: 5")["input_ids"]
    assert tok.padding_side == "left"
    assert tok.eos_token == "<eos>" and tok.pad_token == "<pad>"
    assert tok.pad_token_id != tok.eos_token_id
    ids = tok("Q:7-3*4;" + TRACE)["input_ids"]
    assert len(ids) == len("Q:7-3*4;" + TRACE)  # one token per character, nothing added
    assert tok.unk_token_id not in ids
    assert tok.decode(ids) == "Q:7-3*4;" + TRACE  # Fuse: no spaces between characters
    assert tok.decode(ids + [tok.eos_token_id], skip_special_tokens=True) == "Q:7-3*4;" + TRACE
    batch = tok(["Q:1+2;", "A:5"], padding=True)
    assert batch["input_ids"][1][:3] == [tok.pad_token_id] * 3  # left padding
    assert batch["attention_mask"][1] == [0, 0, 0, 1, 1, 1]


def test_pretrain_encoding_matches_tokenizer():
    from boundlab.worlds.toyworld.pretrain import encode_pairs

    tok = build_tokenizer()
    b = encode_pairs(tok.get_vocab(), [("Q:7-3*4;", TRACE), ("Q:1+2*3;", "A:7")],
                     tok.eos_token_id, tok.pad_token_id)
    want = tok("Q:7-3*4;" + TRACE)["input_ids"] + [tok.eos_token_id]
    assert b["input_ids"][0].tolist() == want
    assert b["labels"][0, :8].tolist() == [-100] * 8  # no loss on the prompt
    assert b["labels"][0, -1].item() == tok.eos_token_id  # the model learns to stop
    assert b["attention_mask"][1].sum().item() == len("Q:1+2*3;A:7") + 1


# --- shipped models -------------------------------------------------------------------------

@pytest.mark.parametrize("folder", [base_model_dir(), teacher_model_dir()], ids=["base", "teacher"])
def test_shipped_model_loads_and_stops(folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (folder / "model.safetensors").exists():
        pytest.skip(f"{folder} not built (python -m boundlab.worlds.toyworld.pretrain)")
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    n_params = sum(p.numel() for p in model.parameters())
    assert 0.8e6 < n_params < 1.3e6
    assert tok.padding_side == "left"
    assert tok.get_vocab() == build_tokenizer().get_vocab()
    assert type(tok.backend_tokenizer.decoder).__name__ == "Fuse"
    enc = tok(["Q:1+2+3;", "Q:7*8-9;"], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**enc, do_sample=False, max_new_tokens=32,
                             pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    # Greedy decoding of easy problems ends with EOS well before the budget.
    assert (out[:, enc["input_ids"].shape[1]:] == tok.eos_token_id).any(dim=1).all()
    texts = tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    assert all("A:" in t and " " not in t for t in texts)


# --- world and splits -----------------------------------------------------------------------

def test_splits_are_deterministic_disjoint_and_pinned():
    a = world.splits.__wrapped__()
    b = world.splits.__wrapped__()
    assert a == b
    test, train, pre = (set(a[k]) for k in ("test", "train", "pretrain"))
    assert len(test) == 200 and len(train) == 1000
    assert not (test & train) and not (test & pre) and not (train & pre)
    assert len(test | train | pre) == len(world.all_exprs())
    assert sum(e.hard for e in a["test"]) == 67
    # Pinned: a change here changes every stored result keyed by problem id.
    assert [e.question for e in a["test"][:3]] == ["1*3+9", "2-6+4", "9*0-8"]


def test_hard_means_left_to_right_is_wrong():
    for e in world.all_exprs():
        assert e.hard == (e.op1 in "+-" and e.op2 == "*")
        assert e.hard == (e.value != e.left_to_right_value)
    e = world.Expr.parse("7-3*4")
    assert (e.value, e.left_to_right_value) == (-5, 16)
    assert world.trace(e) == TRACE
    assert world.trace(e, "left_to_right") == "7-3=4,4*4=16;A:16"
    assert world.trace(e, "precedence", slip=(0, 1)) == "3*4=13,7-13=-6;A:-6"


def test_corpus_traces_are_labelled_as_their_strategy():
    from boundlab.worlds.toyworld.verifier import judge

    rng = random.Random(0)
    pool = world.splits()["pretrain"]
    seen = set()
    for _ in range(600):
        e = rng.choice(pool)
        strategy, text = world.sample_completion(e, world.BASE_MIX, rng)
        v = judge(_problem(e.question), text)
        assert v.info["strategy"] == strategy, (e.question, text)
        assert v.strict == (strategy == "precedence")
        seen.add((e.hard, strategy))
    assert {(True, "precedence"), (True, "left_to_right"), (True, "slip"), (True, "guess")} <= seen
    c = world.Corpus(world.BASE_MIX, seed=3)
    assert c.batch(5) == world.Corpus(world.BASE_MIX, seed=3).batch(5)


# --- verifier -------------------------------------------------------------------------------

def test_verifier_hand_written_completions():
    from boundlab.verify import build_verifier

    v = build_verifier("toy")
    p = _problem("7-3*4")
    prec, ltr, guess, lucky_ltr, slip, bad, extra = v.score(p, [
        TRACE,                       # correct precedence-aware trace
        "7-3=4,4*4=16;A:16",         # left to right: valid steps, wrong order
        "A:-5",                      # a bare guess that happens to be right
        "7-3=4,4*4=16;A:-5",         # wrong-order trace, answer not its own result
        "3*4=12,7-12=-6;A:-6",       # arithmetic slip
        "7-3*4 is something",        # no answer
        "Q:7-3*4;" + TRACE + "<eos><pad>",  # the prompt and special tokens are tolerated
    ])
    assert (prec.correct, prec.strict, prec.outcome, prec.extracted) == (True, True, "correct", "-5")
    assert prec.info["strategy"] == "precedence"
    assert (ltr.correct, ltr.strict, ltr.outcome) == (False, False, "wrong")
    assert ltr.info["strategy"] == "left_to_right"
    assert (guess.correct, guess.strict, guess.info["strategy"]) == (True, False, "guess")
    assert (lucky_ltr.correct, lucky_ltr.strict, lucky_ltr.info["strategy"]) == (True, False, "slip")
    assert (slip.correct, slip.strict, slip.info["strategy"]) == (False, False, "slip")
    assert (bad.correct, bad.outcome, bad.extracted, bad.strict) == (False, "no_answer", None, False)
    assert bad.info["strategy"] == "malformed"
    assert extra.strict is True


def test_verifier_wrong_order_lucky_and_easy():
    from boundlab.worlds.toyworld.verifier import judge

    # On easy problems the left-to-right trace *is* the precedence trace.
    e = judge(_problem("7*3-4"), "7*3=21,21-4=17;A:17")
    assert (e.correct, e.strict, e.info["strategy"]) == (True, True, "precedence")
    # Commuted operands are fine; wrong operands are not.
    assert judge(_problem("7-3*4"), "4*3=12,7-12=-5;A:-5").strict is True
    w = judge(_problem("7-3*4"), "3*5=15,7-15=-8;A:-5")
    assert (w.correct, w.strict, w.info["strategy"]) == (True, False, "malformed")
    # A bare answer after junk: the answer is read, the trace is malformed.
    m = judge(_problem("7-3*4"), "3*4=12;;A:-5")
    assert (m.correct, m.strict, m.outcome, m.info["strategy"]) == (True, False, "correct", "malformed")
    # Running on past the answer (no EOS) leaves no answer.
    r = judge(_problem("7-3*4"), TRACE + "Q:1+2")
    assert (r.correct, r.outcome, r.info["strategy"]) == (False, "no_answer", "malformed")


def test_strategy_rates():
    from boundlab.worlds.toyworld.verifier import judge, strategy_rates

    p = _problem("7-3*4")
    vs = [judge(p, c) for c in (TRACE, TRACE, "7-3=4,4*4=16;A:16", "A:-5")]
    r = strategy_rates(vs)
    assert r["precedence"] == 0.5 and r["left_to_right"] == 0.25 and r["guess"] == 0.25
    assert r["slip"] == 0.0 and r["malformed"] == 0.0
    assert r["correct"] == 0.75 and r["strict"] == 0.5 and r["n"] == 4
    assert strategy_rates([])["n"] == 0


# --- task -----------------------------------------------------------------------------------

def test_task_registration():
    from boundlab.tasks import build_task

    cfg = SimpleNamespace(name="toy_arith", split="test", template=None, chat=None,
                          system=None, verifier=None)
    task = build_task(cfg)
    assert len(task) == 200 and task.verifier == "toy" and task.chat is False
    p = task.problems[0]
    assert p.problem_id == "toy-test-0000"
    assert task.render(p) == f"Q:{p.question};"
    assert set(p.meta) >= {"hard", "ops"}
    assert sum(q.meta["hard"] for q in task.problems) == 67
    train = build_task(SimpleNamespace(**{**vars(cfg), "split": "train"}))
    train = train.with_problems(train.problems[:10])  # the first N: probe.limit or train.train_limit
    assert len(train) == 10 and train.problems[0].problem_id == "toy-train-0000"
    assert not {q.question for q in build_task(SimpleNamespace(**{**vars(cfg), "split": "train"}))
                .problems} & {q.question for q in task.problems}
    assert build_task(cfg).fingerprint() == task.fingerprint()


def test_pass_at_k_estimator():
    from boundlab.worlds.toyworld.measure import pass_at_k

    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 1, 4) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
