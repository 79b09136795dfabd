"""The toy2 failure-type classifier (boundlab.probe.failures) on hand-written traces."""

from __future__ import annotations

import pytest

from boundlab.probe import failures as F
from boundlab.probe.store import SampleRow
from boundlab.tasks.base import Problem
from boundlab.worlds.toyworld2 import world as W
from boundlab.worlds.toyworld2.verifier import judge


def _problem(q: str) -> Problem:
    s = W.spec(q)
    return Problem("p", q, str(s.answer), {"tier": s.tier})


P88 = _problem("4+8*8")        # H1, gold 68: canonical `8*8=64>4+64,4+64=68;A:68`
P24 = _problem("2+3*4+5*2")    # H2, gold 24
B3 = _problem("2*(3+4)")       # B3, gold 14
X3 = _problem("3#4+5")         # X, gold 39


@pytest.mark.parametrize("problem, text, label", [
    (P88, "8*8=64>4+64,4+64=68;A:68", F.STRICT_CORRECT),
    (P24, "3*4=12>2+12+5*2,2+12=14>14+5*2,5*2=10>14+10,14+10=24;A:24", F.STRICT_CORRECT),
    # the slip: 8*8 written as 68, carried on consistently
    (P88, "8*8=68>4+68,4+68=72;A:72", F.SLIP),
    # a slip late in a trace whose decisions were all right
    (P24, "3*4=12>2+12+5*2,2+12=14>14+5*2,5*2=10>14+10,14+10=25;A:25", F.SLIP),
    # left to right at the precedence decision: legal, not canonical
    (P88, "4+8=12>12*8,12*8=96;A:96", F.WRONG_DECISION),
    # the bracket dropped (multiply first), a legal move on the bracket-free view
    (B3, "2*3=6>6+4,6+4=10;A:10", F.WRONG_DECISION),
    # `#` read as `+`: the base corpus's strategy on the out-of-support operator
    (X3, "3#4=7>7+5,7+5=12;A:12", F.WRONG_DECISION),
    # a wrong decision first, then a slip off the canonical path: the first error counts
    (P88, "4+8=12>12*8,12*8=86;A:86", F.WRONG_DECISION),
    # the state after a right move is mis-copied (64 -> 46)
    (P88, "8*8=64>4+46,4+46=50;A:50", F.BAD_STATE),
    # a valid trace whose answer is not its last result
    (P88, "8*8=64>4+64,4+64=68;A:69", F.BAD_STATE),
    # 4 and 8 are not joined by `*` in the state: no such move
    (P88, "4*8=32>32*8,32*8=256;A:256", F.INVALID_MOVE),
    (P88, "8*8=64>4+64,4+64=68", F.MALFORMED),       # no answer
    (P88, "8*8=64>4+64,oops;A:12", F.MALFORMED),     # a step that does not parse
    (P88, "", F.MALFORMED),
    # answer right, trace not strict
    (P24, "A:24", F.LUCKY),                           # the bare answer
    (P88, "8*8=60>4+60,4+60=68;A:68", F.LUCKY),       # two slips that land on the gold
    (P88, "garbage;A:68", F.LUCKY),
])
def test_labels_on_hand_written_traces(problem, text, label):
    assert F.classify(problem, text) == label
    assert F.classify(problem, W.prompt(problem.question) + text + "<eos>") == label


def test_labels_come_from_the_stored_verdict_without_text():
    """A compact store keeps verdicts but drops most wrong texts: the label needs only the verdict."""
    v = judge(P88, "8*8=68>4+68,4+68=72;A:72")
    row = SampleRow("p", 0, None, v.extracted, v.correct, v.strict, v.outcome, 10, v.info,
                    text_hash=b"12345678")
    assert F.classify_row(row) == F.SLIP
    assert F.decisions_taken(v.info) == (1, 1)
    wrong = judge(P88, "4+8=12>12*8,12*8=96;A:96")
    assert F.decisions_taken(wrong.info) == (0, 1)


def test_first_error_beats_the_verifier_stopping_point():
    """The verifier stops at the slip; the label is the wrong decision that came before it."""
    v = judge(P88, "4+8=12>12*8,12*8=86;A:86")
    assert v.info["strategy"] == "slip"
    assert F.classify_verdict(v.correct, v.strict, v.info) == F.WRONG_DECISION


def test_every_label_belongs_to_one_group():
    failures = set(F.LABELS) - {F.STRICT_CORRECT, F.LUCKY}
    assert set(F.STRATEGY) | set(F.EXECUTION) == failures
    assert not set(F.STRATEGY) & set(F.EXECUTION)


def test_other_tasks_and_inconsistent_verdicts_are_refused():
    with pytest.raises(F.NotToy2, match="task=toy2"):
        F.classify_verdict(True, None, {"outcome": "x"})
    with pytest.raises(F.NotToy2, match="unknown toy2 strategy"):
        F.classify_verdict(False, False, {"strategy": "teleport", "decisions": []})
    with pytest.raises(ValueError, match="inconsistent"):
        F.classify_verdict(False, True, {"strategy": "canonical", "decisions": []})


def test_mix_counts_every_label():
    m = F.mix([F.SLIP, F.SLIP, F.LUCKY])
    assert m[F.SLIP] == 2 and m[F.LUCKY] == 1 and m[F.MALFORMED] == 0 and list(m) == list(F.LABELS)
    with pytest.raises(ValueError, match="not failure labels"):
        F.mix(["oops"])
