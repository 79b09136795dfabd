"""Official-solution agreement: the math verifier against the benchmarks' own human solutions.

For MATH500, GSM8K and Minerva (`reference_solutions`), and OlympiadBench and AMC23 (their official
answer, boxed, since their files carry no worked solution):
- **solutions**: each problem's worked solution, as written, is a completion that must be judged
  correct against its gold. MATH500: the solution text (its final box is the answer). GSM8K: the
  text before `#### ` followed by the final number as the dataset writes it (thousands commas
  kept), once boxed (`\\boxed{1,450,000}`) and once stated ("The answer is 1,450,000.").
- **cross pairs**: the gold of another problem, boxed, must be judged wrong, unless the two golds
  are the same string after normalization (then it is the same answer, not a test). All pairs are
  too many to check in a unit test (MATH500 has 249,500, most needing math-verify); each problem
  is paired with `k` others drawn by a seeded RNG (deterministic), or with all others (`k=None`).

`run(verifier, name, k)` returns the counts and every disagreement, for the test (which asserts
the exact list of known residuals) and `bench/verify_agreement.py` (which prints them as JSON).
"""

from __future__ import annotations

import random
from typing import Any

from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem
from boundlab.tasks.benchmarks import reference_solutions
from boundlab.verify.base import Verifier
from boundlab.verify.normalize import normalize_answer

TASKS_WITH_SOLUTIONS = ("math500", "gsm8k")
# Benchmarks without worked solutions in their files: the official answer itself, written as a
# final `\\boxed{}`, is the completion (issue 18's check for OlympiadBench and AMC23).
TASKS_WITH_GOLD_ONLY = ("olympiadbench", "amc23")


def solution_completions(name: str) -> list[tuple[Problem, str, str]]:
    """(problem, completion, variant) for every official solution of task `name`."""
    task = TASKS.get(name)(None)
    if name in TASKS_WITH_GOLD_ONLY:
        return [(p, f"The final answer is $\\boxed{{{p.answer}}}$.", "gold") for p in task.problems]
    sols = reference_solutions(name)
    out = []
    for p in task.problems:
        sol = sols[p.problem_id]
        if name == "gsm8k":
            body, final = sol.rsplit("#### ", 1)
            final = final.strip()
            out.append((p, f"{body.rstrip()}\nSo the answer is $\\boxed{{{final}}}$.", "boxed"))
            out.append((p, f"{body.rstrip()}\nThe answer is {final}.", "stated"))
        else:
            out.append((p, sol, "solution"))
    return out


def cross_pairs(problems: list[Problem], k: int | None, seed: int = 0) -> list[tuple[Problem, Problem]]:
    """(problem, other) pairs whose golds differ as strings after normalization."""
    rng = random.Random(seed)
    norm = [normalize_answer(p.answer).replace(" ", "") for p in problems]
    out = []
    for i, p in enumerate(problems):
        others = [j for j in range(len(problems)) if j != i and norm[j] != norm[i]]
        picked = others if k is None or k >= len(others) else sorted(rng.sample(others, k))
        out.extend((p, problems[j]) for j in picked)
    return out


def run(verifier: Verifier, name: str, k: int | None = 5, seed: int = 0) -> dict[str, Any]:
    sols = solution_completions(name)
    verdicts = verifier.score_many([(p, [c]) for p, c, _ in sols])
    misses = [{"problem_id": p.problem_id, "variant": var, "gold": p.answer, "answer": v[0].extracted,
               "outcome": v[0].outcome}
              for (p, _, var), v in zip(sols, verdicts) if not v[0].correct]
    task = TASKS.get(name)(None)
    pairs = cross_pairs(task.problems, k, seed)
    cross = verifier.score_many([(p, [f"\\boxed{{{o.answer}}}"]) for p, o in pairs])
    accepted = [{"problem_id": p.problem_id, "other": o.problem_id, "gold": p.answer, "answer": o.answer}
                for (p, o), v in zip(pairs, cross) if v[0].correct]
    return {"task": name, "problems": len(task), "solution_completions": len(sols),
            "solutions_correct": len(sols) - len(misses), "solution_misses": misses,
            "cross_pairs": len(pairs), "cross_k": k, "cross_seed": seed,
            "cross_wrong": len(pairs) - len(accepted), "cross_accepted": accepted}
