"""The math verifier: extract the final answer, check it against the gold answer with math-verify.

- Extraction (see `extract.py`): every box of the final statement; without a box (and only with
  `extraction=lenient`) math-verify's own extraction over the end of the completion. A completion
  cut off at max_new_tokens with neither a box nor an "answer is" statement is `truncated`.
- Several answers: against a gold with several answers (`split_gold`) they are joined into one list
  and compared as a set; against a one-answer gold each is checked, and they are correct only if all
  are: one right and one wrong is a `hedge` (no credit), which is where pass@k at large k would
  otherwise reward guessing.
- Each distinct extracted answer is verified once per problem and its verdict reused for every
  duplicate (at n=256 most samples repeat a handful of answers). Verdicts are also cached across
  calls, keyed by (gold, answer).
- Every math-verify call runs in a worker process (`DeadlinePool`): math-verify's own timeouts use
  `signal.alarm`, which needs a main thread and cannot interrupt C-level big-integer arithmetic, so
  the parent enforces a hard deadline and replaces a worker that overruns it. A worker gets its
  calls in batches, all of one gold's together (it parses that gold once); each call keeps its own
  deadline. Workers are forked from a fork server that has imported math-verify and parsed one
  answer of each common shape (`WARMUP_SHAPES`, `math_preload.py`): a worker starts, or replaces
  a killed one, in milliseconds, and its first tuple or interval costs what its next one does.
- Answers longer than `max_answer_chars` are judged `too_long` without parsing.
- Answers and gold are normalized first (`normalize.py`: `2\\,220` is 2220, `\\textbf{(073)}` is 73).

What math-verify would conclude is decided without it where that is certain (issue 13: most of
the work at n = 256 was checking answers whose verdict is plain); each rule is checked against
math-verify itself on grids of traps in tests/unit/test_math_verifier.py:
- **Plain numbers** (`fast_verdict`, in the parent, no parse): gold and answer both integers,
  decimals of up to 15 digits or fractions of integers (`\\frac`, `\\dfrac`, `\\tfrac`, `p/q`),
  with a minus sign or not. Neither a decimal: exact equality (math-verify compares two sympy
  Rationals). A decimal on either side: equal values are equal, values apart by more than
  1e-5 + 1e-9 |x| are not; closer ones (0.333333 against 1/3, which math-verify calls equal at
  its 6 decimal places) go to math-verify, as do longer decimals (sympy gives them more bits),
  `+5`, `5.`, `1,000`, percents, units and zero denominators.
- **Gold profiles** (`GoldProfile`): the first time a gold needs it, a worker parses it and
  reports math-verify's verdict for an identical answer (parse is deterministic: an identical
  string gets that verdict), the gold's value when it is a small closed-form constant (`\\pi`,
  `3\\sqrt{13}`, the right side of `x = 5`), and whether no single number can ever equal it (a
  tuple, a set of several distinct constants, a non-constant polynomial such as `p - q`, a symbol
  such as `\\text{Evelyn}`, a matrix, an interval, an equation that is no assignment). With it,
  the parent decides an identical answer, and a plain number against such a gold (`wrong` when
  the values are apart as above), unless the number's `parse_text` is one of the gold's strings
  (math-verify compares the strings too). `_gold_profile` says why each case is math-verify's
  own conclusion.
- **The same parse** (`same_parse`, `parse_text`): math-verify normalizes `$s$` before parsing
  (`\\dfrac` is `\\frac`, `\\left(` is `(`, `\\frac43` is `\\frac{4}{3}`, units dropped), and its
  parse, expression and string, is a function of the normalized text. `parse_text` computes that
  text here (math-verify's own `normalize_latex`, no parse); an answer with the gold's gets the
  gold's verdict against itself (its profile's, or `True` for a gold in the grammar below).
- **Closed-form constants** (`closed_form_verdict`, in the parent, no parse): `closed_form.py`
  reads the expressions whose value latex2sympy agrees on (`3\\sqrt{13}`, `-\\frac{\\sqrt{3}}{2}`,
  `2\\pi`, `(1+\\sqrt{2})^2`, `12\\pi/5`; not `2\\frac{1}{2}`, `2(3)` or `1/2\\pi`, which it reads
  otherwise). Gold and answer both such constants: the same string is correct, values
  `_far_apart` are wrong, the rest goes to math-verify. Against a profiled gold, such an answer
  is decided like a plain number (`apart_any` for a tuple, a set, a polynomial; never against a
  symbol, or a gold one of whose strings is itself a closed form). A gold that is a closed form
  is never profiled. `bench/verify_fuzz.py` (with its test tool `bench/verify_fuzz_lib.py`) checks the rules at scale.
- **Polynomials, lists and equations** (`polynomial_verdict`, `relation_verdict`, in the parent,
  no parse): `closed_form.polynomials` also reads polynomials in single-letter symbols (`6 - 5i`,
  `p - q`, `3x^2 - 2x + 1`), top-level lists of them and of constants (`1, -2`, a FiniteSet), and
  `closed_form.relation` equations of them (`x = 5`, `2x = 5`). The same string is correct;
  lists one of whose elements differs from every element of the other are wrong; an equation is
  compared as math-verify compares it (an assignment gold by its right side, an equation answer
  against a gold that is none by its right side, two equations linear in one letter by their
  sides and roots). Such a gold is never profiled either.
- **Assignments of plain numbers** (`assignment_verdict`, in the parent, no parse): `x = 12`
  against `12`, either way round (a bare lowercase letter other than `e` and `i`, a plain number
  on the right): math-verify compares the number with the right side, so the pair gets the
  plain-number verdict (equal values correct, values far apart wrong, the rest to math-verify).
  `2x = 4`, chains, lists of assignments, capitals and close values are left to the rules above
  and math-verify (issue 36: such answers all went to math-verify).
- **Self-verdicts from strings**: a profiled gold whose parse holds a non-empty string gets
  `True` for an identical answer without running `verify`, which is what `verify` returns for
  it (it accepts any pair of items that are equal non-empty strings).
- **Values apart** (`_values_apart`, in the worker, after both parses, before `verify`): two
  closed-form constants whose values are apart, or a constant against a non-constant polynomial,
  with no string in common: `wrong` without running sympy's `simplify`.
- A worker keeps every parse (golds recur in every batch, answers such as `0` or `\\sqrt{2}`
  across golds). The parent pauses Python's garbage collector while it scores.
None of this changes a verdict (a pair math-verify could not decide within its budget may now be
decided `wrong` rather than `timeout`, and timeouts are re-checked anyway), so the version stays 4.

Otherwise a call is exactly `verify(parse("$gold$"), parse("$answer$"))`, so the verdict is the one
a plain math-verify call gives; only the work is shared. One exception (verifier version 3): two
plain numbers (decimal or `m \\times 10^{k}`), one of them below 1e-3 in magnitude, are compared
here to 6 significant digits (`small_number_verdict`); math-verify rounds to 6 decimal places, so
to it 2.88e-19 and 2.88e-18 are equal (Minerva has such golds). Version 4: a problem whose meta has
`rel_tol` (Minerva, 1e-4) judges two plain numbers equal when |a - g| <= rel_tol * |g|, here too.

Where this departs from a plain call: math-verify's own budgets (`parsing_timeout`,
`timeout_seconds`, whole seconds of wall clock, `signal.alarm`) expire *silently*, returning an
empty parse or False, so on a loaded machine a plain call can say `wrong` for a right answer. The
worker times every step (monotonic clock and CPU time): a step that returned nothing after running
its whole budget has expired. The budget is treated as CPU time, so the verdict does not depend on
load:
- expired after using most of its budget as CPU time: the check needs more than the budget ->
  `timeout`, at once (power towers land here, in about a second, as before);
- expired while starved of CPU (a loaded machine): retried once, with 3x the wall-clock budget
  and hard deadline, each step interrupted (SIGPROF, raising math-verify's own timeout) once it
  has used the normal budget of CPU time; the retry's verdict counts, an expiry again is `timeout`;
- a call killed at the hard deadline is judged the same way from the CPU time the worker spent.
A `timeout` is never put in the verdict cache, and a rerun of a probe re-checks stored timeouts
(`boundlab.probe.verdicts`).
"""

