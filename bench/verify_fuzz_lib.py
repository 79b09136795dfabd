"""Random closed-form LaTeX answers, polynomials, lists and equations, and a differential check
of our parent-side rules against plain math-verify (issue 13: `closed_form.py` decides pairs
without math-verify; this is what shows it decides them as math-verify would).

`random_expr` writes expressions in the shapes models write (`3\\sqrt{13}`, `\\frac{\\sqrt{3}}{2}`,
`2\\pi`, `(1+\\sqrt{2})^2`, `12\\pi/5`, `-\\frac{7}{4}`), with spacing and `\\left( \\right)`
variants, and also the near misses that latex2sympy reads differently (`2\\frac{1}{2}`, `2(3)`,
`1/2\\pi`, `\\sqrt23`, `2^3^2`), so the check also covers what the grammar must refuse.
`variants` gives, for one expression, answers a model might give against it as a gold: the same
value written otherwise, and wrong ones (negated, doubled, plus one, halved).

`random_poly` and `poly_variants` do the same for `closed_form.polynomials` and
`closed_form.relation` (`6 - 5i`, `p - q`, `1, -2`, `x = 5`, and `xy`, `\\frac{1}{2}m`, `1,234`,
`i = 5` that they must refuse), checked by `differential_polynomials`.

A test tool, not part of the library. Used by `tests/unit/test_closed_form.py` (a few hundred pairs) and `bench/verify_fuzz.py`
(tens of thousands, with the counts printed as JSON).
"""

from __future__ import annotations

import random
import sys

from boundlab.verify.math_worker import REFERENCE_BUDGET_S  # a reference step's budget (loaded CI)


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


def _check_pairs(out: dict, g: str, answers: list[str]) -> None:
    """math-verify's verdict for `g` against itself, and every pair the parent decides
    (`fast_verdict`) against a plain math-verify call, counted into `out`."""
    from boundlab.verify.math_rules import fast_verdict
    from boundlab.verify.math_worker import plain_math_verify

    if not plain_math_verify(g, g, REFERENCE_BUDGET_S):
        out["self_wrong"].append(g)
    for a in answers:
        out["pairs"] += 1
        fast = fast_verdict(g, a)
        if fast is None:
            continue
        out["decided"] += 1
        out["decided_correct" if fast else "decided_wrong"] += 1
        if fast != plain_math_verify(g, a, REFERENCE_BUDGET_S):
            out["verdict_mismatch"].append((g, a, fast))


