"""Math verdicts do not depend on load (issue 10, item 10).

math-verify's budgets are wall-clock alarms that expire *silently*: parse returns [] and verify
returns False. Load is simulated in the worker: `_slow_init` wraps math-verify's own parsing and
comparison so that chosen inputs sleep inside the alarm's window (a process that gets no CPU), and
math-verify's alarm really fires and really swallows the expiry, as on a loaded machine. Marker
files in a directory (BOUNDLAB_TEST_SLOW_DIR) say which inputs sleep:
  <tag>.once    sleep past the budget once (the file is removed)
  <tag>.always  sleep past the budget every time
  <tag>.hang    once, with SIGALRM blocked: only the pool's hard deadline ends it
where <tag> is the parsed string (or `gold-<value>` for a comparison with that gold value) with
non-word characters replaced by `_`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from boundlab.probe.runner import score_samples_file
from boundlab.probe.store import Store
from boundlab.tasks.base import Problem, Task
from boundlab.verify.math import MathVerifier
from boundlab.verify.math_worker import _worker_check
from boundlab.verify.pool import DeadlinePool

SLOW_DIR = "BOUNDLAB_TEST_SLOW_DIR"


def _tag(s: str) -> str:
    return re.sub(r"\W", "_", s)


def _maybe_stall(tag: str) -> None:
    d = Path(os.environ[SLOW_DIR])
    once, always, hang = d / f"{tag}.once", d / f"{tag}.always", d / f"{tag}.hang"
    if hang.exists():
        hang.unlink()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(60)
    if always.exists():
        time.sleep(10)  # math-verify's alarm interrupts this and swallows the expiry
    elif once.exists():
        once.unlink()
        time.sleep(10)


def _slow_init() -> None:
    """Worker init: the real one, then math-verify's parse and compare slowed for chosen inputs."""
    import math_verify.grader as grader
    import math_verify.parser as parser

    from boundlab.verify.math_worker import _worker_init

    _worker_init()
    real_extract, real_eq = parser.extract_target_from_pred, grader.sympy_expr_eq

    def extract(pred, *args, **kwargs):
        _maybe_stall(_tag(pred))
        return real_extract(pred, *args, **kwargs)

    def expr_eq(gold, target, *args, **kwargs):
        _maybe_stall(_tag(f"gold-{gold}"))
        return real_eq(gold, target, *args, **kwargs)

    parser.extract_target_from_pred = extract
    grader.sympy_expr_eq = expr_eq


@pytest.fixture
def slow_dir(tmp_path, monkeypatch):
    d = tmp_path / "slow"
    d.mkdir()
    monkeypatch.setenv(SLOW_DIR, str(d))  # spawned workers inherit it
    return d


def slowed_verifier(workers: int = 1) -> MathVerifier:
    v = MathVerifier(workers=workers)
    v.pool = DeadlinePool(_worker_check, workers=workers, deadline_s=v.pool.deadline_s, init=_slow_init)
    return v


def P(gold: str, pid: str = "p") -> Problem:
    return Problem(pid, "q", gold)


# Each pair needs a worker (none is decided in the parent: the closed-form answers have the
# gold's value, written otherwise, the others are neither closed forms nor polynomials (a Greek
# letter is outside that grammar), and `x = \sqrt{2}` against itself needs its gold's profile).
HALF_A, HALF_B, HALF_WRONG = r"\frac{\sqrt{4}}{4}", r"\sqrt{0.25}", r"\frac{\alpha}{2}"
ITEMS = [(P(r"\frac{1}{2}", "half"), [rf"\boxed{{{HALF_A}}}", rf"\boxed{{{HALF_B}}}",
                                      rf"\boxed{{{HALF_WRONG}}}"]),
         (P(r"\frac{3}{4}", "threeq"), [r"\boxed{1-\frac{1}{4}}", r"\boxed{\alpha}"]),
         (P(r"x = \sqrt{2}", "root"), [r"\boxed{x = \sqrt{2}}"])]
