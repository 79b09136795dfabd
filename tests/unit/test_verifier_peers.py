"""bench/verifier_peers.py: the paper's grading conventions as we implemented them (each rule the
issue lists), and a small labelled file scored by all scorers."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
spec = importlib.util.spec_from_file_location("verifier_peers", ROOT / "bench" / "verifier_peers.py")
peers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peers)


@pytest.mark.parametrize("gold,completion,credited", [
    ("36", r"so $\boxed{36}$", True),
    ("36", r"so $\boxed{3600}$", True),        # percentage rule: gold x 100
    ("3600", r"so $\boxed{36}$", True),        # ... and gold / 100
    ("10000", r"$\boxed{10001}$", True),       # relative tolerance 1e-4
    ("999", r"$\boxed{1000}$", False),
    ("1450000", r"$\boxed{1,45,0000}$", True),  # every comma dropped, wherever it is
    ("2220", r"$\boxed{2\,220}$", False),      # thin space: not a number to it
    ("4", r"We get 4, so $\boxed{}$", False),  # an empty box is an empty answer
    ("4", r"It is $\boxed{5}$ or $\boxed{4}$", True),  # the last box only
    ("4", "we get 3 and then 4", True),        # no box: the last number
    (r"\frac{1}{2}", r"$\boxed{\dfrac12}$", True),
    (r"\left( 3, \frac{\pi}{2} \right)", r"$\boxed{(3,\frac{\pi}{2})}$", True),
    (r"\frac{1}{2}", r"$\boxed{0.5}$", True),
    (r"\sqrt{2}", r"$\boxed{2}$", False),
])
def test_paper_conventions(gold, completion, credited):
    assert peers.paper_grade(gold, completion) is credited


def test_make_and_score_a_small_labelled_file(tmp_path):
    f = tmp_path / "c.jsonl"
    n = peers.make(str(f), 4, 4, seed=1)
    rows = [json.loads(x) for x in f.read_text().splitlines()]
    assert len(rows) == n and {"solution", "solution_boxed", "solution_stated"} <= {r["kind"] for r in rows}
    res = peers.score(str(f), workers=1)
    assert res["completions"] == n
    assert set(res["scorers"]) == {"boundlab", "boundlab_boxed", "math_verify", "paper"}
    for s in res["scorers"].values():
        assert s["false_positives"] + s["false_negatives"] <= n
    # Every labelled-correct official solution is credited by our verifier; the paper's
    # percentage rule credits every x100 perturbation, ours none.
    sol = res["by_kind"]["solution"]
    assert sol["boundlab"] == sol["n"] == 4
    x100 = res["by_kind"].get("times_100")
    if x100:
        assert x100["paper"] == x100["n"] and x100["boundlab"] == 0
    assert res["agreement"]["boundlab"]["boundlab"] == 1.0


def test_score_rejects_unknown_problem(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_text(json.dumps({"problem_id": "nope-1", "completion": "1"}) + "\n")
    with pytest.raises(SystemExit, match=r"c.jsonl:1: needs a known problem_id"):
        peers.score(str(f), workers=1)
