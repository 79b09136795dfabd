"""Verification benchmark on the shared harness (issue 36, items 1 and 4): BoundLab's math verifier
against the honest baselines, on answers written as models write them.

**The corpus.** No real model completions ship with BoundLab (the stored SmolLM2 results under docs/
are per-problem counts, not texts), so the completions are *built*, from the shipped MATH500 golds
(`boundlab.tasks`, 500 problems): a sample of problems stratified by the gold's shape (integer,
fraction, radical, tuple, interval, equation, matrix, text, other: MATH500's own proportions, every
shape at least once), and for each, n completions whose answers are written the way models write
them:
- right answers in the forms models use (the gold; `\\dfrac` for `\\frac`; `a/b`; the decimal of
  a terminating fraction; `\\left( ... \\right)`; spacing changed; `^\\circ` dropped or added; a
  column vector as a `bmatrix`; `x = ` before a one-answer gold),
- wrong answers near the gold (a digit off by one, the sign flipped, a fraction upside down, a
  tuple's order swapped, an interval's bracket changed, other problems' golds), most of them
  repeated, and a tail of one-off answers (a random digit changed),
- a few completions with no final answer (cut off in the working),
each inside some working (a few sentences with numbers of their own, so no two texts are alike:
neither side can cache whole texts), then the answer **boxed** (`\\boxed{...}` in the last line)
or in **prose** ("Therefore, the answer is $...$.", "Final Answer: The final answer is $...$",
...; read by math-verify's own extraction patterns over the end of the text).
Three mixes, by the share of right answers and how much the wrong ones scatter: **trained** (most
right, wrong answers concentrated), **mixed**, **weak** (mostly wrong, scattered). The measured
share correct is in the JSON (`correct_fraction_<format>_<mix>`).

**The arms**, interleaved and order-rotated by `bench/harness.py` for each (format, mix), each
on the same completions:
- `plain`: BoundLab's extraction (`extract_math_answer`), then one plain math-verify call per
  completion (`verify(parse(gold), parse(answer))`, `plain_math_verify`), math-verify's own parse
  cache emptied first. The baseline for "one call per answer".
- `memo`: the same, with a dict keyed by (gold, answer): one math-verify call per distinct pair.
  The honest baseline: anyone would add this memo.
- `ours`: a fresh `MathVerifier` (new verdict cache, new gold profiles, fresh workers forked from
  its fork server): `score_many` on all the problems at once. Its workers' start-up is timed apart
  (`ours_*/startup_seconds`; the fork server itself starts once per process, timed once before the
  repetitions: `verify_worker_startup_first_seconds`).
All three use the same extraction, so their verdicts must be identical (`verdict_disagreements`,
listed under "disagreements" when there are any). Every baseline repetition runs in its own
process forked from the verifier's fork server, so it starts exactly as warm as a fresh worker of
ours (math-verify imported, `WARMUP_SHAPES` parsed, no parse or sympy cache from an earlier
repetition: in one long-lived process the second repetition of a baseline would find every
expression of the corpus in sympy's cache), from an empty garbage collector; that process's start
is not timed.

Figures: `verify_x_plain_<format>_<mix>` = plain seconds / ours seconds, `verify_x_memo_<...>` =
memo seconds / ours seconds, paired per repetition; `verify_extract_seconds_<...>`: the extraction
alone over the corpus (timed inside the plain arm) and `verify_extract_share_<...>` its share of
ours' wall time; the profile of ours: parent CPU (extraction, fast paths, IPC), workers' CPU
(math-verify calls), and `mv_floor_cpu_seconds` (the calls ours made, run one after another in
one fresh process: their cost without the pool), with those calls by gold shape and the costliest;
`verify_x_<plain|memo>_cpu_bound_<...>`: a baseline's CPU seconds over that floor, the most ours can
gain in CPU while it makes those calls.

    python bench/bench_verify.py --quick          # 24 problems x 64 answers, 3 reps, a few minutes
    python bench/bench_verify.py --quick --write  # and docs/bench/verify.json
    python bench/bench_verify.py --problems 100 --n 256 --reps 3 --write
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from math_verify.parser import parse_latex_cached

import boundlab.builtins  # noqa: F401 - the task and verifier registries
from boundlab.tasks import build_task
from boundlab.tasks.base import Problem
from boundlab.verify.extract import extract_math_answer
from boundlab.verify.math import MathVerifier
from boundlab.verify.math_worker import plain_math_verify
from boundlab.verify.pool import _context, _cpu_seconds

import harness  # bench/harness.py: this script's own folder is on sys.path when it runs

FORMATS = ("boxed", "prose")
# accuracy: mean share of right answers (per problem, drawn from a Beta with this mean and
# concentration 2: some problems always solved, some never); wrong_zipf: how concentrated the
# repeated wrong answers are; one_off: share of wrong answers that are one-offs; no_answer: share
# of completions cut off before any final answer.
MIXES = {
    "trained": {"accuracy": 0.75, "wrong_zipf": 1.8, "one_off": 0.05, "no_answer": 0.02},
    "mixed": {"accuracy": 0.45, "wrong_zipf": 1.3, "one_off": 0.15, "no_answer": 0.04},
    "weak": {"accuracy": 0.12, "wrong_zipf": 1.0, "one_off": 0.35, "no_answer": 0.06},
}
# math-verify's expiry is silent (an expired parse reads as a wrong answer): the baselines get a
# generous budget so a load spike cannot turn into a disagreement; it costs nothing unless it expires.
PLAIN_BUDGET_S = 20

_INT = re.compile(r"-?\d+")
_FRAC = re.compile(r"(-?)\\[dt]?frac\{(-?\d+)\}\{(\d+)\}")


def shape(gold: str) -> str:
    g = re.sub(r"\\left|\\right|\\!|\\,|\s", "", gold)
    if _INT.fullmatch(g):
        return "integer"
    if re.fullmatch(r"-?\d+\.\d+", g):
        return "decimal"
    if _FRAC.fullmatch(g) or re.fullmatch(r"-?\d+/\d+", g):
        return "fraction"
    if "matrix" in g:
        return "matrix"
    if "\\text" in g or "\\mbox" in g or re.fullmatch(r"\(?[A-E]\)?", g):
        return "text"
    if re.search(r"=|<|>|\\[lg]e(?![a-z])|\\in(?![a-z])", g):
        return "equation"
    if "\\cup" in g or "\\infty" in g or re.fullmatch(r"[\[(][^\[\]()]*,[^\[\]()]*[\])]", g) and g[0] + g[-1] != "()":
        return "interval"
    if g.startswith("(") and g.endswith(")") and "," in g:
        return "tuple"
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+", g):
        return "integer"
    if "," in g:
        return "list"
    if "\\sqrt" in g or "\\pi" in g:
        return "radical"
    return "other"


def select_problems(problems: Sequence[Problem], count: int, seed: int = 0) -> list[Problem]:
    """`count` problems, stratified by the gold's shape in MATH500's own proportions (largest
    remainder), every shape at least once."""
    rng = random.Random(seed)
    by: dict[str, list[Problem]] = {}
    for p in problems:
        by.setdefault(shape(p.answer), []).append(p)
    for ps in by.values():
        rng.shuffle(ps)
    if count >= len(problems):
        return list(problems)
    quota = {s: max(1, math.floor(count * len(ps) / len(problems))) for s, ps in by.items()}
    rest = sorted(by, key=lambda s: -(count * len(by[s]) / len(problems) - quota[s]))
    i = 0
    while sum(quota.values()) < count:
        s = rest[i % len(rest)]
        if quota[s] < len(by[s]):
            quota[s] += 1
        i += 1
    while sum(quota.values()) > count:  # the at-least-one rule overshot: trim the largest
        quota[max(quota, key=quota.get)] -= 1
    out = [p for s in sorted(by) for p in by[s][:quota[s]]]
    rng.shuffle(out)
    return out


def _digit_mutations(gold: str) -> list[str]:
    out = []
    for m in re.finditer(r"\d", gold):
        d = int(m.group())
        for nd in ((d + 1) % 10, (d - 1) % 10):
            s = gold[:m.start()] + str(nd) + gold[m.end():]
            if s != gold and not re.search(r"(?<!\d)0\d", s):
                out.append(s)
    return out


def right_forms(gold: str) -> list[str]:
    """Ways a model writes the gold, the gold itself first (the most common)."""
    g = gold.strip()
    forms = [g]
    if "\\frac" in g:
        forms.append(g.replace("\\frac", "\\dfrac"))
    m = _FRAC.fullmatch(g.replace(" ", ""))
    if m:
        sign, a, b = m.group(1), int(m.group(2)), int(m.group(3))
        forms.append(f"{sign}{a}/{b}")
        q = b
        for p in (2, 5):
            while q % p == 0:
                q //= p
        if q == 1 and b:
            forms.append(f"{sign}{a / b:g}")
    if "," in g and ", " not in g:
        forms.append(g.replace(",", ", "))
    if " " in g:
        forms.append(g.replace(" ", ""))
    if shape(g) == "tuple" and not g.startswith("\\left"):
        forms.append(f"\\left({g[1:-1]}\\right)")
    if "^\\circ" in g:
        forms.append(g.replace("^\\circ", ""))
    elif _INT.fullmatch(g):
        forms.append(f"{g}.0")
    if "pmatrix" in g:
        forms.append(g.replace("pmatrix", "bmatrix"))
    if shape(g) in ("integer", "fraction", "radical"):
        forms.append(f"x = {g}")
    return list(dict.fromkeys(forms))


def wrong_forms(gold: str, others: Sequence[str]) -> list[str]:
    """Wrong answers a model repeats for this gold, most common first."""
    g = gold.strip()
    out = []
    m = _FRAC.fullmatch(g.replace(" ", ""))
    if m:
        out.append(f"{m.group(1)}\\frac{{{m.group(3)}}}{{{m.group(2)}}}")
    if shape(g) == "tuple" and g.count(",") == 1:
        a, b = g[1:-1].split(",")
        out.append(f"({b.strip()}, {a.strip()})")
    if shape(g) == "interval" and g[0] in "([" and g[-1] in ")]":
        out.append({"(": "[", "[": "("}[g[0]] + g[1:])
    digits = _digit_mutations(g)
    out += digits[:4]
    if shape(g) in ("integer", "decimal", "fraction", "radical", "other"):
        out.append(g[1:] if g.startswith("-") else f"-{g}")
    out += digits[4:8]
    out += [o for o in others if o != g][:6]
    out += ["0", "1", "2"]
    return [w for w in dict.fromkeys(out) if w != g]


def one_off(gold: str, rng: random.Random) -> str:
    """A wrong answer nobody else gives: one digit of the gold changed at random (or a random
    number for a gold without digits)."""
    spots = [m.start() for m in re.finditer(r"\d", gold)]
    if not spots:
        return str(rng.randint(10, 10**4))
    i = rng.choice(spots)
    s = gold[:i] + str(rng.randint(0, 9)) + str(rng.randint(0, 99)) + gold[i + 1:]
    return s if s != gold else s + "1"


_SENTENCES = (
    "First, we note that ${a} + {b} = {c}$, so the sum simplifies.",
    "Substituting $x = {a}$ gives $2x + {b} = {d}$.",
    "We can factor this as $(x - {a})(x + {b}) = 0$.",
    "Multiplying both sides by ${b}$, we get ${e} = {b} \\cdot {a}$... wait, let me recompute that.",
    "The area of the triangle is $\\frac{{1}}{{2}} \\cdot {a} \\cdot {b} = {f}$.",
    "Since ${a}^2 = {g}$, we have $\\sqrt{{{g}}} = {a}$.",
    "Now, there are ${c}$ ways to choose the first element and ${b}$ ways for the second.",
    "Let's check the boundary case where $n = {a}$: it satisfies the condition.",
    "By the Pythagorean theorem, $a^2 + b^2 = c^2$, so $c^2 = {g} + {h}$.",
    "Dividing, we find that the ratio is ${a}:{b}$.",
)
_BOXED_END = (
    "Therefore, the final answer is $\\boxed{{{ans}}}$.",
    "So the answer is $\\boxed{{{ans}}}$.",
    "\\[\n\\boxed{{{ans}}}\n\\]",
    "Thus, we get $\\boxed{{{ans}}}$. I hope it is correct.",
)
_PROSE_END = (
    "Therefore, the answer is ${ans}$.",
    "So the final answer is ${ans}$.",
    "Final Answer: The final answer is ${ans}$. I hope it is correct.",
    "The answer is: ${ans}$",
)


def _working(rng: random.Random) -> str:
    a, b = rng.randint(2, 40), rng.randint(2, 40)
    vals = {"a": a, "b": b, "c": a + b, "d": 2 * a + b, "e": a * b, "f": a * b / 2, "g": a * a,
            "h": b * b}
    k = rng.randint(4, 9)
    return " ".join(rng.choice(_SENTENCES).format(**vals) for _ in range(k))


def completion(answer: str | None, fmt: str, rng: random.Random) -> str:
    """A completion: some working, then the answer boxed or in prose; None: cut off mid-working."""
    head = f"Let's solve this step by step.\n\n{_working(rng)}\n\n{_working(rng)}"
    if answer is None:
        return head + " Next, we"
    end = rng.choice(_BOXED_END if fmt == "boxed" else _PROSE_END).format(ans=answer)
    return f"{head}\n\n{end}"


def _zipf(k: int, s: float) -> list[float]:
    return [1.0 / (i + 1) ** s for i in range(k)]


def build_corpus(problems: Sequence[Problem], n: int, mix: str, fmt: str, seed: int = 0
                 ) -> list[tuple[Problem, list[str]]]:
    """n completions per problem in this mix and format. The answers drawn depend on (seed, mix)
    only: both formats of a mix hold the same answers."""
    spec = MIXES[mix]
    golds = [p.answer for p in problems]
    ans_rng = random.Random(f"{seed}-{mix}")
    txt_rng = random.Random(f"{seed}-{mix}-{fmt}")
    conc = 2.0
    out = []
    for i, p in enumerate(problems):
        acc = ans_rng.betavariate(spec["accuracy"] * conc, (1 - spec["accuracy"]) * conc)
        right = right_forms(p.answer)
        others = [golds[(i + j) % len(golds)] for j in (1, 2, 3)]
        wrong = wrong_forms(p.answer, others)
        rw, ww = _zipf(len(right), 2.0), _zipf(len(wrong), spec["wrong_zipf"])
        comps = []
        for _ in range(n):
            u = ans_rng.random()
            if u < spec["no_answer"]:
                a = None
            elif ans_rng.random() < acc:
                a = ans_rng.choices(right, rw)[0]
            elif ans_rng.random() < spec["one_off"]:
                a = one_off(p.answer, ans_rng)
            else:
                a = ans_rng.choices(wrong, ww)[0]
            comps.append(completion(a, fmt, txt_rng))
        out.append((p, comps))
    return out


def _clean() -> None:
    """Each timing starts from an empty parse cache and an empty collector (a full collection walks
    every sympy object the process holds; whose window it lands in would otherwise be chance)."""
    parse_latex_cached.cache_clear()
    gc.collect()


# The math verifier's fork server preloads this; the baselines and the floor run in processes
# forked from the same server, so every side starts exactly as warm as a fresh worker of ours.
_PRELOAD = ("boundlab.verify.math_preload",)


def _child_main(conn, fn: Callable, args: tuple) -> None:
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        conn.send(("error", f"{type(e).__name__}: {e}"))
    conn.close()


def in_fresh_process(fn: Callable, *args: Any) -> Any:
    """fn(*args) in a process forked from the verifier's fork server (math-verify imported,
    `WARMUP_SHAPES` parsed, nothing else): no parse, sympy cache or ANTLR table carries over from
    one repetition to the next, as none does for ours' fresh workers. Its start is not timed."""
    ctx = _context(_PRELOAD)
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_child_main, args=(there, fn, args))
    proc.start()
    there.close()
    try:
        status, res = here.recv()
    finally:
        proc.join()
    if status != "ok":
        raise RuntimeError(f"{fn.__name__} failed in its process: {res}")
    return res


