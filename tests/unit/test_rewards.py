"""The training reward is the probe's verdict, cut-off rule included (issue 22)."""

from __future__ import annotations

import pytest

from boundlab.tasks.base import Problem, Task
from boundlab.training.rewards import cut_off_flags, make_reward_fn
from boundlab.verify import build_verifier

EOS = 2


def test_cut_off_flags_by_hand():
    ids = [[5, 6, EOS], [5, 6, 7], [5, EOS], [5, 6], []]
    # max_len 3: [5,6,7] hit the limit without EOS; [5,6,EOS] ended exactly at the limit.
    assert cut_off_flags(ids, 3, EOS) == [False, True, False, False, False]
    assert cut_off_flags(ids, None, EOS) is None
    assert cut_off_flags(None, 3, EOS) is None


@pytest.fixture(scope="module")
def math_reward():
    task = Task(name="t", problems=[Problem(problem_id="p", question="What is 3+4?", answer="7")],
                verifier="math")
    verifier = build_verifier("math", workers=1)
    try:
        yield make_reward_fn(task, verifier, max_completion_length=4, eos_token_id=EOS)
    finally:
        verifier.close()


def test_a_cut_off_completion_earns_no_reward_from_a_fallback(math_reward):
    text = "We add them: 3 + 4 = 7"
    done, cut = [1, 2, 3, EOS], [1, 2, 3, 4]
    # Finished, the lenient rule reads its final number; cut off at the limit, it has no answer.
    assert math_reward(prompts=["q", "q"], completions=[text, text], problem_id=["p", "p"],
                       completion_ids=[done, cut]) == [1.0, 0.0]


def test_a_boxed_answer_counts_even_when_cut_off(math_reward):
    text = r"so the answer is \boxed{7} and then"
    assert math_reward(prompts=["q"], completions=[text], problem_id=["p"],
                       completion_ids=[[1, 2, 3, 4]]) == [1.0]
