"""The second-edition toy world: the generator's decision rates, no luck by construction, the
verifier's replay, the task's slices and mixes, and the audit's exact interval."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from boundlab.tasks.base import Problem
from boundlab.worlds.toyworld2 import expr as X
from boundlab.worlds.toyworld2 import world as W
from boundlab.worlds.toyworld2.audit import clopper_pearson, decision_rates
from boundlab.worlds.toyworld2.task import DEFAULT_TRAIN_MIX, toy2_problems, train_problems
from boundlab.worlds.toyworld2.verifier import judge


def _problem(q: str) -> Problem:
    s = W.spec(q)
    return Problem("p", q, str(s.answer), {"tier": s.tier})


def test_canonical_traces_by_hand():
    assert W.canonical_trace("2+3*4+5*2") == \
        "3*4=12>2+12+5*2,2+12=14>14+5*2,5*2=10>14+10,14+10=24;A:24"
    assert W.canonical_trace("2*(3+4)") == "3+4=7>2*7,2*7=14;A:14"
    assert W.canonical_trace("3#4+5") == "3#4=34>34+5,34+5=39;A:39"
    assert [W.tier_of(q) for q in ("2+3*4+5*2", "2*(3+4)", "3#4+5", "4*(2+3)+1", "2*3+4", "2+3*4")] \
        == ["H2", "B3", "X", "B4", "E", "H1"]


def test_out_of_world_questions_are_refused():
    assert W.tier_of("2+3*1") is None      # degenerate: left to right gives 5 = 2+3*1
    assert W.tier_of("(2+3)*4") is None    # dropping the bracket, left to right is right
    assert W.tier_of("9+9*9*9") is None    # values above two digits
    with pytest.raises(ValueError, match="not a problem of the toy world"):
        W.spec("2+3*1")


def test_shipped_splits_are_the_generated_ones_and_disjoint():
    gen = W.generate_splits()
    shipped = W.splits()
    for name in ("test", "train"):
        assert [(p.question, p.tier) for p in gen[name]] == [(p.question, p.tier) for p in shipped[name]]
    test_q = {p.question for p in shipped["test"]}
    train_q = {p.question for p in shipped["train"]}
    assert not test_q & train_q
    assert Counter(p.tier for p in shipped["test"]) == Counter(W.TEST_SIZES)


def test_no_problem_lets_a_wrong_path_land_on_the_answer():
    for p in W.splits()["test"]:
        assert W.tier_of(p.question) == p.tier
        for labels, values in X.all_base_paths(p.question):
            assert max(values) <= W.MAX_VALUE
            right = p.tier != "X" and all(lab == "canon" for lab in labels)
            assert (values[-1] == p.answer) == right, (p.question, labels, values)


def test_corpus_draws_each_decision_independently_at_its_share():
    rng = random.Random(7)
    mix = W.BaseMix(default_prec=0.3, default_bracket=0.05)
    h2 = [p for p in W.splits()["train"] if p.tier == "H2"][:200]
    firsts, seconds = [], {True: [], False: []}
    for p in h2:
        for _ in range(20):
            text, met = W.walk(p.question, lambda d, labels: (
                "canon" if rng.random() < mix.share(d) else
                next(lab for lab in labels if lab != "canon")))
            v = judge(_problem(p.question), text)
            took = [t for _, t, _ in v.info["decisions"]]
            assert took[:2] == [lab == "canon" for _, lab in met][:2]
            firsts.append(took[0])
            if len(took) >= 2:  # a wrong first move can leave no second decision (`a+b*c*d`)
                seconds[took[0]].append(took[1])
    n = len(firsts)
    rate = sum(firsts) / n
    assert abs(rate - 0.3) < 4 * math.sqrt(0.3 * 0.7 / n)
    r_after_right = sum(seconds[True]) / len(seconds[True])
    r_after_wrong = sum(seconds[False]) / len(seconds[False])
    se = math.sqrt(0.21 / len(seconds[True]) + 0.21 / len(seconds[False]))
    assert abs(r_after_right - r_after_wrong) < 4 * se
    assert abs(r_after_wrong - 0.3) < 4 * math.sqrt(0.21 / len(seconds[False]))


def test_base_corpus_rates_match_the_mix_through_base_completion():
    rng = random.Random(1)
    mix = W.BaseMix(default_prec=0.2, default_bracket=0.1)
    b3 = [p for p in W.splits()["train"] if p.tier == "B3"]
    verdicts = [[judge(_problem(p.question), W.base_completion(p.question, mix, rng))
                 for _ in range(20)] for p in b3]
    rates = decision_rates(verdicts)
    cells = {c: r for c, r in rates.items() if c.startswith("bracket/1") and "|" not in c}
    took = sum(r["took"] for r in cells.values())
    n = sum(r["n"] for r in cells.values())
    assert n == 20 * len(b3)
    assert abs(took / n - 0.1) < 4 * math.sqrt(0.09 / n)


def test_teacher_traces_are_strict_and_base_never_writes_hash_right():
    rng = random.Random(2)
    for p in W.splits()["test"]:
        prob = _problem(p.question)
        assert judge(prob, W.canonical_trace(p.question)).strict
        if p.tier == "X":
            for _ in range(5):
                v = judge(prob, W.base_completion(p.question, W.BaseMix(1.0, 1.0), rng))
                assert not v.correct and not v.strict
                assert v.info["strategy"] == "hash_as_plus"


def test_verifier_names_what_went_wrong():
    p = _problem("2+3*4")
    assert judge(p, "3*4=12>2+12,2+12=14;A:14").strict
    v = judge(p, "2+3=5>5*4,5*4=20;A:20")
    assert (v.correct, v.strict, v.info["strategy"]) == (False, False, "wrong_decision")
    assert v.info["decisions"] == [["prec/1/sep/q", False, True]]
    assert judge(p, "3*4=13>2+13,2+13=15;A:15").info["strategy"] == "slip"
    assert judge(p, "3*4=12>2+21,2+21=23;A:23").info["strategy"] == "bad_state"
    assert judge(p, "2*4=8>2+8,2+8=10;A:10").info["strategy"] == "invalid_move"
    assert judge(p, "3*4=12>2+12,2+12=14;A:15").info["strategy"] == "bad_answer"
    # A right answer with no valid trace counts as answer-only correct, never strict.
    lucky = judge(p, "A:14")
    assert (lucky.correct, lucky.strict, lucky.info["strategy"]) == (True, False, "malformed")
    assert judge(p, "3*4=12>2+12").outcome == "no_answer"
    # The prompt echoed and text after EOS are tolerated, as in the first edition.
    assert judge(p, "Q:2+3*4;3*4=12>2+12,2+12=14;A:14<eos>junk").strict


def test_task_slices_and_train_mix():
    probs = toy2_problems("test", tiers=["B3", "H2"], per_tier=10)
    assert Counter(p.meta["tier"] for p in probs) == {"B3": 10, "H2": 10}
    with pytest.raises(ValueError, match="unknown tier"):
        toy2_problems("test", tiers=["H9"])
    train = train_problems(DEFAULT_TRAIN_MIX)
    counts = Counter(p.meta["tier"] for p in train)
    for t, w in DEFAULT_TRAIN_MIX.items():
        assert abs(counts[t] / len(train) - w) < 0.01
    head = Counter(p.meta["tier"] for p in train[:100])
    assert abs(head["H1"] - 30) <= 2
    no_bracket = train_problems({"H1": 0.5, "H2": 0.5})
    assert {p.meta["tier"] for p in no_bracket} == {"H1", "H2"}
    with pytest.raises(ValueError, match="train_mix"):
        train_problems({"Q": 1.0})
    test_ids = {p.question for p in toy2_problems("test")}
    assert not test_ids & {p.question for p in train}


def test_train_mix_by_one_tier_name():
    """`task.toy2.train_mix=H1` (what conf/debug/demo.yaml sets, so a command line can still replace it
    with a mapping) is the H1 tier alone, the same problems as {H1: 1.0}; an unknown name is refused."""
    from boundlab.config import TaskConfig, Toy2TaskConfig
    from boundlab.worlds.toyworld2.task import build_toy2

    def qs(mix):
        cfg = TaskConfig(name="toy2", split="train", toy2=Toy2TaskConfig(train_mix=mix))
        return [p.question for p in build_toy2(cfg).problems]

    by_name = qs("H1")
    assert by_name == qs({"H1": 1.0}) and by_name
    assert by_name == [p.question for p in train_problems({"H1": 1.0})]
    with pytest.raises(ValueError, match="train_mix"):
        qs("H9")


def test_clopper_pearson_by_hand():
    # k = 0: the upper bound solves (1-p)^n = alpha/2; k = n: the lower bound solves p^n = alpha/2.
    lo, hi = clopper_pearson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-9)
    lo, hi = clopper_pearson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10), rel=1e-9)
    # Symmetry: CP(k, n) mirrors CP(n-k, n).
    a, b = clopper_pearson(3, 7)
    c, d = clopper_pearson(4, 7)
    assert a == pytest.approx(1 - d, abs=1e-12) and b == pytest.approx(1 - c, abs=1e-12)
    lo, hi = clopper_pearson(93, 1000)
    assert lo < 0.093 < hi and hi - lo == pytest.approx(0.0370, abs=0.001)


def test_pretraining_resumes_bit_identical(tmp_path):
    import torch

    from boundlab.worlds.toyworld.model import build_model
    from boundlab.worlds.toyworld2.pretrain import MAX_POSITIONS, train
    from boundlab.worlds.toyworld2.tokenizer import build_tokenizer

    tok = build_tokenizer()

    def fresh():
        torch.manual_seed(0)
        return build_model(tok, hidden=32, layers=1, heads=2, intermediate=64,
                           max_positions=MAX_POSITIONS)

    kw = dict(batch_size=4, lr=1e-3, warmup=1, seed=0, log_every=1, micro=2)
    whole = fresh()
    train(whole, tok, W.Corpus(0), steps=4, partial=None, **kw)
    # A run killed after step 2 (its partial state saved), then the same command again.
    part = tmp_path / "base.partial"
    first = fresh()
    info1 = train(first, tok, W.Corpus(0), steps=2, partial=part, save_every=1, **kw)
    assert info1["steps"] == 2 and (part / "state.pt").exists()
    state = torch.load(part / "state.pt", weights_only=False)
    assert state["step"] == 1  # the last save before the end (the end itself is the final model)
    resumed = fresh()
    info = train(resumed, tok, W.Corpus(0), steps=4, partial=part, save_every=1, **kw)
    assert info["resumed_from"] >= 1
    for (name, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), name


def test_execution_practice_masks_the_forced_move_and_draws_the_rest():
    """r3's practice documents: the first decision takes the right move, its characters carry no
    loss, later decisions are drawn from the mix and trained as usual."""
    from boundlab.worlds.toyworld2.pretrain import encode
    from boundlab.worlds.toyworld2.tokenizer import build_tokenizer

    rng = random.Random(3)
    never = W.BaseMix(default_prec=0.0, default_bracket=0.0)
    text, spans = W.practice_completion("2*9*(3+1)", never, rng)
    assert text == "3+1=4>2*9*4,2*9=18>18*4,18*4=72;A:72" and spans == ((0, 3),)
    # a decision that comes at the second step: its span is that step's move
    text, spans = W.practice_completion("4*3+4*3*2", never, rng)
    assert text.startswith("4*3=12>12+4*3*2,4*3=12>12+12*2,12+12=24") and spans == ((16, 19),)
    assert text[16:19] == "4*3"
    # the second decision is drawn (never taken at share 0), the first always taken
    v = judge(_problem("4*3+4*3*2"), text)
    assert [t for _, t, _ in v.info["decisions"]][:2] == [True, False]
    always = W.BaseMix(default_prec=1.0, default_bracket=1.0)
    assert W.practice_completion("4*3+4*3*2", always, rng)[0] == W.canonical_trace("4*3+4*3*2")

    tok = build_tokenizer()
    row = ("Q:2+3*4;", "3*4=12>2+12,2+12=14;A:14", ((0, 3),))
    b = encode(tok.get_vocab(), [row, row[:2]], tok.eos_token_id, tok.pad_token_id)
    masked = (b["labels"][0] == -100).nonzero().flatten().tolist()
    assert masked == list(range(8 + 3))  # the prompt (8 characters) and the move `3*4`
    assert (b["labels"][1] == -100).sum() == 8
    assert torch_equal(b["input_ids"][0], b["input_ids"][1])


def torch_equal(a, b) -> bool:
    return bool((a == b).all())


def test_corpus_without_practice_is_the_shipped_stream_and_practice_is_validated():
    plain = W.Corpus(5).batch(30)
    assert plain == W.Corpus(5).batch(30) and all(len(r) == 2 for r in plain)
    prac = W.Corpus(5, practice=W.Practice(0.5, {"B4": 1.0})).batch(200)
    with_spans = [r for r in prac if r[2]]
    assert 60 < len(with_spans) < 140  # about half
    for p, c, spans in with_spans:
        q = p[2:-1]
        assert W.tier_of(q) == "B4"
        assert judge(_problem(q), c).info["decisions"][0][1] is True  # the bracket honoured
        (a, b), = spans
        assert c[b] == "=" and "(" not in c[a:b]
    with pytest.raises(ValueError, match="decision tiers"):
        W.Practice(0.2, {"X": 1.0})
    with pytest.raises(ValueError, match="share"):
        W.Practice(1.0, {"B4": 1.0})
    with pytest.raises(ValueError, match="teacher"):
        W.Corpus(0, teacher=True, practice=W.Practice(0.2, {"B4": 1.0}))


def test_ambiguous_decisions_and_their_oversampling():
    """A decision whose right move and habit move begin with the same character is `ambiguous`;
    the corpus knob redraws that share of ordinary decision-tier documents to hold one."""
    assert W.ambiguous_decision("2*(2+7)")        # `2+7` against `2*2`
    assert W.ambiguous_decision("5*1*(5+6)")      # `5+6` against `5*1`
    assert W.ambiguous_decision("4*3+4*3*2")      # the second decision: `12*2` against `12+12`
    assert not W.ambiguous_decision("7*(5+6)")    # `5+6` against `7*5`
    assert not W.ambiguous_decision("2+3*4")
    assert not W.ambiguous_decision("2+3+4")      # no decision at all
    plain = W.Corpus(1, tiers={"B3": 0.5, "H2": 0.5}).batch(300)
    over = W.Corpus(1, tiers={"B3": 0.5, "H2": 0.5}, ambiguous=0.5).batch(300)
    share = lambda rows: sum(W.ambiguous_decision(r[0][2:-1]) for r in rows) / len(rows)  # noqa: E731
    assert share(over) > share(plain) + 0.25
    assert all(W.tier_of(r[0][2:-1]) in ("B3", "H2") for r in over)
    with pytest.raises(ValueError, match="ambiguous"):
        W.Corpus(0, ambiguous=1.0)