def run_baseline(golds: list[str], texts: list[list[str]], memo: bool) -> tuple[dict, list]:
    """The plain side, in a fresh process: extraction, then one math-verify call per completion
    (`memo`: per distinct (gold, answer) pair). Figures and verdicts."""
    _clean()
    c0, t0 = time.process_time(), time.perf_counter()
    answers = [[extract_math_answer(c) or "" for c in comps] for comps in texts]
    t1 = time.perf_counter()
    seen: dict[tuple[str, str], bool] = {}
    calls = 0
    out = []
    for gold, row in zip(golds, answers):
        got = []
        for a in row:
            if memo:
                key = (gold, a)
                v = seen.get(key)
                if v is None:
                    v = seen[key] = plain_math_verify(gold, a, PLAIN_BUDGET_S)
                    calls += 1
            else:
                v = plain_math_verify(gold, a, PLAIN_BUDGET_S)
                calls += 1
            got.append(v)
        out.append(got)
    t2 = time.perf_counter()
    return ({"seconds": t2 - t0, "extract_seconds": t1 - t0, "math_verify_seconds": t2 - t1,
             "cpu_seconds": time.process_time() - c0, "math_verify_calls": calls}, out)


def plain_arm(items, verdicts: list, memo: bool) -> Callable[[], dict]:
    golds = [p.answer for p, _ in items]
    texts = [list(c) for _, c in items]

    def go() -> dict[str, float]:
        figs, out = in_fresh_process(run_baseline, golds, texts, memo)
        verdicts.append(out)
        return figs
    return go


