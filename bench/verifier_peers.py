"""Score one completions file three ways and show where they disagree.

Scorers:
- `boundlab`: our math verifier (`verify.math`, lenient extraction; `boundlab_boxed`: boxed only);
- `math_verify`: one plain math-verify call on the whole completion (`verify(parse(gold),
  parse(completion))`, its default extraction);
- `paper`: the grading conventions of the seed paper's evaluation (the Qwen2.5-Math evaluation
  harness), written here from its documented rules, not copied: the answer is the content of the
  *last* `\\boxed{}` (no box: the last number in the text, commas removed); both sides are stripped
  (`\\left`/`\\right`, `\\!`, `dfrac`/`tfrac`, degrees, `$`, `%`, `\\text{}` wrappers, `\\frac12`
  and `\\sqrt2` shorthand, a short `x =` prefix, spaces); then equal as lower-case strings, or
  both numbers (all commas dropped) with the prediction within relative tolerance 1e-4 of
  gold/100, gold or gold*100 (the percentage rule), or bracketed lists compared element by element
  (bracket kinds ignored), or sympy equal (`simplify(a - b) == 0`, or numerically within 1e-4),
  3 s per symbolic check.

    python bench/verifier_peers.py make OUT.jsonl [--math500 500] [--gsm8k 300] [--seed 0]
    python bench/verifier_peers.py score FILE.jsonl [--workers 2]

`make` builds a completions file from the official MATH500/GSM8K solutions and golds with labelled
perturbations (`label`: what a correct grader must say, `kind`: the perturbation). `score` reads
`{"problem_id", "completion"[, "label", "kind"]}` lines (the task is named by the id's prefix:
math500-*, gsm8k-*, ...) and prints one JSON object: per scorer the credited count (and, with
labels, false positives and negatives), per kind the count each scorer credits, the pairwise
agreement table, and examples of disagreement.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import sys
import time
from collections import Counter, defaultdict
from math import isclose

import boundlab.builtins  # noqa: F401 - registries
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem
from boundlab.tasks.benchmarks import last_box, reference_solutions
from boundlab.verify import build_verifier
from boundlab.verify.math_rules import wrap_latex
from boundlab.verify.normalize import WORDS

# -- the paper's conventions ----------------------------------------------------------------------


def paper_extract(text: str) -> str:
    box = last_box(text)
    if box is not None:
        return box
    nums = re.findall(r"-?\d*\.?\d+", text.replace(",", ""))
    return nums[-1] if nums else ""


def paper_strip(s: str) -> str:
    s = str(s).replace("\n", "").strip().rstrip(".")
    s = s.replace("\\!", "").replace("\\left", "").replace("\\right", "")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "").replace("$", "").replace("\\%", "").replace("%", "")
    for _ in range(3):
        s = re.sub(r"\\(?:text|textbf|mbox|mathrm)\{([^{}]*)\}", r"\1", s)
    # MATH's fixes for shorthand: \frac12 -> \frac{1}{2}, \sqrt2 -> \sqrt{2}.
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac(\d)\{", r"\\frac{\1}{", s)
    s = re.sub(r"\\frac\{([^{}]*)\}(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\sqrt(\w)", r"\\sqrt{\1}", s)
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if s.startswith("."):
        s = "0" + s
    parts = s.split("=")
    if len(parts) == 2 and len(parts[0].strip()) <= 2:
        s = parts[1]
    return s.replace(" ", "")


def _number(s: str) -> float | None:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def _split_top(s: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(s[start:i])
            start = i + 1
    return out + [s[start:]]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _symbolic_equal(a: str, b: str) -> bool:
    from latex2sympy2_extended import latex2sympy
    from sympy import N, simplify

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(3)
    try:
        x, y = latex2sympy(a), latex2sympy(b)
        try:
            if simplify(x - y) == 0:
                return True
        except Exception:
            pass
        try:
            return isclose(float(N(x)), float(N(y)), rel_tol=1e-4)
        except Exception:
            return False
    except (_Timeout, Exception):
        return False
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def paper_equal(pred: str, gold: str) -> bool:
    p, g = paper_strip(pred), paper_strip(gold)
    if not p:
        return False
    if p.lower() == g.lower():
        return True
    pn, gn = _number(p), _number(g)
    if pn is not None and gn is not None:
        return any(isclose(pn, c, rel_tol=1e-4) for c in (gn / 100, gn, gn * 100))
    if p[:1] in "([" and g[:1] in "([" and p[-1:] in ")]" and g[-1:] in ")]":
        ps, gs = _split_top(p[1:-1]), _split_top(g[1:-1])
        if len(ps) == len(gs) and len(ps) > 1:
            return all(paper_equal(x, y) for x, y in zip(ps, gs))
    return _symbolic_equal(p, g)


def paper_grade(gold: str, completion: str) -> bool:
    return paper_equal(paper_extract(completion), gold)


def math_verify_grade(gold: str, completion: str) -> bool:
    from math_verify import parse, verify

    try:
        return bool(verify(parse(wrap_latex(gold)), parse(completion)))
    except Exception:
        return False


# -- a labelled completions file ------------------------------------------------------------------


def _int(g: str) -> int | None:
    return int(g) if re.fullmatch(r"-?\d+", g) else None


def _thin(n: int) -> str:
    return f"{n:,}".replace(",", "\\,")


def _misplaced_commas(n: int) -> str:
    d = str(n)
    return d[:-3] + "," + d[-3:-1] + "," + d[-1] if len(d) >= 4 else d


def perturbations(p: Problem, solution: str, task: str) -> list[tuple[str, str, bool]]:
    """(kind, completion, label) for one problem."""
    g, n = p.answer, _int(p.answer)
    lead = "Let me work it out step by step.\n"
    out: list[tuple[str, str, bool]] = []
    if task == "gsm8k":
        body, final = solution.rsplit("#### ", 1)
        out += [("solution_boxed", f"{body}So the answer is $\\boxed{{{final.strip()}}}$.", True),
                ("solution_stated", f"{body}The answer is {final.strip()}.", True)]
    else:
        out += [("solution", solution, True),
                ("boxed_gold", f"{lead}So the answer is $\\boxed{{{g}}}$.", True)]
        if "\\frac" in g:
            out.append(("dfrac", f"{lead}$\\boxed{{{g.replace(chr(92) + 'frac', chr(92) + 'dfrac')}}}$", True))
    if n is not None:
        if abs(n) >= 1000:
            out.append(("thin_space", f"{lead}$\\boxed{{{_thin(n)}}}$", True))
            out.append(("misplaced_commas", f"{lead}$\\boxed{{{_misplaced_commas(n)}}}$", False))
        if n >= 10000:
            out.append(("plus_one_big", f"{lead}$\\boxed{{{n + 1}}}$", False))
        if 0 <= n <= 999:
            out.append(("textbf_padded", f"{lead}$\\boxed{{\\textbf{{({n:03d})}}}}$", True))
        if 0 <= n <= 20:
            out.append(("number_word", f"{lead}The answer is {WORDS[n]}.", True))
        if n != 0:
            out.append(("times_100", f"{lead}$\\boxed{{{n * 100}}}$", False))
            out.append(("plus_one", f"{lead}$\\boxed{{{n + 1}}}$", False))
        out.append(("empty_box", f"{lead}We get {n}, so the final answer is $\\boxed{{}}$.", False))
        out.append(("hedge_gold_last", f"{lead}It is $\\boxed{{{n + 1}}}$ or maybe $\\boxed{{{n}}}$.", False))
    return out


def make(path: str, n_math: int, n_gsm: int, seed: int) -> int:
    rng = random.Random(seed)
    rows = []
    for task, k in (("math500", n_math), ("gsm8k", n_gsm)):
        probs = TASKS.get(task)(None).problems
        sols = reference_solutions(task)
        pick = probs if k >= len(probs) else sorted(rng.sample(probs, k), key=probs.index)
        for p in pick:
            for kind, comp, label in perturbations(p, sols[p.problem_id], task):
                rows.append({"problem_id": p.problem_id, "completion": comp, "label": label, "kind": kind})
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return len(rows)


# -- scoring --------------------------------------------------------------------------------------


def _problems() -> dict[str, Problem]:
    out = {}
    for name in ("math500", "gsm8k", "minerva", "olympiadbench", "amc23", "aime24", "aime25"):
        out.update({p.problem_id: p for p in TASKS.get(name)(None).problems})
    return out


def score(path: str, workers: int) -> dict:
    probs = _problems()
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("problem_id") not in probs or "completion" not in r:
                sys.exit(f"{path}:{lineno}: needs a known problem_id (math500-*, gsm8k-*, ...) and a completion")
            rows.append(r)
    names = ["boundlab", "boundlab_boxed", "math_verify", "paper"]
    verdicts: dict[str, list[bool]] = {}
    times = {}
    for name, extraction in (("boundlab", "lenient"), ("boundlab_boxed", "boxed")):
        t0 = time.perf_counter()
        v = build_verifier("math", workers=workers, extraction=extraction)
        try:
            out = v.score_many([(probs[r["problem_id"]], [r["completion"]]) for r in rows])
        finally:
            v.close()
        verdicts[name] = [o[0].correct for o in out]
        times[name] = round(time.perf_counter() - t0, 1)
    for name, fn in (("math_verify", math_verify_grade), ("paper", paper_grade)):
        t0 = time.perf_counter()
        verdicts[name] = [fn(probs[r["problem_id"]].answer, r["completion"]) for r in rows]
        times[name] = round(time.perf_counter() - t0, 1)
    labelled = all("label" in r for r in rows)
    scorers = {}
    for name in names:
        s = {"credited": sum(verdicts[name]), "wall_s": times[name]}
        if labelled:
            s["false_positives"] = sum(v and not r["label"] for v, r in zip(verdicts[name], rows))
            s["false_negatives"] = sum(r["label"] and not v for v, r in zip(verdicts[name], rows))
            s["accuracy"] = round(1 - (s["false_positives"] + s["false_negatives"]) / len(rows), 4)
        scorers[name] = s
    kinds: dict[str, dict] = defaultdict(lambda: Counter())
    for i, r in enumerate(rows):
        k = kinds[r.get("kind", "all")]
        k["n"] += 1
        k["label_correct"] += bool(r.get("label"))
        for name in names:
            k[name] += verdicts[name][i]
    agreement = {a: {b: round(sum(x == y for x, y in zip(verdicts[a], verdicts[b])) / len(rows), 4)
                     for b in names} for a in names}
    examples = [{"problem_id": r["problem_id"], "kind": r.get("kind"), "label": r.get("label"),
                 "gold": probs[r["problem_id"]].answer, "tail": r["completion"][-80:],
                 **{n: verdicts[n][i] for n in names}}
                for i, r in enumerate(rows) if len({verdicts[n][i] for n in names}) > 1][:12]
    return {"file": path, "completions": len(rows), "scorers": scorers, "by_kind": dict(kinds),
            "agreement": agreement, "disagreement_examples": examples}


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("out")
    m.add_argument("--math500", type=int, default=500)
    m.add_argument("--gsm8k", type=int, default=300)
    m.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("score")
    s.add_argument("file")
    s.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    if a.cmd == "make":
        print(json.dumps({"wrote": make(a.out, a.math500, a.gsm8k, a.seed), "file": a.out}))
    else:
        print(json.dumps(score(a.file, a.workers), indent=1))


if __name__ == "__main__":
    main()
