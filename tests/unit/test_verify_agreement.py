"""Official-solution agreement (boundlab.verify.agreement): every MATH500 and GSM8K human solution,
and every OlympiadBench and AMC23 official answer boxed, is judged correct against its gold; another problem's gold is judged wrong, except the residuals
listed with their reasons in tests/data/verify_agreement_residuals.json.

Cross pairs are sampled deterministically (k others per problem, seed 0) to stay within about a
minute on 2 loaded cores; `bench/verify_agreement.py --k 0` runs all pairs."""

import json
from pathlib import Path

import pytest

import boundlab.builtins  # noqa: F401
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem
from boundlab.verify import build_verifier
from boundlab.verify.agreement import cross_pairs, run, solution_completions

RESIDUALS = json.loads((Path(__file__).parents[1] / "data" / "verify_agreement_residuals.json").read_text())
K = {"math500": 4, "gsm8k": 5, "olympiadbench": 1, "amc23": 3}


@pytest.fixture(scope="module")
def verifier():
    v = build_verifier("math", workers=2, deadline_s=2.0)
    yield v
    v.close()


@pytest.mark.parametrize("name,completions", [("math500", 500), ("gsm8k", 2 * 1319),
                                              ("olympiadbench", 675), ("amc23", 40)])
def test_official_solutions_and_cross_golds(verifier, name, completions):
    res = run(verifier, name, k=K[name], seed=0)
    assert res["solution_completions"] == completions
    misses = {f"{m['problem_id']}|{m['variant']}" for m in res["solution_misses"]}
    assert misses == {k for k in RESIDUALS["solution_misses"] if k.startswith(name + "-")}, res["solution_misses"]
    sampled = {f"{p.problem_id}|{o.problem_id}" for p, o in cross_pairs(TASKS.get(name)(None).problems, K[name], 0)}
    accepted = {f"{a['problem_id']}|{a['other']}" for a in res["cross_accepted"]}
    assert res["cross_pairs"] == len(sampled) == len(TASKS.get(name)(None)) * K[name]
    assert accepted == {k for k in RESIDUALS["cross_accepted"] if k in sampled}, res["cross_accepted"]


def test_listed_residuals_still_behave_as_listed(verifier):
    """Each listed cross residual, checked directly (whether or not the sample meets it)."""
    tasks = {name: TASKS.get(name)(None) for name in ("math500", "olympiadbench")}
    for pair in RESIDUALS["cross_accepted"]:
        task = tasks[pair.split("-")[0]]
        a, b = (task.by_id(x) for x in pair.split("|"))
        assert verifier.score(a, [f"\\boxed{{{b.answer}}}"])[0].correct, pair


def test_gsm8k_completions_keep_the_dataset_number():
    sols = {(p.problem_id, var): c for p, c, var in solution_completions("gsm8k")}
    assert sols[("gsm8k-2", "boxed")].endswith("\\boxed{70000}$.")
    big = next(k for k, c in sols.items() if "1,450,000" in c and k[1] == "stated")
    assert sols[big].endswith("The answer is 1,450,000.")


def test_cross_pairs_are_deterministic_and_skip_equal_golds():
    ps = [Problem("a", "q", "1"), Problem("b", "q", " 1"), Problem("c", "q", "2"), Problem("d", "q", "2\\,000")]
    pairs = [(p.problem_id, o.problem_id) for p, o in cross_pairs(ps, None)]
    assert ("a", "b") not in pairs and ("a", "c") in pairs and len(pairs) == 10
    assert cross_pairs(ps, 1, 3) == cross_pairs(ps, 1, 3)


def test_misses_are_reported_with_outcome_and_answer():
    """Under the boxed-only rule, GSM8K's stated (unboxed) solutions are no answer: the report lists
    each with its variant and outcome."""
    v = build_verifier("math", workers=1, extraction="boxed")
    try:
        res = run(v, "gsm8k", k=1)
    finally:
        v.close()
    assert res["solutions_correct"] == 1319 and len(res["solution_misses"]) == 1319
    m = res["solution_misses"][0]
    assert (m["problem_id"], m["variant"], m["outcome"], m["answer"]) == ("gsm8k-0", "stated", "no_answer", None)
    assert res["cross_wrong"] == res["cross_pairs"] == 1319
