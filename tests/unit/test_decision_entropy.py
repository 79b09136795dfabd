"""The entropy view split into decision tokens and the rest (boundlab.probe.decision_entropy,
boundlab.worlds.toyworld2.decisions): the decision offsets of hand-written traces, and the split of a
hand-made sequence whose per-token entropies are computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from boundlab.probe import decision_entropy as DE
from boundlab.worlds.toyworld2.decisions import decision_offsets
from boundlab.worlds.toyworld2.tokenizer import build_tokenizer
from boundlab.worlds.toyworld2.world import prompt

torch.set_num_threads(1)


@pytest.mark.parametrize("question, text, chars", [
    # H1: one decision, at the state 7+5*4 (step 3, from offset 26): `7+5` or `5*4` differ at once
    ("3+3+1+5*4", "3+3=6>6+1+5*4,6+1=7>7+5*4,5*4=20>7+20,7+20=27;A:27", {26: "5"}),
    # B3: `2+7` (bracket) or `2*2` (dropped): both start with 2, the operator decides
    ("2*(2+7)", "2+7=9>2*9,2*9=18;A:18", {1: "+"}),
    ("2*(2+7)", "2*2=4>4+7,4+7=11;A:11", {1: "*"}),
    # H2: two decisions, the second at the state the trace itself wrote
    ("2+3*4+5*2", "3*4=12>2+12+5*2,2+12=14>14+5*2,5*2=10>14+10,14+10=24;A:24", {0: "3", 31: "5"}),
    # left to right at the first decision: the states are read from the trace (5*4+5*2 is no
    # decision, 20+5*2 is one: the third step, from offset 14 + 14)
    ("2+3*4+5*2", "2+3=5>5*4+5*2,5*4=20>20+5*2,5*2=10>20+10,20+10=30;A:30", {0: "2", 28: "5"}),
    ("1*3+5+5", "1*3=3>3+5+5,3+5=8>8+5,8+5=13;A:13", {}),           # E: no decision
    ("9+6*1*5", "A:39", {0: "A"}),      # the choice is skipped, but made at this token
    ("9+6*1*5", "6*1=6>9+6*,zz", {0: "6"}),  # stops where the written state stops parsing
])
def test_decision_offsets_by_hand(question, text, chars):
    got = decision_offsets(question, text)
    assert {i: text[i] for i in got} == chars


def test_split_of_a_hand_made_sequence():
    # "2+7=9>2*9,2*9=18;A:18" for 2*(2+7): 21 tokens, the decision token is the `+` at offset 1.
    text = "2+7=9>2*9,2*9=18;A:18"
    spans = [(i, i + 1) for i in range(len(text))] + [(len(text), len(text))]  # + EOS, empty span
    h_half, h_quarter, h_91 = math.log(2), math.log(4), -(0.9 * math.log(0.9) + 0.1 * math.log(0.1))
    ent = [h_quarter, h_half] + [h_91] * (len(text) - 2) + [5.0]
    s = DE.split(ent, spans, decision_offsets("2*(2+7)", text))
    assert (s.decision_tokens, s.rest_tokens) == (1, 21)
    assert s.decision == pytest.approx(math.log(2))
    assert s.rest == pytest.approx((math.log(4) + 19 * 0.325082973391448 + 5.0) / 21)
    both = s + DE.split([1.0, 3.0], [(0, 1), (1, 2)], [0])
    assert both.decision == pytest.approx((math.log(2) + 1.0) / 2) and both.rest_tokens == 22
    assert math.isnan(DE.Split().decision)
    with pytest.raises(ValueError, match="entropies for"):
        DE.split([1.0], [(0, 1), (1, 2)], [])


class HandModel(torch.nn.Module):
    """Logits by position: predicting the completion's first token, 4 equal logits (entropy ln 4);
    its second, logits [0, ln 3] on two tokens (p = 1/4, 3/4 at T = 1); every other position one
    token only (entropy 0)."""

    def __init__(self, vocab: int, prompt_len: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.vocab, self.p = vocab, prompt_len

    def forward(self, input_ids):
        L = input_ids.shape[1]
        logits = torch.full((1, L, self.vocab), -1e4)
        logits[0, :, 0] = 0.0
        logits[0, self.p - 1, :4] = 0.0
        logits[0, self.p, 1] = math.log(3)
        return type("Out", (), {"logits": logits})()


def test_teacher_forced_entropies_by_hand():
    tok = build_tokenizer()
    q, text = "2*(2+7)", "2+7=9>2*9,2*9=18;A:18"
    from boundlab.sampling.base import prompt_token_ids

    p_len = len(prompt_token_ids(tok, [prompt(q)])[0])
    model = HandModel(len(tok), p_len)
    ent, ids = DE.token_entropies(model, tok, prompt(q), text, temperature=1.0)
    assert len(ids) == len(text) and DE.token_spans(tok, ids) == [(i, i + 1) for i in range(len(text))]
    h = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert ent[0] == pytest.approx(math.log(4), abs=1e-6)
    assert ent[1] == pytest.approx(h, abs=1e-6)
    assert ent[2:] == pytest.approx([0.0] * (len(text) - 2), abs=1e-6)
    at = decision_offsets(q, text)
    assert at == [1]
    s = DE.sample_split(model, tok, prompt(q), text, at, temperature=1.0)
    assert s.decision == pytest.approx(h, abs=1e-6)          # the `+` at offset 1
    assert s.rest == pytest.approx(math.log(4) / 20, abs=1e-6)
    # T = 0.5 doubles the logits: [0, 2 ln 3] -> p = 1/10, 9/10
    cold = DE.sample_split(model, tok, prompt(q), text, at, temperature=0.5)
    assert cold.decision == pytest.approx(-(0.1 * math.log(0.1) + 0.9 * math.log(0.9)), abs=1e-6)
    with pytest.raises(ValueError, match="temperature > 0"):
        DE.token_entropies(model, tok, prompt(q), text, temperature=0.0)


def test_the_toy2_verifier_gives_the_probe_layer_its_decision_offsets():
    from boundlab.tasks.base import Problem
    from boundlab.worlds.toyworld2.verifier import Toy2Verifier

    text = "3*4=12>2+12+5*2,2+12=14>14+5*2,5*2=10>14+10,14+10=24;A:24"
    p = Problem("p", "2+3*4+5*2", "24", {"tier": "H2"})
    assert Toy2Verifier().decision_offsets(p, text) == [0, 31]