EXPECTED = [["correct", "correct", "wrong"], ["correct", "wrong"], ["correct"]]


def outcomes(rows):
    return [[v.outcome for v in row] for row in rows]


def test_expiry_on_a_starved_worker_is_retried_and_scoring_twice_agrees(slow_dir):
    # Run 1 "under load": the answer sqrt(0.25)'s parse and the comparison against 3/4 lose their
    # CPU past math-verify's budget once each. Unfixed, both came back `wrong`, silently.
    (slow_dir / f"{_tag(f'${HALF_B}$')}.once").touch()
    (slow_dir / f"{_tag('gold-3/4')}.once").touch()
    v1 = slowed_verifier()
    try:
        first = outcomes(v1.score_many(ITEMS))
        assert v1.retries == 2
    finally:
        v1.close()
    assert not list(slow_dir.iterdir())  # both stalls really happened
    # Run 2, a fresh verifier (fresh caches), no load: identical verdicts.
    v2 = slowed_verifier()
    try:
        second = outcomes(v2.score_many(ITEMS))
        assert v2.retries == 0
    finally:
        v2.close()
    assert first == second == EXPECTED


def test_an_expiry_that_persists_is_timeout_never_cached_and_checked_again(slow_dir):
    (slow_dir / f"{_tag(f'${HALF_B}$')}.always").touch()
    v = slowed_verifier()
    try:
        out = outcomes(v.score_many(ITEMS))
        assert out == [["correct", "timeout", "wrong"], ["correct", "wrong"], ["correct"]]
        assert v.retries == 1
        assert (r"\frac{1}{2}", HALF_B) not in v._cache
        assert v._cache[(r"\frac{1}{2}", HALF_A)] == (True, "correct")
        # Not cached: the next call asks math-verify again, and with the load gone it decides.
        (slow_dir / f"{_tag(f'${HALF_B}$')}.always").unlink()
        calls = v.calls
        again = v.score(ITEMS[0][0], [rf"\boxed{{{HALF_B}}}"])[0]
        assert (again.correct, again.outcome) == (True, "correct")
        assert v.calls == calls + 1 and v._cache[(r"\frac{1}{2}", HALF_B)] == (True, "correct")
    finally:
        v.close()


def test_a_worker_killed_at_the_hard_deadline_while_starved_is_retried(slow_dir):
    # SIGALRM blocked: math-verify's own alarm cannot fire, the parent kills the worker at its
    # deadline; the worker had used almost no CPU, so the check is retried, and succeeds.
    (slow_dir / f"{_tag(f'${HALF_WRONG}$')}.hang").touch()
    v = slowed_verifier()
    try:
        out = outcomes(v.score_many(ITEMS[:1]))
        assert out == [EXPECTED[0]]
        assert v.pool.restarts == 1 and v.retries == 1
    finally:
        v.close()


def test_an_answer_that_needs_more_than_the_budget_is_timeout_and_not_cached():
    # A power tower uses its whole budget of CPU: `timeout` (it was `wrong`), never cached.
    v = MathVerifier(workers=1)
    try:
        out = v.score(P("1"), [r"\boxed{9^{9^{9^{9}}}}"])[0]
        assert (out.correct, out.outcome) == (False, "timeout")
        assert not v._cache
    finally:
        v.close()


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_scoring_a_file_twice_under_load_stores_identical_verdicts(slow_dir, tmp_path, capsys):
    task = Task("mini", [p for p, _ in ITEMS])
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps({"problem_id": p.problem_id, "completion": c}) + "\n"
                            for p, comps in ITEMS for c in comps))

    def score(store_name: str):
        store = Store(tmp_path / store_name)
        v = slowed_verifier()
        try:
            res, _ = score_samples_file(task, path, v, store, bootstrap_iters=10, progress=False)
            rows = [(r.problem_id, r.idx, r.correct, r.outcome) for r in store.samples(res.key)]
            return res, rows, store
        finally:
            v.close()

    (slow_dir / f"{_tag(f'${HALF_B}$')}.once").touch()
    (slow_dir / f"{_tag('gold-3/4')}.once").touch()
    res1, rows1, s1 = score("loaded.sqlite")
    res2, rows2, s2 = score("idle.sqlite")
    s1.close()
    s2.close()
    assert rows1 == rows2
    assert res1.c.tolist() == res2.c.tolist() == [2, 1, 1]
    assert not any("timeout" in note for note in res1.notes + res2.notes)