def ours_arm(items, verdicts: list, workers: int, floor: bool, profile: dict) -> Callable[[], dict]:
    """`profile` gets, per repetition, ours' math-verify calls by the gold's shape (see
    math_verify_floor) and the 10 most expensive."""
    def go() -> dict[str, float]:
        _clean()
        t0 = time.perf_counter()
        v = MathVerifier(workers=workers)
        v.pool.start(wait_ready=True)
        v.pool.map([("1", "1")] * workers)  # every worker up and answering
        startup = time.perf_counter() - t0
        v.calls = 0
        sent: list[tuple] = []
        pool_map = v.pool.map

        def recording_map(args, *a, **kw):
            args = list(args)
            sent.extend(x for x in args if len(x) == 2)
            return pool_map(args, *a, **kw)

        v.pool.map = recording_map
        pids = [w.proc.pid for w in v.pool._workers]
        w0 = sum(_cpu_seconds(pid) or 0.0 for pid in pids)
        gc.collect()
        c0, t1 = time.process_time(), time.perf_counter()
        res = v.score_many(items)
        secs = time.perf_counter() - t1
        parent = time.process_time() - c0
        wcpu = sum(_cpu_seconds(pid) or 0.0 for pid in pids) - w0
        replaced = [w.proc.pid for w in v.pool._workers] != pids
        v.close()
        verdicts.append([[x.correct for x in row] for row in res])
        figs = {"seconds": secs, "startup_seconds": startup, "parent_cpu_seconds": parent,
                "workers_cpu_seconds": wcpu, "cpu_seconds": parent + wcpu,
                "math_verify_calls": v.calls, "retries": v.retries, "workers_replaced": float(replaced)}
        if floor:
            figs["mv_floor_cpu_seconds"], by, top = in_fresh_process(math_verify_floor, sent)
            profile["costliest_calls_last_rep"] = top
            profile.setdefault("calls_by_gold_shape", []).append(
                {k: [n, round(c, 4)] for k, (n, c) in sorted(by.items(), key=lambda x: -x[1][1])})
        return figs
    return go


