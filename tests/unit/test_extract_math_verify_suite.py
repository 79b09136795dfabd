"""Math-Verify's own regression suite (its v0.8.0 parametrized cases) through our verifier.

`tests/data/math_verify_v0.8.0_cases.json` (Apache-2.0, provenance inside) holds the (gold, pred,
expected) triples that math-verify 0.9 with its default extraction still reproduces. Each pred is
handed to our verifier as a whole completion and the gold as the problem's answer. Agreement must
stay at 97% or more and no case may pass that math-verify fails.
"""

import json
from pathlib import Path

import pytest

from boundlab.tasks.base import Problem
from boundlab.verify import build_verifier

DATA = Path(__file__).resolve().parents[1] / "data" / "math_verify_v0.8.0_cases.json"


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_agreement_with_math_verify_suite():
    doc = json.loads(DATA.read_text("utf-8"))
    cases = doc["cases"]
    assert len(cases) == 261
    # Generous deadline: a verdict that depends on a loaded machine is not what is tested here.
    v = build_verifier("math", workers=2, deadline_s=10.0)
    try:
        verdicts = v.score_many([(Problem(f"c{i}", "q", c["gold"]), [c["pred"]])
                                 for i, c in enumerate(cases)])
    finally:
        v.close()
    got = [row[0].correct for row in verdicts]
    false_passes = [c for c, ok in zip(cases, got) if ok and not c["expected"]]
    misses = [c for c, ok in zip(cases, got) if not ok and c["expected"]]
    agree = len(cases) - len(false_passes) - len(misses)
    assert false_passes == []
    assert agree / len(cases) >= 0.97, (agree, [(c["gold"], c["pred"][-80:]) for c in misses])
