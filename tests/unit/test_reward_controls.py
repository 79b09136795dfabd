"""The reward controls of issue 40: `reward.strict` (right answer *and* the canonical trace) and
`reward.shuffle_within_group` (the drift control: rewards permuted within each group, seeded)."""

from __future__ import annotations

from collections import Counter

import pytest

from boundlab.config import ConfigError
from boundlab.tasks.base import Problem, Task
from boundlab.training.rewards import check_strict, make_reward_fn, shuffle_within_groups
from boundlab.verify import build_verifier

# 2+3*4 = 14 (H1: one precedence decision). Traces written by hand in the toy world's grammar.
CANONICAL = "3*4=12>2+12,2+12=14;A:14"
BARE = "A:14"                          # the right answer, no trace
LUCKY_SLIP = "2+3=5>5*4,5*4=14;A:14"   # wrong decision, then a slip that lands on the gold
LEFT_TO_RIGHT = "2+3=5>5*4,5*4=20;A:20"  # a valid trace, the wrong decision, a wrong answer
GARBAGE_RIGHT = "1+1=2;A:14"           # an invalid move, right number at the end
TEXTS = [CANONICAL, BARE, LUCKY_SLIP, LEFT_TO_RIGHT, GARBAGE_RIGHT]


@pytest.fixture(scope="module")
def toy2():
    task = Task(name="toy2", problems=[Problem("p", "2+3*4", "14", {"tier": "H1"}),
                                       Problem("q", "3+4*2", "11", {"tier": "H1"})],
                verifier="toy2")
    verifier = build_verifier("toy2")
    try:
        yield task, verifier
    finally:
        verifier.close()


def _call(fn, texts, pids):
    return fn(prompts=["x"] * len(texts), completions=texts, problem_id=pids)


def test_answer_only_reward_pays_every_right_answer(toy2):
    task, verifier = toy2
    fn = make_reward_fn(task, verifier)
    assert _call(fn, TEXTS, ["p"] * 5) == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert fn.__name__ == "toy2_correct"


def test_strict_reward_pays_only_the_canonical_trace(toy2):
    task, verifier = toy2
    fn = make_reward_fn(task, verifier, strict=True)
    assert _call(fn, TEXTS, ["p"] * 5) == [1.0, 0.0, 0.0, 0.0, 0.0]
    # The other problem's canonical trace, and this problem's trace offered for the other problem.
    assert _call(fn, ["4*2=8>3+8,3+8=11;A:11", CANONICAL], ["q", "q"]) == [1.0, 0.0]
    assert fn.__name__ == "toy2_strict"


def test_strict_refuses_a_verifier_without_traces(toy2):
    task, verifier = toy2
    check_strict(task, verifier)  # toy2 checks traces: no error
    math_task = Task(name="m", problems=[Problem("m1", "What is 3+4?", "7")], verifier="math")
    math_verifier = build_verifier("math", workers=1)
    try:
        with pytest.raises(ConfigError, match="reward.strict=true"):
            check_strict(math_task, math_verifier)
    finally:
        math_verifier.close()


def test_shuffle_is_a_permutation_within_each_group():
    # Two groups, interleaved: a group is the completions of one problem, wherever they sit.
    rewards = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    pids = ["p", "q", "p", "q", "p", "q", "p", "q"]
    texts = [f"t{i}" for i in range(8)]
    for seed in range(20):
        out = shuffle_within_groups(rewards, pids, texts, seed)
        assert sorted(out[0::2]) == [0.0, 0.0, 0.0, 1.0]   # p: one right of four
        assert sorted(out[1::2]) == [0.0, 1.0, 1.0, 1.0]   # q: three right of four


def test_shuffle_is_seeded_and_reproducible():
    rewards = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    pids = ["p"] * 6
    texts = [f"t{i}" for i in range(6)]
    first = shuffle_within_groups(rewards, pids, texts, 7)
    assert shuffle_within_groups(rewards, pids, texts, 7) == first
    # Another seed, or other rollouts, draw another permutation (some of the seeds tried must differ).
    assert any(shuffle_within_groups(rewards, pids, texts, s) != first for s in range(8, 18))
    assert any(shuffle_within_groups(rewards, pids, [t + "x" for t in texts], s) != first
               for s in (7, 8, 9))
    # The input is left as it was.
    assert rewards == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_shuffle_carries_no_information_about_which_completion_is_right():
    # The one right completion is the first; over many seeds its reward is 1 a quarter of the time,
    # as is every other position's: the reward no longer says which completion is right.
    rewards, pids, texts = [1.0, 0.0, 0.0, 0.0], ["p"] * 4, ["a", "b", "c", "d"]
    hits = Counter()
    seeds = 4000
    for seed in range(seeds):
        out = shuffle_within_groups(rewards, pids, texts, seed)
        hits.update(i for i, r in enumerate(out) if r == 1.0)
    assert sum(hits.values()) == seeds
    # Binomial(4000, 1/4): sd 27.4; +-150 is more than 5 sd.
    assert all(abs(hits[i] - seeds / 4) < 150 for i in range(4)), hits


def test_the_reward_fn_shuffles_its_verdicts(toy2):
    task, verifier = toy2
    plain = make_reward_fn(task, verifier)
    shuffled = make_reward_fn(task, verifier, shuffle_seed=3)
    strict_shuffled = make_reward_fn(task, verifier, strict=True, shuffle_seed=3)
    pids = ["p"] * 5
    got = _call(shuffled, TEXTS, pids)
    assert got == shuffle_within_groups(_call(plain, TEXTS, pids), pids, TEXTS, 3)
    assert sorted(got) == [0.0, 1.0, 1.0, 1.0, 1.0]
    assert sorted(_call(strict_shuffled, TEXTS, pids)) == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert shuffled.__name__ == "toy2_correct_shuffled"