def test_a_stored_timeout_is_reported_and_rechecked_on_the_next_run(slow_dir, tmp_path, capsys):
    task = Task("mini", [p for p, _ in ITEMS])
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps({"problem_id": p.problem_id, "completion": c}) + "\n"
                            for p, comps in ITEMS for c in comps))
    store = Store(tmp_path / "s.sqlite")
    stall = slow_dir / f"{_tag(f'${HALF_B}$')}.always"
    stall.touch()
    v = slowed_verifier()
    try:
        res, _ = score_samples_file(task, path, v, store, bootstrap_iters=10, progress=False)
        assert res.c.tolist() == [1, 1, 1]
        # (The other note: problems have 3, 2 and 1 samples.)
        assert res.notes[1:] == ("1 sample(s) of 1 problem(s) are `timeout`: the verifier could not "
                                 "decide within its budget; they count as wrong, and rerunning the "
                                 "same command re-checks them",)
        capsys.readouterr()
        stall.unlink()
        again, _ = score_samples_file(task, path, v, store, bootstrap_iters=10, progress=False)
        assert capsys.readouterr().out == ("[boundlab] re-checked 1 stored timeout verdict(s): "
                                           "1 decided (1 correct), 0 still timeout\n")
        assert again.key == res.key and again.c.tolist() == [2, 1, 1] and again.notes == res.notes[:1]
        assert [r.outcome for r in store.samples(res.key, "half")] == ["correct", "correct", "wrong"]
    finally:
        v.close()
        store.close()


def test_the_retry_budget_is_cpu_time_and_interrupts_like_math_verifys_alarm():
    # A step that never finishes gets exactly its CPU budget (however long that takes in wall
    # time on a loaded machine), is interrupted with math-verify's own TimeoutException (so
    # math-verify swallows it as it does its alarm) and is reported expired.
    from math_verify.errors import TimeoutException

    from boundlab.verify.math_worker import _timed

    def spin():
        try:
            while True:
                pass
        except TimeoutException:
            return []

    before = signal.getsignal(signal.SIGPROF)
    out, expired, cpu = _timed(spin, 60, 0.3)
    # ITIMER_PROF runs on the kernel's tick-sampled CPU accounting, process_time() on the precise
    # clock: under heavy load the timer fired at 0.291 s and at 0.216 s of precise CPU time for a
    # 0.3 s budget (load average 8). The point here is the upper bound: interrupted near its budget
    # of CPU time, not after 60 s of wall clock; the lower bound only rules out an instant expiry.
    assert (out, expired) == ([], True) and 0.15 <= cpu < 1.0
    assert signal.getsignal(signal.SIGPROF) is before
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    # A step that finishes within its budget is not expired, and a truthy answer never is.
    assert _timed(lambda: [1], 60, 0.3)[:2] == ([1], False)


def test_the_pool_reports_the_cpu_time_of_a_call_it_killed():
    # A call that sleeps past the deadline used almost no CPU: the caller can tell it was
    # starved, not expensive.
    pool = DeadlinePool(_sleep_then, workers=1, deadline_s=0.5)
    try:
        assert pool.map([0.0, 30.0, 0.0]) == ["ok", ("__timeout__",), "ok"]
        assert list(pool.killed_cpu_s) == [1] and 0.0 <= pool.killed_cpu_s[1] < 0.25
        assert pool.map([0.0], deadline_s=5.0) == ["ok"] and pool.killed_cpu_s == {}
    finally:
        pool.close()


def _sleep_then(s: float) -> str:
    time.sleep(s)
    return "ok"
