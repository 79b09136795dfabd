"""DeadlinePool's batched dispatch: calls travel in batches and come back one by one, yet every
call keeps its own hard deadline, an overrunning call is killed with its worker, and the calls
queued behind it run on a fresh worker and come back in order."""

import os
import time

import pytest

from boundlab.verify.pool import CRASH, TIMEOUT, DeadlinePool


def _sleep_pid(s: float) -> tuple[str, int]:
    time.sleep(s)
    return ("ok", os.getpid())


def _die_on(x: object) -> tuple[str, int]:
    if x == "die":
        os._exit(3)  # a worker that dies mid-call (a segfault in C code, the OOM killer)
    return ("ok", os.getpid())


def test_a_call_killed_mid_batch_the_rest_run_on_a_fresh_worker_in_order():
    pool = DeadlinePool(_sleep_pid, workers=1, deadline_s=0.5)
    try:
        # One group: one batch, one worker.
        res = pool.map([0.0, 0.0, 30.0, 0.0, 0.0], groups=["g"] * 5)
        assert res[2] == TIMEOUT
        assert [r[0] for i, r in enumerate(res) if i != 2] == ["ok"] * 4
        assert res[0][1] == res[1][1]  # ran in the first worker
        assert res[3][1] == res[4][1] != res[0][1]  # ran in its replacement
        assert pool.restarts == 1
        # The killed call slept: it used almost no CPU, and it is the only one recorded.
        assert list(pool.killed_cpu_s) == [2] and 0.0 <= pool.killed_cpu_s[2] < 0.25
    finally:
        pool.close()


def test_each_call_of_a_batch_has_its_own_deadline():
    # Four calls of 0.4 s in one batch take 1.6 s in all: no call overruns its 1 s deadline, so
    # none is killed (a deadline per batch would have killed the third).
    pool = DeadlinePool(_sleep_pid, workers=1, deadline_s=1.0)
    try:
        t = time.monotonic()
        res = pool.map([0.4] * 4, groups=["g"] * 4)
        assert time.monotonic() - t >= 1.6
        assert [r[0] for r in res] == ["ok"] * 4 and pool.restarts == 0
        assert len({r[1] for r in res}) == 1  # one batch, one worker
    finally:
        pool.close()


def test_a_group_goes_to_one_worker_and_results_come_back_in_order():
    pool = DeadlinePool(_sleep_pid, workers=2, deadline_s=5.0).start(wait_ready=True)
    try:
        args = [0.01 * (i % 3) for i in range(12)]
        groups = ["a", "b"] * 6
        res = pool.map(args, groups=groups)
        assert [r[0] for r in res] == ["ok"] * 12
        for g in "ab":
            assert len({r[1] for r, k in zip(res, groups) if k == g}) == 1, g
        with pytest.raises(ValueError, match="groups has 1 keys for 2 calls"):
            pool.map([0.0, 0.0], groups=["a"])
    finally:
        pool.close()


def test_a_worker_that_dies_mid_batch_costs_one_call_only():
    pool = DeadlinePool(_die_on, workers=1, deadline_s=5.0)
    try:
        res = pool.map([1, "die", 2, 3], groups=["g"] * 4)
        assert res[1] == CRASH
        assert [res[i][0] for i in (0, 2, 3)] == ["ok"] * 3
        assert res[2][1] == res[3][1] != res[0][1]
        assert pool.restarts == 1
        # The pool carries on.
        assert pool.map([4])[0][0] == "ok"
    finally:
        pool.close()


def test_batches_cut_large_groups_and_keep_small_ones_whole():
    pool = DeadlinePool(_sleep_pid, workers=2)
    batches = list(pool._batches(100, ["x"] * 90 + ["y"] * 10))
    assert [len(b) for b in batches] == [13] * 6 + [12, 10]
    assert sorted(i for b in batches for i in b) == list(range(100))
    assert list(pool._batches(5, None)) == [[0, 1, 2, 3, 4]]


def _warm_state(sleep_s: float) -> tuple[bool, bool, int]:
    """In a worker, after sleeping: has math-verify been imported, have the warm-up shapes been
    parsed, and which process is this?"""
    import sys

    time.sleep(sleep_s)
    math = sys.modules.get("boundlab.verify.math_worker")
    return "math_verify" in sys.modules, bool(math is not None and math._warm), os.getpid()


@pytest.mark.skipif("forkserver" not in __import__("multiprocessing").get_all_start_methods(),
                    reason="no forkserver on this platform")
def test_preloaded_workers_are_forked_warm_and_spawned_ones_are_not():
    # The math verifier's workers come from a fork server that imported math-verify and parsed
    # the warm-up shapes: they start with both done, and no `init` of their own.
    warm = DeadlinePool(_warm_state, workers=1, deadline_s=1.0,
                        preload=("boundlab.verify.math_preload",))
    # The control: a spawned worker starts bare.
    bare = DeadlinePool(_warm_state, workers=1)
    try:
        assert warm._ctx.get_start_method() == "forkserver"
        assert bare._ctx.get_start_method() == "spawn"
        assert bare.map([0.0])[0][:2] == (False, False)
        # The middle call overruns its deadline: its worker is killed, and the call after it runs
        # on a replacement that is just as warm.
        res = warm.map([0.0, 30.0, 0.0], groups=["g"] * 3)
        assert res[1] == TIMEOUT and warm.restarts == 1
        assert res[0][:2] == res[2][:2] == (True, True)
        assert res[0][2] != res[2][2]
    finally:
        warm.close()
        bare.close()