from __future__ import annotations

import gc
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from boundlab.tasks.base import Problem
from boundlab.verify.base import Verdict, Verifier
from boundlab.verify.extract import MAX_ANSWER_CHARS, MODES, Extraction, _patterns, extract
from boundlab.verify.normalize import normalize_answer
from boundlab.verify.pool import CRASH, TIMEOUT, DeadlinePool
from boundlab.verify.math_rules import (GoldProfile, answer_units, fast_verdict, may_use_profile,
                                        profile_from, rel_tol_verdict)
from boundlab.verify.math_worker import (_CPU_FULL, _PARSE_TIMEOUT_S, _RETRY_FACTOR, EXPIRED,
                                         _worker_check, _worker_init)


class MathVerifier(Verifier):
    name = "math"
    # Bumped whenever a verdict can change for the same (gold, completion). 2: math-verify's silent
    # expiries are detected and retried or judged `timeout` (were `wrong`); every box of the final
    # statement, hedges, math-verify's own extraction when unboxed, `truncated`. 3: thousands in
    # LaTeX spacing (`2\\,220`), numbers in `\\text{}`, an empty box is `no_answer`, number words
    # up to twenty in "the answer is", e-notation (verify/normalize.py; the gold is normalized the
    # same way); plain numbers below 1e-3 compared to 6 significant digits (`fast_verdict`).
    # 4: a problem's `meta["rel_tol"]` (Minerva: 1e-4) decides two plain numbers (`rel_tol_verdict`).
    version = 4
    # score_many takes `cut_off` flags (completions stopped at max_new_tokens).
    reads_cut_off = True
    # Cannot change a verdict: the worker count and the cache size. Everything else it is built
    # with (its `verify.math` block) is in the probe key.
    verdict_neutral = frozenset({"workers", "cache_size"})
    libraries = ("math-verify", "latex2sympy2_extended", "sympy")
    # A timeout says math-verify could not decide in its budget, not that the answer is wrong.
    timeouts_are_final = False

    def __init__(self, workers: int = 2, deadline_s: float = 2.0,
                 max_answer_chars: int = MAX_ANSWER_CHARS, cache_size: int = 200_000,
                 extraction: str = "lenient"):
        if extraction not in MODES:
            raise ValueError(f"verify.math.extraction must be one of {', '.join(MODES)}, "
                             f"got {extraction!r}")
        self.extraction = extraction
        if extraction == "lenient":
            _patterns()  # compile math-verify's regexes once, up front, not inside a timed batch
        self.max_answer_chars = int(max_answer_chars)
        self.pool = DeadlinePool(_worker_check, workers=workers, deadline_s=deadline_s,
                                 init=_worker_init, preload=("boundlab.verify.math_preload",))
        self._cache: OrderedDict[tuple[str, str], tuple[bool, str]] = OrderedDict()
        self._cache_size = cache_size
        # Each gold's profile (`GoldProfile`), learned once from a worker.
        self._golds: OrderedDict[str, GoldProfile] = OrderedDict()
        self.calls = 0  # math-verify calls actually made (for benchmarks and tests)
        self.retries = 0  # of which retries after an expiry on a starved worker

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        return self.score_many([(problem, completions)])[0]

    def score_many(self, items: Sequence[tuple[Problem, Sequence[str]]],
                   cut_off: Sequence[Sequence[bool]] | None = None) -> list[list[Verdict]]:
        """`cut_off[i][j]`: completion j of item i stopped at max_new_tokens (None: none did)."""
        with _gc_paused():
            return self._score_many(items, cut_off)

    def _score_many(self, items: Sequence[tuple[Problem, Sequence[str]]],
                    cut_off: Sequence[Sequence[bool]] | None) -> list[list[Verdict]]:
        extracted = [[extract(c, self.extraction, bool(cut_off and cut_off[i][j]))
                      for j, c in enumerate(comps)] for i, (_, comps) in enumerate(items)]
        golds = [normalize_answer(problem.answer) for problem, _ in items]
        # Each problem's distinct extractions (at n = 256 most samples repeat a handful of
        # answers), each with the units that are checked against the gold: one unit per distinct
        # answer against a one-answer gold (several are a hedge unless all are right), or all
        # answers joined into one list against a gold with several answers.
        kinds = [{ex: answer_units(gold, ex.answers) for ex in dict.fromkeys(row)}
                 for gold, row in zip(golds, extracted)]
        # Distinct (gold, answer) pairs that still need a math-verify call; pairs that the gold's
        # profile may decide (`GoldProfile`), waiting for golds not profiled yet.
        todo: list[tuple[str, str]] = []
        waiting: list[tuple[str, str]] = []
        to_profile: dict[str, None] = {}
        decided: dict[tuple[str, str], tuple[bool, str]] = {}
        # Verdicts under a problem's own relative tolerance: never cached (another problem with the
        # same gold may have none), keyed by (gold, answer, tolerance).
        tols = [(problem.meta or {}).get("rel_tol") for problem, _ in items]
        tolerant: dict[tuple[str, str, float], tuple[bool, str]] = {}
        for gold, kind, tol in zip(golds, kinds, tols):
            for units in kind.values():
                for a in units:
                    if len(a) > self.max_answer_chars:
                        continue
                    if tol and (gold, a, tol) not in tolerant:
                        tv = rel_tol_verdict(gold, a, tol)
                        if tv is not None:
                            tolerant[(gold, a, tol)] = (tv, "correct" if tv else "wrong")
                            continue
                    elif tol:
                        continue
                    key = (gold, a)
                    if key in decided:
                        continue
                    hit = self._cache.get(key)
                    if hit is not None:
                        decided[key] = hit
                        continue
                    fast = fast_verdict(gold, a)
                    if fast is None:
                        profile = self._golds.get(gold)
                        if profile is not None:
                            fast = profile.verdict(a)
                        elif may_use_profile(gold, a):
                            to_profile[gold] = None
                            waiting.append(key)
                            decided[key] = (False, "pending")
                            continue
                    if fast is None:
                        decided[key] = (False, "pending")
                        todo.append(key)
                    else:
                        decided[key] = (fast, "correct" if fast else "wrong")
        if to_profile or todo:
            # One round: the golds' profiles first (a worker parses each gold once), the pairs
            # that need math-verify anyway with them.
            results = self._run([(g, None) for g in to_profile] + todo)
            for g, res in zip(to_profile, results):
                if isinstance(res, tuple) and len(res) == 6 and res[0] == "ok":
                    self._put_gold(g, profile_from(g, res))
            self._settle(todo, results[len(to_profile):], decided)
            rest = []
            for key in waiting:
                profile = self._golds.get(key[0])
                fast = None if profile is None else profile.verdict(key[1])
                if fast is None:
                    rest.append(key)
                else:
                    decided[key] = (fast, "correct" if fast else "wrong")
            if rest:  # undecided by the profile, or its gold could not be profiled
                self._settle(rest, self._run(rest), decided)
        out: list[list[Verdict]] = []
        for gold, row, kind, tol in zip(golds, extracted, kinds, tols):
            verdicts = decided
            if tol:  # this problem's own verdicts under its tolerance win
                verdicts = {**decided, **{k[:2]: v for k, v in tolerant.items()
                                          if k[0] == gold and k[2] == tol}}
            judged = {ex: self._judge(gold, ex, units, verdicts) for ex, units in kind.items()}
            out.append([Verdict(*judged[ex], info={"answer_from": ex.source, "boxed": True}
                                if ex.has_box else {"answer_from": ex.source}) for ex in row])
        return out

    def _settle(self, keys: list[tuple[str, str]], results: list[Any],
                decided: dict[tuple[str, str], tuple[bool, str]]) -> None:
        """Record math-verify's verdicts; final ones (not a `timeout`, nor an `error` from a worker
        that died: the next try may well succeed) also in the cache."""
        for key, res in zip(keys, results):
            verdict, final = _interpret(res)
            decided[key] = verdict
            if final:
                self._put(key, verdict)

    def _run(self, args: list[tuple]) -> list[Any]:
        """The workers' results for (gold, answer) calls (answer None: the gold's profile). A call
        that expired on a starved worker is retried once (see the module docstring); the retry's
        result replaces the first."""
        # One group per gold: a worker parses each gold once.
        results = self.pool.map(args, groups=[a[0] for a in args])
        killed = self.pool.killed_cpu_s
        self.calls += len(args)
        retry: list[int] = []
        for i, res in enumerate(results):
            if res == TIMEOUT:
                cpu = killed.get(i)
                starved = cpu is None or cpu < _CPU_FULL * self.pool.deadline_s
            elif isinstance(res, tuple) and res and res[0] == EXPIRED:
                starved = res[2] < _CPU_FULL * _PARSE_TIMEOUT_S
            else:
                continue
            if starved:  # else it needs more than the budget, loaded machine or not: `timeout`
                retry.append(i)
        if retry:
            again = self.pool.map([(*args[i], True) for i in retry],
                                  deadline_s=self.pool.deadline_s * _RETRY_FACTOR,
                                  groups=[args[i][0] for i in retry])
            self.calls += len(retry)
            self.retries += len(retry)
            for i, res in zip(retry, again):
                results[i] = res
        return results

    def _judge(self, gold: str, ex: Extraction, units: list[str],
               decided: dict[tuple[str, str], tuple[bool, str]]) -> tuple[bool, str | None, str]:
        """(correct, extracted, outcome) of a completion with this extraction."""
        if not units:
            return False, None, "truncated" if ex.source == "truncated" else "no_answer"
        shown = ", ".join(units)
        if any(len(a) > self.max_answer_chars for a in units):
            return False, shown[:200] + "...", "too_long"
        res = [decided[(gold, a)] for a in units]
        if all(ok for ok, _ in res):
            return True, shown, "correct"
        if any(ok for ok, _ in res):
            # Several different answers, one of them right: a hedge earns no credit.
            return False, shown, "hedge"
        return False, shown, next((o for _, o in res if o != "wrong"), "wrong")

    def _put(self, key: tuple[str, str], verdict: tuple[bool, str]) -> None:
        self._cache[key] = verdict
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _put_gold(self, gold: str, profile: GoldProfile) -> None:
        self._golds[gold] = profile
        if len(self._golds) > self._cache_size:
            self._golds.popitem(last=False)

    def close(self) -> None:
        self.pool.close()


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while. Scoring allocates tens of thousands of
    small objects, none of them cyclic, and every so often that triggers a full collection, which
    walks every object the process holds (sympy's alone are >100k; a trainer's far more): that was
    up to half the parent's time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _interpret(res: Any) -> tuple[tuple[bool, str], bool]:
    """A worker's answer -> ((correct, outcome), final)."""
    if res == TIMEOUT or (isinstance(res, tuple) and res and res[0] == EXPIRED):
        return (False, "timeout"), False
    if res == CRASH:
        return (False, "error"), False
    if isinstance(res, tuple) and res and res[0] == "__error__":
        return (False, "error"), True
    ok = bool(res[1])
    return (ok, "correct" if ok else "wrong"), True


from boundlab.verify import VERIFIERS  # noqa: E402

VERIFIERS.register("math")(MathVerifier)
