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
  deadline.
- Answers longer than `max_answer_chars` are judged `too_long` without parsing.
- Answers and gold are normalized first (`normalize.py`: `2\\,220` is 2220, `\\textbf{(073)}` is 73).

- When gold and answer are both plain integers (every AIME answer, most of MATH), the verdict is
  integer equality, decided in the parent with no parse at all. That is exactly what math-verify
  concludes for such pairs (tests/unit/test_math_verifier.py checks a grid of them against it).

Otherwise a call is exactly `verify(parse("$gold$"), parse("$answer$"))`, so the verdict is the one
a plain math-verify call gives; only the work is shared. One exception (verifier version 3): two
plain numbers (decimal or `m \\times 10^{k}`), one of them below 1e-3 in magnitude, are compared
here to 6 significant digits; math-verify rounds to 6 decimal places, so to it 2.88e-19 and
2.88e-18 are equal (Minerva has such golds). Version 4: a problem whose meta has `rel_tol`
(Minerva, 1e-4) judges two plain numbers equal when |a - g| <= rel_tol * |g|, here too.

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

import re
import signal
import time
from collections import OrderedDict
from decimal import Decimal
from typing import Any, Callable, Sequence

from boundlab.tasks.base import Problem
from boundlab.verify.base import Verdict, Verifier
from boundlab.verify.extract import MAX_ANSWER_CHARS, MODES, Extraction, _patterns, extract
from boundlab.verify.normalize import normalize_answer
from boundlab.verify.pool import CRASH, TIMEOUT, DeadlinePool

# Per-call budgets inside the worker (math-verify takes whole seconds).
_PARSE_TIMEOUT_S = 1
_VERIFY_TIMEOUT_S = 1
# A step that ran out its budget having had at least this share of it as CPU time needs more than
# the budget; below it, the process was starved (load) and the check is retried.
_CPU_FULL = 0.8
# The retry's wall-clock budgets and hard deadline, as a multiple of the normal ones.
_RETRY_FACTOR = 3
# What a worker returns for an expired step: (EXPIRED, step, CPU seconds of that step).
EXPIRED = "__expired__"


def wrap_latex(s: str) -> str:
    """The form both sides are handed to `math_verify.parse` in. A gold that holds a box is
    handed over as it is, so math-verify reads the box the way it always does."""
    s = s.strip()
    return s if s.startswith("$") or "\\boxed" in s else f"${s}$"


def plain_math_verify(gold: str, answer: str) -> bool:
    """One plain math-verify call: the reference our verifier must agree with."""
    from math_verify import parse, verify

    return bool(verify(parse(wrap_latex(gold), parsing_timeout=_PARSE_TIMEOUT_S),
                       parse(wrap_latex(answer), parsing_timeout=_PARSE_TIMEOUT_S),
                       timeout_seconds=_VERIFY_TIMEOUT_S))


