"""Random closed-form LaTeX answers, and a differential check of our parent-side rules against
plain math-verify (issue 13: `closed_form.py` decides pairs without math-verify; this is what
shows it decides them as math-verify would).

`random_expr` writes expressions in the shapes models write (`3\\sqrt{13}`, `\\frac{\\sqrt{3}}{2}`,
`2\\pi`, `(1+\\sqrt{2})^2`, `12\\pi/5`, `-\\frac{7}{4}`), with spacing and `\\left( \\right)`
variants, and also the near misses that latex2sympy reads differently (`2\\frac{1}{2}`, `2(3)`,
`1/2\\pi`, `\\sqrt23`, `2^3^2`), so the check also covers what the grammar must refuse.
`variants` gives, for one expression, answers a model might give against it as a gold: the same
value written otherwise, and wrong ones (negated, doubled, plus one, halved).

Used by `tests/unit/test_closed_form.py` (a few hundred pairs) and `bench/verify_fuzz.py`
(tens of thousands, with the counts printed as JSON).
"""

from __future__ import annotations

import random
import sys


def _num(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.6:
        return str(rng.randint(0, 12))
    if r < 0.8:
        return str(rng.randint(13, 999))
    if r < 0.9:
        return f"{rng.randint(0, 99)}.{rng.randint(0, 999):0{rng.randint(1, 3)}d}"
    return str(rng.randint(1000, 10 ** rng.randint(4, 12)))


def _sp(rng: random.Random) -> str:
    return " " if rng.random() < 0.15 else ""


def random_expr(rng: random.Random, depth: int = 0) -> str:
    """One random expression, mostly inside the grammar of `closed_form.py`, some just outside."""
    leaf = depth >= 3 or rng.random() < 0.3 + 0.15 * depth
    if leaf:
        r = rng.random()
        if r < 0.55:
            return _num(rng)
        if r < 0.7:
            return "\\pi"
        if r < 0.85:
            return f"\\sqrt{{{rng.randint(2, 200)}}}"
        if r < 0.92:
            return f"\\sqrt{rng.randint(2, 9)}"
        return f"{rng.randint(1, 20)}\\sqrt{{{rng.randint(2, 99)}}}"
    a = random_expr(rng, depth + 1)
    b = random_expr(rng, depth + 1)
    s = _sp(rng)
    kind = rng.choices(
        ["frac", "sqrt", "root", "add", "sub", "neg", "cdot", "times", "coef", "coefpi",
         "paren", "left", "pow", "powfrac", "slash", "mixed", "coefpow", "near"],
        weights=[14, 8, 3, 10, 8, 6, 5, 2, 8, 5, 4, 3, 6, 2, 4, 3, 2, 6])[0]
    if kind == "frac":
        cmd = rng.choice(["\\frac", "\\frac", "\\dfrac", "\\tfrac"])
        return f"{cmd}{{{a}}}{{{b}}}"
    if kind == "sqrt":
        return f"\\sqrt{s}{{{a}}}"
    if kind == "root":
        return f"\\sqrt[{rng.randint(2, 5)}]{{{a}}}"
    if kind == "add":
        return f"{a}{s}+{s}{b}"
    if kind == "sub":
        return f"{a}{s}-{s}{b}"
    if kind == "neg":
        return f"-{a}"
    if kind == "cdot":
        return f"{a}{s}\\cdot{s or ' '}{b}"
    if kind == "times":
        return f"{a} \\times {b}"
    if kind == "coef":
        return f"{rng.randint(2, 30)}{s}\\sqrt{{{a}}}"
    if kind == "coefpi":
        c = rng.choice([str(rng.randint(2, 30)), "\\frac{1}{2}", "0.5"])
        return f"{c}\\pi"
    if kind == "paren":
        return f"({a})"
    if kind == "left":
        return f"\\left({s}{a}{s}\\right)"
    if kind == "pow":
        if rng.random() < 0.5:
            return f"({a})^{rng.randint(0, 9)}"
        return f"{{{a}}}^{{{rng.randint(-3, 12)}}}"
    if kind == "powfrac":
        return f"{rng.randint(2, 50)}^{{\\frac{{{rng.randint(1, 5)}}}{{{rng.randint(2, 6)}}}}}"
    if kind == "slash":
        d = rng.choice([_num(rng), "\\pi", "\\sqrt{2}", f"({b})"])
        return f"{a}/{d}"
    if kind == "mixed":  # 2\frac{1}{2}, and with a zero, a power or a factor after it
        m = f"{rng.randint(0, 20)}{s}\\frac{{{rng.randint(0, 12)}}}{{{rng.randint(0, 12)}}}"
        return m + rng.choice(["", "", "", "^2", "\\pi", "\\sqrt{2}", f" {rng.randint(0, 9)}"])
    if kind == "coefpow":  # 3\sqrt{4}^{2}: latex2sympy keeps the root unevaluated, a product
        return f"{rng.randint(1, 9)}\\sqrt{{{rng.choice([4, 9, 2, 16])}}}^{{{rng.randint(-2, 3)}}}"
    # Near misses: forms latex2sympy reads otherwise than arithmetic would.
    d1, d2 = rng.randint(1, 9), rng.randint(0, 9)
    return rng.choice([f"{d1}\\frac{{{a}}}{{{b}}}", f"{d1}({a})", f"({a})({b})", f"1/{d1}\\pi",
                       f"\\sqrt{d1}{d2}", f"2^{d1}^{d2}", f"\\pi({a})", f"{a} {d2}",
                       f"{a}\\cdot -{b}", f"+{a}", f"--{a}", f"\\frac{d1}{d2}", f"2^{d1}{d2}",
                       f"{a}\\%", f"{a}^\\circ", f"{a}i", f"e^{{{a}}}"])


def variants(x: str, rng: random.Random) -> list[str]:
    """Answers against the gold `x`: equal forms (`\\left(x\\right)`, `1\\cdot x`, spacing) and
    wrong ones (`-x`, `2x`-like, `x+1`, `x/2`), as a model might write them."""
    return [x, f"{x} ", f"\\left({x}\\right)", f"1 \\cdot {x}", f"-{x}", f"-({x})",
            f"2\\cdot({x})", f"2{x}", f"{x}+1", f"{x}+0.000001", f"\\frac{{{x}}}{{2}}",
            f"({x})^2", random_expr(rng)]


def differential(n_golds: int, seed: int = 0, progress: bool = False) -> dict:
    """For `n_golds` random expressions that `closed_form.py` accepts (and every variant of
    each): our value against math-verify's parse, math-verify's verdict for an identical answer,
    and every pair the parent decides (`fast_verdict`) against a plain math-verify call.
    Returns counts and the first disagreements (none is the expected result)."""
    import math
    import time

    from math_verify import parse
    from sympy import Basic

    from boundlab.verify.closed_form import closed_form_value
    from boundlab.verify.math import _PARSE_TIMEOUT_S, fast_verdict, plain_math_verify, wrap_latex

    rng = random.Random(seed)
    out = {"golds": 0, "drawn": 0, "value_checked": 0, "value_mismatch": [], "self_wrong": [],
           "pairs": 0, "decided": 0, "decided_correct": 0, "decided_wrong": 0,
           "verdict_mismatch": [], "mv_unparsed": 0}
    t0 = time.perf_counter()
    while out["golds"] < n_golds:
        g = random_expr(rng)
        out["drawn"] += 1
        vg = closed_form_value(g)
        if vg is None:
            continue
        out["golds"] += 1
        for x in [g] + variants(g, rng):
            v = closed_form_value(x)
            if v is None:
                continue
            exprs = [e for e in parse(wrap_latex(x), parsing_timeout=_PARSE_TIMEOUT_S)
                     if isinstance(e, Basic)]
            if len(exprs) != 1:
                out["mv_unparsed"] += 1
                out["value_mismatch"].append((x, v, "no single parse"))
                continue
            try:
                z = complex(exprs[0].evalf(30))
            except Exception as e:  # noqa: BLE001
                out["value_mismatch"].append((x, v, f"evalf: {type(e).__name__}"))
                continue
            out["value_checked"] += 1
            if not (math.isfinite(z.real) and abs(z.imag) <= 1e-12 * max(1.0, abs(z))
                    and abs(z.real - v) <= 1e-9 * max(1.0, abs(v))):
                out["value_mismatch"].append((x, v, str(z)))
        if not plain_math_verify(g, g):
            out["self_wrong"].append(g)
        for a in variants(g, rng):
            out["pairs"] += 1
            fast = fast_verdict(g, a)
            if fast is None:
                continue
            out["decided"] += 1
            out["decided_correct" if fast else "decided_wrong"] += 1
            if fast != plain_math_verify(g, a):
                out["verdict_mismatch"].append((g, a, fast))
        if progress and out["golds"] % 200 == 0:
            print(f"  {out['golds']}/{n_golds} golds, {out['decided']} pairs decided, "
                  f"{len(out['value_mismatch'])} value / {len(out['verdict_mismatch'])} verdict "
                  f"mismatches, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


# Golds outside the closed-form grammar, where a profile decides closed-form answers or must not:
# symbols whose `str` could be a constant's, tuples, sets, relations, units, percents, degrees.
TRAP_GOLDS = [r"\text{pi}", r"\text{sqrt(2)}", r"\mathrm{pi}", r"x = \pi", r"y = 2\sqrt{3}",
              r"\{\pi, 2\}", r"(\sqrt{2}, 1)", r"\left( 3, \frac{\pi}{2} \right)", r"\pi r^2",
              "p - q", "6 - 5i", "3+4i", r"\text{Evelyn}", "e", "E", "x=5", "1,-2", "3, 5, 7",
              r"\{1, 1\}", "(1,2)", "[1,2]", r"5\%", r"90^\circ", "52_8", r"\infty", r"\frac{1}{0}",
              r"\sqrt{2}\%", r"2\sqrt{2}^\circ", r"\frac{\pi}{2}\text{ rad}", r"\frac12", "2^10",
              r"2\frac{1}{2}", "2(3)", r"1/2\pi", r"\sqrt23", r"0.5\pi", r"\sin 30^\circ",
              r"\log 2", "e^{2}", r"\frac{1}{\sqrt{2}}", r"\sqrt{2}/2", r"\dfrac{\sqrt{3}}{2}",
              "0.333333", "1/3", r"\frac{1}{3}"]


def end_to_end(golds: list[str], answers_per_gold: int = 20, seed: int = 0,
               workers: int = 2) -> dict:
    """Every gold against its `variants` and `answers_per_gold` random expressions, each boxed in
    a completion: `MathVerifier.score_many` against one plain math-verify call per pair.
    Returns the counts, the math-verify calls ours made, both sides' seconds, and every
    disagreement (a `timeout` on our side is counted, not compared). A plain call can be wrong
    itself: math-verify's wall-clock budgets expire silently (a parse returns nothing, a
    comparison False: the first matrix it meets can take that long). So a disagreement is asked
    of plain math-verify twice more; where both agree with ours it is counted in
    `plain_expired_rechecked` (with the pair), not as a mismatch."""
    import time

    from boundlab.tasks.base import Problem
    from boundlab.verify.extract import extract_math_answer
    from boundlab.verify.math import MathVerifier, plain_math_verify

    rng = random.Random(seed)
    items = []
    for i, g in enumerate(golds):
        answers = list(dict.fromkeys(variants(g, rng) + [random_expr(rng)
                                                        for _ in range(answers_per_gold)]))
        items.append((Problem(f"fuzz-{i}", "", g),
                      [f"So the answer is \\boxed{{{a}}}." for a in answers]))
    v = MathVerifier(workers=workers)
    try:
        t0 = time.perf_counter()
        ours = v.score_many(items)
        ours_s = time.perf_counter() - t0
        calls = v.calls
    finally:
        v.close()
    t0 = time.perf_counter()
    mismatches, timeouts, pairs, correct, rechecked = [], 0, 0, 0, []
    for (p, comps), row in zip(items, ours):
        for c, verdict in zip(comps, row):
            pairs += 1
            if verdict.outcome in ("timeout", "error"):
                timeouts += 1
                continue
            answer = extract_math_answer(c) or ""
            ref = plain_math_verify(p.answer, answer)
            if ref != verdict.correct and all(plain_math_verify(p.answer, answer)
                                               == verdict.correct for _ in range(2)):
                rechecked.append((p.answer, answer, verdict.outcome))
                ref = verdict.correct
            correct += ref
            if ref != verdict.correct:
                mismatches.append((p.answer, answer, verdict.outcome))
    return {"golds": len(golds), "pairs": pairs, "plain_correct": correct,
            "math_verify_calls_ours": calls, "ours_seconds": round(ours_s, 1),
            "plain_seconds": round(time.perf_counter() - t0, 1), "timeouts_ours": timeouts,
            "mismatches": len(mismatches), "first_mismatches": mismatches[:20],
            "plain_expired_rechecked": len(rechecked), "rechecked_pairs": rechecked[:20]}
