"""task.problems_from: any task cut to the problem ids a file lists (the settled experiment's base
focus probe), in the task's order; a subset is its own task to the store (its fingerprint is the
subset's); an unreadable, empty or foreign list is one line."""

from __future__ import annotations

import pytest

from boundlab.config import TaskConfig
from boundlab.config.probing import Toy2TaskConfig
from boundlab.tasks import build_task
from boundlab.tasks.jsonl import DataError

SLICE = dict(name="toy2", toy2=Toy2TaskConfig(slice="heldout", tiers=["H1", "H2", "B3", "B4"]))


def test_the_listed_problems_in_the_tasks_order(tmp_path):
    whole = build_task(TaskConfig(**SLICE))
    picked = [whole.problems[i].problem_id for i in (7, 2, 300)]
    f = tmp_path / "ids.txt"
    f.write_text(f"{picked[0]}\n\n  {picked[1]}  \n{picked[2]}\n{picked[0]}\n")  # blanks, spaces, a repeat
    task = build_task(TaskConfig(**SLICE, problems_from=str(f)))
    assert [p.problem_id for p in task.problems] == [whole.problems[i].problem_id for i in (2, 7, 300)]
    # The fingerprint is the subset's: what report.py's restriction of the whole task computes.
    assert task.fingerprint() == whole.with_problems(task.problems).fingerprint() != whole.fingerprint()


@pytest.mark.parametrize("text,needle", [
    (None, "cannot read it"),
    ("\n \n", "holds no problem ids"),
    ("tw2-heldout-0000\nnot-a-problem\n", "1 id(s) are not problems of task 'toy2' (task.split=test), e.g. not-a-problem"),
])
def test_a_bad_list_is_one_line(tmp_path, text, needle):
    f = tmp_path / "ids.txt"
    if text is not None:
        f.write_text(text)
    with pytest.raises(DataError) as e:
        build_task(TaskConfig(**SLICE, problems_from=str(f)))
    assert needle in str(e.value) and "\n" not in str(e.value)