def split_gold(gold: str) -> list[str]:
    """The answers of a gold with several (`1, 2`, `\\{1, 2\\}`, OlympiadBench's multi-answer
    `final_answer`): split at top-level commas. A comma inside brackets (a point, an interval) does
    not split, nor does a thousands separator (a digit, then exactly three digits)."""
    g = gold.strip().strip("$").strip()
    if g.startswith("\\{") and g.endswith("\\}"):
        g = g[2:-2]
    elif g.startswith("{") and g.endswith("}"):
        g = g[1:-1]
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(g):
        ch = g[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            thousands = (i > 0 and g[i - 1].isdigit() and _THOUSANDS.match(g, i + 1) is not None)
            if not thousands:
                parts.append(g[start:i].strip())
                start = i + 1
        i += 1
    parts.append(g[start:].strip())
    parts = [p for p in parts if p]
    return parts if len(parts) > 1 else [gold.strip()]


_THOUSANDS = re.compile(r"\d{3}(?!\d)")


def answer_units(gold: str, answers: Sequence[str]) -> list[str]:
    """What is checked against the gold, one math-verify call per unit (see `MathVerifier`)."""
    if len(answers) > 1 and len(split_gold(gold)) > 1:
        return [", ".join(answers)]
    return list(answers)


_GOLD_CACHE: dict[str, Any] = {}
_INTEGER = re.compile(r"-?\d{1,18}")


# A plain number, optionally in scientific form: 2.88, 2.88 \times 10^{-19}, 10^{-5}.
_SCI = re.compile(r"(?:(-?\d+(?:\.\d+)?)\s*(?:\\times|\\cdot)\s*)?(?:(-?\d+(?:\.\d+)?)$|10\s*\^\s*\{?\s*(-?\d{1,4})\s*\}?$)")
# math-verify rounds numbers to 6 decimal places before comparing, so below this magnitude a
# number 10x off compares equal (2.88e-19 == 2.88e-18). Such pairs are decided here instead.
_SMALL = Decimal("1e-3")


def _sci_number(s: str) -> Decimal | None:
    m = _SCI.fullmatch(s.strip())
    if not m:
        return None
    mant, plain, exp = m.groups()
    if plain is not None:
        return Decimal(plain) if mant is None else None
    return Decimal(mant or "1") * (Decimal(10) ** int(exp))


def rel_tol_verdict(gold: str, answer: str, rel_tol: float) -> bool | None:
    """Two plain numbers (decimal or `m \\times 10^{k}`): |a - g| <= rel_tol * |g|; None otherwise
    (a problem's `meta["rel_tol"]`, Minerva's 1e-4)."""
    x, y = _sci_number(gold), _sci_number(answer)
    if x is None or y is None:
        return None
    return abs(x - y) <= Decimal(str(rel_tol)) * abs(x)


def fast_verdict(gold: str, answer: str) -> bool | None:
    """Decided without math-verify (None means "ask math-verify"):
    - integer vs integer: equality (what math-verify concludes too);
    - two plain numbers (decimal or `m \\times 10^{k}`) of which one is below 1e-3 in magnitude:
      equal to 6 significant digits. math-verify rounds to 6 decimal places, which makes every
      number below 5e-7 equal to every other (a 10x-off answer to a Minerva gold was correct)."""
    g, a = gold.strip(), answer.strip()
    if _INTEGER.fullmatch(g) and _INTEGER.fullmatch(a):
        return int(g) == int(a)
    if "10" in g or "." in g:
        x, y = _sci_number(g), _sci_number(a)
        if x is not None and y is not None and (0 < abs(x) < _SMALL or 0 < abs(y) < _SMALL):
            return abs(x - y) <= Decimal("5e-7") * max(abs(x), abs(y))
    return None


def _worker_init() -> None:
    import logging

    import math_verify  # noqa: F401  (sympy and antlr load here, before any deadline)

    # Timeouts are reported through our verdicts; math-verify's own warnings would flood the log.
    logging.getLogger("math_verify").setLevel(logging.ERROR)

    plain_math_verify("1", "1")  # warm the parser


_cpu_budget_spent = False


def _on_sigprof(signum: int, frame: Any) -> None:
    # math-verify's own timeout exception, so math-verify handles it exactly as its alarm: the
    # parse returns [], the one comparison in flight returns False and the next one still runs.
    from math_verify.errors import TimeoutException

    global _cpu_budget_spent
    _cpu_budget_spent = True
    raise TimeoutException("CPU budget spent")


def _timed(step: Callable[[], Any], wall_s: int, cpu_cap_s: float | None) -> tuple[Any, bool, float]:
    """(result, expired, CPU seconds) of one math-verify step that sets math-verify's wall-clock
    alarm to `wall_s`.

    math-verify says nothing when its alarm fires: it returns [] or False. So a falsy result after
    the whole wall-clock budget is an expiry. With `cpu_cap_s`, a SIGPROF timer also interrupts
    the step once it has used that much CPU time, and a falsy result after that is an expiry too."""
    from math_verify.errors import TimeoutException

    global _cpu_budget_spent
    _cpu_budget_spent = False
    t0, c0 = time.monotonic(), time.process_time()
    if cpu_cap_s is None:
        out = step()
    else:
        old = signal.signal(signal.SIGPROF, _on_sigprof)
        signal.setitimer(signal.ITIMER_PROF, cpu_cap_s)
        try:
            out = step()
        except TimeoutException:  # fired outside math-verify's handlers (in its clean-up)
            out = None
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, old)
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    return out, (not out and (_cpu_budget_spent or wall >= wall_s - 0.01)), cpu


