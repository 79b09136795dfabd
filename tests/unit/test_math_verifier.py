"""The math verifier: equivalences, de-duplication, and bounded time on hostile answers."""

import time

import pytest

from boundlab.tasks.base import Problem
from boundlab.verify import build_verifier
from boundlab.verify.math import plain_math_verify


@pytest.fixture(scope="module")
def verifier():
    v = build_verifier("math", workers=2, deadline_s=2.0)
    yield v
    v.close()


def P(gold: str) -> Problem:
    return Problem("p", "q", gold)


@pytest.mark.parametrize("gold,completion", [
    (r"\frac{1}{2}", r"so \boxed{0.5}"),
    ("0.5", r"\boxed{\frac{1}{2}}"),
    (r"2\sqrt3", r"\boxed{\sqrt{12}}"),
    (r"\sqrt{12}", r"\boxed{2\sqrt{3}}"),
    ("204", r"The walk takes \boxed{204} minutes."),
    ("204", "The answer is 204."),
    (r"\frac{14}{3}", r"\boxed{\dfrac{14}{3}}"),
])
def test_equivalent_forms(verifier, gold, completion):
    v = verifier.score(P(gold), [completion])[0]
    assert v.correct, v
    assert v.outcome == "correct"


@pytest.mark.parametrize("gold,completion,outcome", [
    (r"\frac{1}{2}", r"\boxed{0.25}", "wrong"),
    ("204", "I cannot say.", "no_answer"),
    ("3", r"\boxed{\sqrt{3}}", "wrong"),
])
def test_wrong_answers(verifier, gold, completion, outcome):
    v = verifier.score(P(gold), [completion])[0]
    assert not v.correct
    assert v.outcome == outcome


def test_duplicates_verified_once(verifier):
    before = verifier.calls
    comps = [r"\boxed{x+5}"] * 50 + [r"\boxed{x+6}"] * 30 + ["no answer"] * 5 + [r"\boxed{x+5}"] * 10
    out = verifier.score(P("5+x"), comps)
    assert verifier.calls - before == 2  # two distinct answers, one call each
    assert sum(v.correct for v in out) == 60
    # The cache carries across calls too.
    verifier.score(P("5+x"), [r"\boxed{x+5}"])
    assert verifier.calls - before == 2
    # Integer against integer never needs math-verify at all.
    assert [v.correct for v in verifier.score(P("12"), [r"\boxed{12}", r"\boxed{13}"])] == [True, False]
    assert verifier.calls - before == 2


def test_agrees_with_plain_math_verify(verifier):
    cases = [("1/2", "0.5"), ("x^2", "x*x"), ("10", "10.0"), ("\\pi", "3.14"), ("(1,2)", "(2,1)")]
    for gold, ans in cases:
        ours = verifier.score(P(gold), [f"\\boxed{{{ans}}}"])[0].correct
        assert ours == plain_math_verify(gold, ans), (gold, ans)


@pytest.mark.parametrize("answer", [
    "9^{9^{9^{9}}}",
    "{" * 10000 + "1" + "}" * 10000,
    "1" * 100_000,
    "(10^{10})!",
    "2^{2^{2^{2^{2^{2}}}}}",
    "{" * 200 + "1" + "}" * 200,
])
def test_pathological_answers_get_a_verdict_within_about_2s(verifier, answer):
    t = time.perf_counter()
    v = verifier.score(P("1"), [f"\\boxed{{{answer}}}"])[0]
    elapsed = time.perf_counter() - t
    assert not v.correct
    assert v.outcome in {"wrong", "timeout", "too_long", "error"}
    assert elapsed < 2.6, elapsed


def test_worker_killed_on_deadline_is_replaced():
    from boundlab.verify.pool import TIMEOUT, DeadlinePool

    pool = DeadlinePool(_sleepy, workers=1, deadline_s=0.5)
    try:
        res = pool.map([0.0, 5.0, 0.0])
        assert res[0] == "ok" and res[2] == "ok"
        assert res[1] == TIMEOUT
        assert pool.restarts == 1
    finally:
        pool.close()


def _sleepy(s: float) -> str:
    import time as _t

    _t.sleep(s)
    return "ok"


def test_integer_fast_path_agrees_with_math_verify():
    from boundlab.verify.math import fast_verdict

    ints = ["0", "-0", "7", "007", "-7", "204", "1000", "999999999999", "-12"]
    for g in ints:
        for a in ints:
            fast = fast_verdict(g, a)
            assert fast is not None
            assert fast == plain_math_verify(g, a), (g, a)
    assert fast_verdict("1/2", "0.5") is None
    assert fast_verdict("3", "3.0") is None


def test_cache_smaller_than_batch_still_answers_everything():
    v = build_verifier("math", workers=1, cache_size=2)
    try:
        out = v.score(P("x+1"), [f"\\boxed{{x+{i}}}" for i in range(6)])
        assert [o.correct for o in out] == [False, True, False, False, False, False]
    finally:
        v.close()


@pytest.mark.parametrize("gold,answer,tolerant,exact", [
    ("20.39", "20.3905", "correct", "wrong"),          # the example: within 1e-4 relative
    ("1.6", "1.60016", "correct", "wrong"),            # exactly 1e-4 relative: kept
    ("1.6", "1.6002", "wrong", "wrong"),               # 1.25e-4 relative: out
    ("20.39", "20.4", "wrong", "wrong"),
    ("4.5e33", r"4.5004 \times 10^{33}", "correct", "wrong"),
    ("4.5e33", "4.5e34", "wrong", "wrong"),
    ("8.7e8", r"8.7\times10^8", "correct", "correct"),
])
def test_minerva_relative_tolerance_is_per_problem(verifier, gold, answer, tolerant, exact):
    box = [rf"so \boxed{{{answer}}}"]
    assert verifier.score(Problem("m", "q", gold, {"rel_tol": 1e-4}), box)[0].outcome == tolerant
    assert verifier.score(P(gold), box)[0].outcome == exact  # no rel_tol: as before (and not cached)


def test_minerva_problems_carry_the_tolerance():
    import boundlab.builtins  # noqa: F401
    from boundlab.tasks import TASKS
    from boundlab.tasks.benchmarks import MINERVA_REL_TOL

    task = TASKS.get("minerva")(None)
    assert MINERVA_REL_TOL == 1e-4 and {p.meta["rel_tol"] for p in task.problems} == {1e-4}
    assert all("rel_tol" not in p.meta for p in TASKS.get("math500")(None).problems)