def _progress(out: dict, n_golds: int, kind: str, t0: float) -> None:
    import time

    if out["golds"] % 200 == 0:
        print(f"  {out['golds']}/{n_golds} {kind}golds, {out['decided']} pairs decided, "
              f"{len(out['value_mismatch'])} value / {len(out['verdict_mismatch'])} verdict "
              f"mismatches, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)


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
    from boundlab.verify.math_rules import wrap_latex

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
            exprs = [e for e in parse(wrap_latex(x), parsing_timeout=REFERENCE_BUDGET_S)
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
        _check_pairs(out, g, variants(g, rng))
        if progress:
            _progress(out, n_golds, "", t0)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


# Letters models use as symbols, `i` among them (a symbol to latex2sympy, real or not).
_SYMBOLS = "xxxyzpqnmkabcrstiiii"


def _coef(rng: random.Random) -> str:
    return rng.choice(["", "", "2", "3", "-", "12", "\\frac{1}{2}", "\\frac{3}{4}", "\\sqrt{2}",
                       "2\\sqrt{3}", "0.5", "\\pi ", "\\frac{\\sqrt{3}}{2}", "7", "1"])


def _monomial(rng: random.Random) -> str:
    x = rng.choice(_SYMBOLS)
    k = rng.choice(["", "", "", "^2", "^{2}", "^3", "^{10}"])
    return f"{_coef(rng)}{x}{k}"


def random_poly(rng: random.Random) -> str:
    """One random polynomial or list, mostly inside `closed_form.polynomials`' grammar (complex
    numbers `6 - 5i`, `p - q`, `3x^2 - 2x + 1`, `\\frac{x}{2}`, lists `1, -2`, degrees), some
    just outside (`xy`, `x(2)`, `dx`, `e`, `X`, `I`, `(x+1)^2`, `1,234`, `--2 + 7i`)."""
    s = _sp(rng)
    kind = rng.choices(["complex", "sum", "frac", "list", "degrees", "relation", "near"],
                       weights=[20, 30, 8, 20, 6, 20, 16])[0]
    if kind == "complex":
        a, b = random_expr(rng, 2), rng.choice(["", "2", "5", "\\sqrt{3}", "\\frac{1}{2}", "7", "12"])
        return rng.choice([f"{a}{s}+{s}{b}i", f"{a}{s}-{s}{b}i", f"-{a}{s}+{s}{b}i", f"{b}i",
                           f"{b}i{s}-{s}{a}", f"-{b}i"])
    if kind == "sum":
        terms = [_monomial(rng) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.6:
            terms.append(random_expr(rng, 2))
        out = terms[0]
        for t in terms[1:]:
            out += f"{s}{rng.choice('+-')}{s}{t.lstrip('-')}"
        return out
    if kind == "frac":
        m = _monomial(rng).lstrip("-")
        return rng.choice([f"\\frac{{{m}}}{{{rng.randint(2, 9)}}}", f"{m}/{rng.randint(2, 9)}",
                           f"\\frac{{{m} + {rng.randint(1, 9)}}}{{{rng.randint(2, 9)}}}",
                           f"{rng.randint(2, 9)} \\cdot {m}", f"({m}{s}+{s}1)"])
    if kind == "list":
        n = rng.randint(2, 4)
        items = [random_expr(rng, 2) if rng.random() < 0.6 else random_poly(rng)
                 for _ in range(n)]
        return rng.choice([",", ", ", " , "]).join(items)
    if kind == "degrees":
        return rng.choice([f"{_num(rng)}^\\circ", f"{_num(rng)}^{{\\circ}}",
                           f"-{_num(rng)}^\\circ", f"{_num(rng)}^\\circ{s}+{s}1"])
    if kind == "relation":
        lhs = rng.choice([rng.choice(_SYMBOLS), rng.choice(_SYMBOLS), _monomial(rng),
                          random_poly(rng), random_expr(rng, 2)])
        rhs = rng.choice([random_expr(rng, 1), random_expr(rng, 2), _monomial(rng),
                          f"{_monomial(rng)}{s}+{s}{random_expr(rng, 2)}"])
        return f"{lhs}{s}={s}{rhs}"
    d = rng.randint(1, 9)
    return rng.choice(["x = y = 5", "x == 5", "x <= 5", f"{d} = {d}", "x - x = 5", "1 = x",
                       "x = 1, y = 2", "f(x) = 2", "x \\le 5", "x:=3", "xy",
                       "2xy", f"x({d})", f"x{d}", "dx", "e", "E", "X+1", "I", "3+2I",
                       "(x+1)^2", "x^{-1}", f"--{d} + 7i", f"1,{d}34", "x_1", "x'", "\\{1, 2\\}",
                       "2\\frac{1}{2}x", "x^0", "x\\pi", "\\sin x", f"1,{d}", f"1 ,{d}",
                       f"90^\\circ {d}", "\\frac{2}{x}", "\\sqrt{x}", "2^x", "x^2y", "ab", "pi",
                       "2i^2", "i^2", "x^2^3", "3x^2 y", f"{d}x \\cdot x", f"(x)({d})",
                       "\\text{x}", "\\mathrm{i}", f"{d}+\\mathbb{{C}}", "x, y", "i, 1"])


def poly_variants(x: str, rng: random.Random) -> list[str]:
    """Answers against the polynomial or list `x`: `variants`, and others that a model might
    give: a letter or a digit changed, a list's elements reordered, one dropped or repeated."""
    out = variants(x, rng)
    letters = [c for c in x if c in _SYMBOLS]
    if letters:
        c = rng.choice(letters)
        out.append(x.replace(c, rng.choice([y for y in "xyzpqi" if y != c]), 1))
    digits = [i for i, c in enumerate(x) if c.isdigit()]
    if digits:
        i = rng.choice(digits)
        out.append(x[:i] + str((int(x[i]) + 1) % 10) + x[i + 1:])
    from boundlab.verify.math_rules import split_gold

    if "=" in x:
        lhs, _, rhs = x.partition("=")
        out += [f"{rhs}={lhs}", rhs, f"2({lhs.strip()})={rhs}", f"{lhs}={rhs}+1"]
    else:
        out += [f"{rng.choice('xyp')} = {x}", f"{x} = {rng.choice('xyp')}"]
    parts = split_gold(x)
    if len(parts) > 1:
        out += [", ".join(reversed(parts)), ", ".join(parts[1:]), ", ".join(parts + parts[:1]),
                ", ".join(parts[:-1] + [random_expr(rng, 2)])]
    return out + [random_poly(rng)]


def _as_polynomials(e) -> list[dict] | None:
    """math-verify's parse as `closed_form.polynomials` represents it: a FiniteSet's elements
    (or the one expression), each expanded into {monomial: complex coefficient}, symbols
    identified by name (a complex `i` and a real one are one letter here)."""
    from sympy import Basic, FiniteSet, Poly, Symbol, expand

    items = list(e.args) if isinstance(e, FiniteSet) else [e]
    out = []
    for x in items:
        if not isinstance(x, Basic):
            return None
        x = x.doit()
        names = sorted({s.name for s in x.free_symbols})
        x = x.xreplace({s: Symbol(s.name) for s in x.free_symbols})
        if not names:
            terms = [((), x)]
        else:
            gens = [Symbol(n) for n in names]
            try:
                terms = Poly(expand(x), *gens).terms()
            except Exception:  # noqa: BLE001
                return None
        poly = {}
        for powers, c in terms:
            m = tuple((n, k) for n, k in zip(names, powers) if k) if names else ()
            poly[m] = complex(c.evalf(30))
        out.append(poly)
    return out


def _same_polynomials(ours: tuple, theirs: list[dict]) -> bool:
    """Every element of each matches one of the other (a FiniteSet drops repeats)."""
    def close(p: tuple, q: dict) -> bool:
        a = dict(p)
        keys = set(a) | {m for m, c in q.items() if abs(c) > 1e-12}
        return all(abs(a.get(m, 0.0) - q.get(m, 0.0)) <= 1e-9 * max(1.0, abs(q.get(m, 0.0)))
                   for m in keys)

    return (all(any(close(p, q) for q in theirs) for p in ours)
            and all(any(close(p, q) for p in ours) for q in theirs))


def differential_polynomials(n_golds: int, seed: int = 0, progress: bool = False) -> dict:
    """`differential` for `closed_form.polynomials` and `closed_form.relation`: for `n_golds`
    random polynomials, lists and equations they accept (`random_poly`), and every variant of
    each (`poly_variants`): our polynomials (an equation's sides) against math-verify's parse, math-verify's verdict for an identical answer, and every pair
    the parent decides (`fast_verdict`) against a plain math-verify call."""
    import time

    from math_verify import parse
    from math_verify.grader import is_assignment_relation
    from sympy import Basic, Eq

    from boundlab.verify.closed_form import polynomials, relation
    from boundlab.verify.math_rules import wrap_latex

    rng = random.Random(seed)
    out = {"golds": 0, "drawn": 0, "value_checked": 0, "value_mismatch": [], "self_wrong": [],
           "pairs": 0, "decided": 0, "decided_correct": 0, "decided_wrong": 0,
           "verdict_mismatch": []}
    t0 = time.perf_counter()
    while out["golds"] < n_golds:
        g = random_poly(rng)
        out["drawn"] += 1
        if polynomials(g) is None and relation(g) is None:
            continue
        out["golds"] += 1
        answers = poly_variants(g, rng)
        for x in [g] + answers:
            ours, rel = polynomials(x), relation(x)
            if ours is None and rel is None:
                continue
            exprs = [e for e in parse(wrap_latex(x), parsing_timeout=REFERENCE_BUDGET_S)
                     if isinstance(e, Basic)]
            out["value_checked"] += 1
            if rel is not None:
                # An Eq whose sides are ours, and an assignment to math-verify where we say so.
                e = exprs[0] if len(exprs) == 1 else None
                ok = (isinstance(e, Eq) and _same_polynomials((rel[0],), _as_polynomials(e.lhs) or [])
                      and _same_polynomials((rel[1],), _as_polynomials(e.rhs) or [])
                      and (not rel[2] or is_assignment_relation(e)))
                if not ok:
                    out["value_mismatch"].append((x, str(rel), str(exprs)))
                continue
            theirs = _as_polynomials(exprs[0]) if len(exprs) == 1 else None
            if theirs is None or not _same_polynomials(ours, theirs):
                out["value_mismatch"].append((x, str(ours), str(exprs)))
        _check_pairs(out, g, answers)
        if progress:
            _progress(out, n_golds, "polynomial ", t0)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def rewritten(x: str) -> list[str]:
    """`x` as a model might rewrite it without changing what math-verify's normalization makes
    of it, or with a change it does not undo: `\\dfrac`, `\\left( \\right)`, `\\!`, a unit
    word, spacing."""
    out = [x.replace("\\frac", "\\dfrac"), x.replace("\\frac", "\\tfrac"), f" {x}  ",
           x.replace("(", "\\left(").replace(")", "\\right)"), x.replace(",", ",\\!"),
           f"{x} \\text{{ cm}}", f"{x}\\text{{ cents}}", f"{x} units", x.replace(" ", ""),
           x.replace("\\dfrac", "\\frac"), x.replace("{", "{ ")]
    return [y for y in dict.fromkeys(out) if y != x]


def same_parse_check(strings: list[str]) -> dict:
    """`math.same_parse` against math-verify: for each string `s` (and its `rewritten` forms)
    that `parse_text` reads, math-verify's parse of `$s$` returns `parse_text(s)` as its string
    (its extraction took the whole of `s`), and two strings with the same `parse_text` get equal
    parses (expression and string). Returns the counts and every failure."""
    from math_verify import parse

    from boundlab.verify.math_rules import parse_text, wrap_latex

    out = {"strings": 0, "read": 0, "same_text_pairs": 0, "text_mismatch": [],
           "parse_mismatch": []}
    for g in strings:
        group: dict[str, list] = {}
        for x in [g] + rewritten(g):
            out["strings"] += 1
            t = parse_text(x)
            if t is None:
                continue
            out["read"] += 1
            p = parse(wrap_latex(x), parsing_timeout=REFERENCE_BUDGET_S)
            strs = [y for y in p if isinstance(y, str)]
            if strs != [t]:
                out["text_mismatch"].append((x, t, strs))
                continue
            group.setdefault(t, []).append((x, p))
        for same in group.values():
            for x, p in same[1:]:
                out["same_text_pairs"] += 1
                if p != same[0][1]:
                    out["parse_mismatch"].append((same[0][0], x, str(same[0][1]), str(p)))
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
              "0.333333", "1/3", r"\frac{1}{3}",
              # polynomials, lists and equations read in the parent, and their traps
              "y = 2x + 1", "2x = 5", "i = 5", "x = 5 + i", r"\frac{1}{2}m", "x + t", "1,234",
              "1, 234", "x - x + 5", "3x^2 - 2x + 1", r"\frac{\sqrt{3}}{2}i", "5 = 5", "x = x",
              r"-\frac{1}{2} + \frac{\sqrt{3}}{2}i", "a, b", "2, x"]


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
    from boundlab.verify.math import MathVerifier
    from boundlab.verify.math_worker import plain_math_verify

    from boundlab.verify.closed_form import polynomials, relation

    rng = random.Random(seed)
    items = []
    for i, g in enumerate(golds):
        answers = variants(g, rng) + [random_expr(rng) for _ in range(answers_per_gold)]
        if polynomials(g) is not None or relation(g) is not None:
            answers += poly_variants(g, rng) + [random_poly(rng)
                                                for _ in range(answers_per_gold // 2)]
        answers = list(dict.fromkeys(answers))
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