def _worker_check(arg: tuple) -> tuple:
    """Runs in a worker process: ("ok", verdict) or (EXPIRED, step, CPU seconds of that step).
    Gold answers are parsed once per worker and reused; an expired gold parse is not kept.

    `arg` is (gold, answer), or (gold, answer, True) for a retry: math-verify's wall-clock budgets
    stretched `_RETRY_FACTOR` times, each step held to the normal budget of CPU time instead."""
    from math_verify import parse, verify

    gold, answer = arg[0], arg[1]
    retry = len(arg) > 2 and bool(arg[2])
    parse_s = _PARSE_TIMEOUT_S * (_RETRY_FACTOR if retry else 1)
    verify_s = _VERIFY_TIMEOUT_S * (_RETRY_FACTOR if retry else 1)
    g = _GOLD_CACHE.get(gold)
    if g is None:
        g, expired, cpu = _timed(lambda: parse(wrap_latex(gold), parsing_timeout=parse_s),
                                 parse_s, _PARSE_TIMEOUT_S if retry else None)
        if expired:
            return (EXPIRED, "parse gold", cpu)
        if len(_GOLD_CACHE) > 10000:
            _GOLD_CACHE.clear()
        _GOLD_CACHE[gold] = g
    a, expired, cpu = _timed(lambda: parse(wrap_latex(answer), parsing_timeout=parse_s),
                             parse_s, _PARSE_TIMEOUT_S if retry else None)
    if expired:
        return (EXPIRED, "parse answer", cpu)
    ok, expired, cpu = _timed(lambda: verify(g, a, timeout_seconds=verify_s),
                              verify_s, _VERIFY_TIMEOUT_S if retry else None)
    if expired:
        return (EXPIRED, "verify", cpu)
    return ("ok", bool(ok))


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
                                 init=_worker_init)
        self._cache: OrderedDict[tuple[str, str], tuple[bool, str]] = OrderedDict()
        self._cache_size = cache_size
        self.calls = 0  # math-verify calls actually made (for benchmarks and tests)
        self.retries = 0  # of which retries after an expiry on a starved worker

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        return self.score_many([(problem, completions)])[0]

    def score_many(self, items: Sequence[tuple[Problem, Sequence[str]]],
                   cut_off: Sequence[Sequence[bool]] | None = None) -> list[list[Verdict]]:
        """`cut_off[i][j]`: completion j of item i stopped at max_new_tokens (None: none did)."""
        extracted = [[extract(c, self.extraction, bool(cut_off and cut_off[i][j]))
                      for j, c in enumerate(comps)] for i, (_, comps) in enumerate(items)]
        # Each completion's answers become the units that are checked against the gold: one unit
        # per distinct answer against a one-answer gold (several are a hedge unless all are right),
        # or all answers joined into one list against a gold with several answers.
        golds = [normalize_answer(problem.answer) for problem, _ in items]
        units_of = [[answer_units(gold, ex.answers) for ex in row]
                    for gold, row in zip(golds, extracted)]
        # Distinct (gold, answer) pairs that still need a math-verify call.
        todo: list[tuple[str, str]] = []
        decided: dict[tuple[str, str], tuple[bool, str]] = {}
        # Verdicts under a problem's own relative tolerance: never cached (another problem with the
        # same gold may have none), keyed by (gold, answer, tolerance).
        tols = [(problem.meta or {}).get("rel_tol") for problem, _ in items]
        tolerant: dict[tuple[str, str, float], tuple[bool, str]] = {}
        for gold, row, tol in zip(golds, units_of, tols):
            for units in row:
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
                    fast = fast_verdict(gold, a) if hit is None else None
                    if hit is not None:
                        decided[key] = hit
                    elif fast is not None:
                        decided[key] = (fast, "correct" if fast else "wrong")
                    else:
                        decided[key] = (False, "pending")
                        todo.append(key)
        for key, (verdict, final) in zip(todo, self._check_all(todo)):
            decided[key] = verdict
            if final:
                self._put(key, verdict)
        out: list[list[Verdict]] = []
        for gold, row, units_row, tol in zip(golds, extracted, units_of, tols):
            mine = {k[:2]: v for k, v in tolerant.items() if k[0] == gold and k[2] == tol} \
                if tol else {}
            out.append([self._verdict(gold, ex, units, {**decided, **mine})
                        for ex, units in zip(row, units_row)])
        return out

    def _check_all(self, todo: list[tuple[str, str]]) -> list[tuple[tuple[bool, str], bool]]:
        """((correct, outcome), final) per (gold, answer). Not final (kept out of the cache): a
        `timeout`, and an `error` from a worker that died (the next try may well succeed)."""
        # One group per gold: a worker parses each gold once.
        results = self.pool.map(todo, groups=[g for g, _ in todo])
        killed = self.pool.killed_cpu_s
        self.calls += len(todo)
        out: list[tuple[tuple[bool, str], bool] | None] = [None] * len(todo)
        retry: list[int] = []
        for i, res in enumerate(results):
            if res == TIMEOUT:
                cpu = killed.get(i)
                starved = cpu is None or cpu < _CPU_FULL * self.pool.deadline_s
            elif isinstance(res, tuple) and res and res[0] == EXPIRED:
                starved = res[2] < _CPU_FULL * _PARSE_TIMEOUT_S
            else:
                out[i] = _interpret(res)
                continue
            if starved:
                retry.append(i)
            else:  # it needs more than the budget, loaded machine or not
                out[i] = ((False, "timeout"), False)
        if retry:
            again = self.pool.map([(*todo[i], True) for i in retry],
                                  deadline_s=self.pool.deadline_s * _RETRY_FACTOR,
                                  groups=[todo[i][0] for i in retry])
            self.calls += len(retry)
            self.retries += len(retry)
            for i, res in zip(retry, again):
                out[i] = _interpret(res)
        return out  # type: ignore[return-value]

    def _verdict(self, gold: str, ex: Extraction, units: list[str],
                 decided: dict[tuple[str, str], tuple[bool, str]]) -> Verdict:
        info: dict[str, Any] = {"answer_from": ex.source}
        if ex.has_box:
            info["boxed"] = True
        if not units:
            return Verdict(False, None, "truncated" if ex.source == "truncated" else "no_answer",
                           info=info)
        shown = ", ".join(units)
        if any(len(a) > self.max_answer_chars for a in units):
            return Verdict(False, shown[:200] + "...", "too_long", info=info)
        res = [decided[(gold, a)] for a in units]
        if all(ok for ok, _ in res):
            return Verdict(True, shown, "correct", info=info)
        if any(ok for ok, _ in res):
            # Several different answers, one of them right: a hedge earns no credit.
            return Verdict(False, shown, "hedge", info=info)
        special = next((o for _, o in res if o != "wrong"), "wrong")
        return Verdict(False, shown, special, info=info)

    def _put(self, key: tuple[str, str], verdict: tuple[bool, str]) -> None:
        self._cache[key] = verdict
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def close(self) -> None:
        self.pool.close()


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