def math_verify_floor(calls: list[tuple]) -> tuple[float, dict, list]:
    """CPU seconds of the math-verify calls ours made (pairs and gold profiles, as its workers got
    them), run one after another in one fresh process (`in_fresh_process`): what they cost without
    the pool (no IPC, no batching, one core). Also {gold shape: [calls, CPU seconds]} and the 10
    costliest calls."""
    from boundlab.verify.math_worker import _PARSED, _worker_check

    _PARSED.clear()
    _clean()
    total = 0.0
    by: dict[str, list] = {}
    top: list = []
    for arg in calls:
        c = time.process_time()
        _worker_check(arg)
        d = time.process_time() - c
        total += d
        k = shape(arg[0]) + (" (gold profile)" if arg[1] is None else "")
        row = by.setdefault(k, [0, 0.0])
        row[0] += 1
        row[1] += d
        top.append([round(d, 4), arg[0], arg[1]])
    top.sort(key=lambda r: -r[0])
    return total, by, top[:10]


def bench(problems: Sequence[Problem], n: int, reps: int, workers: int = 2,
          formats: Sequence[str] = FORMATS, mixes: Sequence[str] = tuple(MIXES), floor: bool = True,
          log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every (format, mix) through the harness; one result in the harness's shape."""
    # The fork server starts once per process: its cost, apart from every pool's start-up.
    t = time.perf_counter()
    first = MathVerifier(workers=workers)
    first.pool.start(wait_ready=True)
    first.pool.map([("1", "1")] * workers)
    first_startup = time.perf_counter() - t
    first.close()

    figures: dict[str, dict[str, float]] = {
        "verify_worker_startup_first_seconds": harness.spread([first_startup])}
    orders: dict[str, Any] = {}
    runs: list[dict[str, Any]] = []
    corpus: dict[str, Any] = {}
    disagreements: list[dict[str, Any]] = []
    total_disagree = total_checked = 0
    for fmt in formats:
        for mix in mixes:
            tag = f"{fmt}_{mix}"
            items = build_corpus(problems, n, mix, fmt)
            got: dict[str, list] = {"plain": [], "memo": [], "ours": []}
            profile: dict[str, Any] = {}
            arms = {f"plain_{tag}": plain_arm(items, got["plain"], memo=False),
                    f"memo_{tag}": plain_arm(items, got["memo"], memo=True),
                    f"ours_{tag}": ours_arm(items, got["ours"], workers, floor, profile)}
            res = harness.run(arms, reps=reps, log=log,
                              ratios=[(f"plain_{tag}", f"ours_{tag}", "seconds"),
                                      (f"memo_{tag}", f"ours_{tag}", "seconds"),
                                      (f"plain_{tag}", f"ours_{tag}", "cpu_seconds"),
                                      (f"memo_{tag}", f"ours_{tag}", "cpu_seconds")])
            f = res["figures"]
            figures.update(f)
            figures[f"verify_x_plain_{tag}"] = f[f"plain_{tag}_over_ours_{tag}/seconds"]
            figures[f"verify_x_memo_{tag}"] = f[f"memo_{tag}_over_ours_{tag}/seconds"]
            figures[f"verify_x_plain_cpu_{tag}"] = f[f"plain_{tag}_over_ours_{tag}/cpu_seconds"]
            figures[f"verify_x_memo_cpu_{tag}"] = f[f"memo_{tag}_over_ours_{tag}/cpu_seconds"]
            figures[f"verify_extract_seconds_{tag}"] = f[f"plain_{tag}/extract_seconds"]
            per_rep = [r["figures"] for r in res["runs"]]
            ext = [r["extract_seconds"] for r, x in zip(per_rep, res["runs"]) if x["arm"] == f"plain_{tag}"]
            ours_s = [r["seconds"] for r, x in zip(per_rep, res["runs"]) if x["arm"] == f"ours_{tag}"]
            figures[f"verify_extract_share_{tag}"] = harness.spread([e / o for e, o in zip(ext, ours_s)])
            if floor:
                # The most ours can gain while it makes the calls it makes: a baseline's CPU over
                # those calls' own CPU in one fresh process (paired per repetition).
                of = {x["arm"].split("_", 1)[0] + str(x["rep"]): r for r, x in zip(per_rep, res["runs"])}
                for base in ("plain", "memo"):
                    figures[f"verify_x_{base}_cpu_bound_{tag}"] = harness.spread(
                        [of[f"{base}{r}"]["cpu_seconds"] / of[f"ours{r}"]["mv_floor_cpu_seconds"]
                         for r in range(reps)])
            # Verdicts: every repetition of every arm against the first plain repetition.
            ref = got["plain"][0]
            answers = [[extract_math_answer(c) or "" for c in comps] for _, comps in items]
            bad = 0
            for arm, reps_v in got.items():
                for r, vs in enumerate(reps_v):
                    for i, (row, rrow) in enumerate(zip(vs, ref)):
                        for j, (a, b) in enumerate(zip(row, rrow)):
                            if a != b:
                                bad += 1
                                if len(disagreements) < 50:
                                    disagreements.append({"format": fmt, "mix": mix, "arm": arm, "rep": r,
                                                          "gold": items[i][0].answer, "answer": answers[i][j],
                                                          "plain": b, "this": a})
            checked = sum(len(vs) * sum(len(r) for r in ref) for vs in got.values())
            total_disagree += bad
            total_checked += checked
            figures[f"verdict_disagreements_{tag}"] = harness.spread([bad])
            total = sum(len(c) for _, c in items)
            distinct = sum(len(set(row)) for row in answers)
            correct = sum(map(sum, ref))
            corpus[tag] = {"completions": total, "problems": len(items), "per_problem": n,
                           "distinct_answers": distinct, "correct": correct,
                           "correct_fraction": round(correct / total, 4),
                           "no_answer": sum(a == "" for row in answers for a in row),
                           "verdicts_checked": checked, "verdict_disagreements": bad, **profile}
            figures[f"correct_fraction_{tag}"] = harness.spread([correct / total])
            orders[tag] = res["order"]
            runs += [{**r, "format": fmt, "mix": mix} for r in res["runs"]]
    loads = [x for r in runs for x in (r["load_before"][0], r["load_after"][0])]
    shapes: dict[str, int] = {}
    for p in problems:
        shapes[shape(p.answer)] = shapes.get(shape(p.answer), 0) + 1
    return {"figures": figures, "order": orders, "runs": runs,
            "load": {**harness.spread(loads), "unit": "1-minute load average, before and after each arm"},
            "verdicts": {"checked": total_checked, "disagreements": total_disagree,
                         "identical": total_disagree == 0, "listed": disagreements},
            "corpus": {"what": CORPUS_NOTE, "problems": len(problems), "per_problem": n,
                       "gold_shapes": dict(sorted(shapes.items())), "mixes": MIXES, "by_format_mix": corpus}}


CORPUS_NOTE = ("Synthetic completions, not model samples: no real model completions ship with "
               "BoundLab. Golds from the shipped MATH500 (a sample stratified by gold shape); each "
               "completion is a few sentences of working with numbers of its own, then an answer "
               "boxed or stated in prose, written as models write them (equivalent forms of the "
               "gold; near-miss wrong answers repeated; one-offs; a few cut off with no answer). "
               "Mixes: trained (mostly right), mixed, weak (mostly wrong, scattered). All arms use "
               "BoundLab's extraction, so verdicts must be identical.")


def load_problems(limit: int | None = None) -> list[Problem]:
    cfg = type("C", (), {"name": "math500", "template": None, "chat": None, "system": None,
                         "verifier": None})()
    problems = build_task(cfg).problems  # a task is whole; the probe's first N is probe.limit
    return problems[:limit] if limit else problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="24 problems x 64 answers, 3 reps")
    ap.add_argument("--problems", type=int, default=100)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    ap.add_argument("--mixes", nargs="+", choices=list(MIXES), default=list(MIXES))
    ap.add_argument("--no-floor", action="store_true", help="skip timing ours' calls in-process")
    ap.add_argument("--write", action="store_true", help="docs/bench/verify.json")
    ap.add_argument("--name", default="verify")
    a = ap.parse_args(argv)
    if a.quick:
        a.problems, a.n, a.reps = 24, 64, 3
    problems = select_problems(load_problems(), a.problems)
    res = bench(problems, a.n, a.reps, a.workers, a.formats, a.mixes, floor=not a.no_floor,
                log=lambda s: print(s, file=sys.stderr, flush=True))
    summary = {k: v for k, v in res["figures"].items() if k.startswith(("verify_", "verdict_"))}
    print(json.dumps({"summary": summary, "verdicts": res["verdicts"], "load": res["load"]}, indent=1))
    if a.write:
        command = "python bench/bench_verify.py " + " ".join(argv if argv is not None else sys.argv[1:])
        path = harness.write(a.name, res, out_dir=Path(__file__).resolve().parents[1] / "docs" / "bench",
                             command=command.strip(), benchmark="verify")
        print(f"wrote {path}", file=sys.stderr)
    return 0 if res["verdicts"]["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
