"""bench/bench_verify.py (issue 36, items 1 and 4): its corpus is built from the shipped MATH500 golds in
every format and mix, and one tiny repetition through the harness gives the JSON shape the table reads,
with identical verdicts from all three arms (no timing is asserted)."""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


harness = sys.modules.get("harness") or _load("harness")
bv = _load("bench_verify")


def test_the_corpus_covers_math500_shapes_and_holds_the_same_answers_in_both_formats():
    problems = bv.load_problems()
    assert len(problems) == 500
    picked = bv.select_problems(problems, 24)
    shapes = {bv.shape(p.answer) for p in picked}
    # Every shape MATH500 has is in the sample (tuples, intervals, equations, fractions among them).
    assert shapes == {bv.shape(p.answer) for p in problems}
    assert {"tuple", "interval", "equation", "fraction", "integer"} <= shapes
    assert len({p.problem_id for p in picked}) == 24
    for mix in bv.MIXES:
        boxed = bv.build_corpus(picked, 8, mix, "boxed")
        prose = bv.build_corpus(picked, 8, mix, "prose")
        assert [len(c) for _, c in boxed] == [8] * 24
        assert sum("\\boxed{" in t for _, c in boxed for t in c) > 0.8 * 24 * 8
        assert not any("\\boxed" in t for _, c in prose for t in c)
        # The same answers were drawn for both formats; the texts differ.
        assert boxed != prose
        assert bv.build_corpus(picked, 8, mix, "boxed") == boxed  # seeded
    # A gold's own forms come first and are not among its wrong answers.
    for p in picked:
        right, wrong = bv.right_forms(p.answer), bv.wrong_forms(p.answer, ["7", p.answer])
        assert right[0] == p.answer.strip() and not set(right[:1]) & set(wrong)


def test_one_tiny_repetition_gives_the_harness_json_with_identical_verdicts(tmp_path, monkeypatch):
    # The baselines run in processes forked from the verifier's fork server, which import this
    # module by name (as they do when the script runs from bench/).
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    problems = bv.select_problems(bv.load_problems(), 12)
    res = bv.bench(problems, n=6, reps=1, workers=1, formats=("boxed", "prose"), mixes=("weak",),
                   floor=False)
    path = harness.write("verify", res, out_dir=tmp_path, command="python bench/bench_verify.py --test")
    doc = json.loads(path.read_text())
    assert set(doc) >= {"figures", "machine", "date", "command", "load", "order", "runs", "verdicts",
                        "corpus"}
    for fmt in ("boxed", "prose"):
        for key in (f"verify_x_plain_{fmt}_weak", f"verify_x_memo_{fmt}_weak",
                    f"verify_extract_seconds_{fmt}_weak", f"ours_{fmt}_weak/startup_seconds",
                    f"plain_{fmt}_weak/seconds", f"memo_{fmt}_weak/seconds", f"ours_{fmt}_weak/seconds"):
            fig = doc["figures"][key]
            assert set(fig) == {"min", "median", "max", "reps"} and fig["reps"] == 1
            assert fig["min"] <= fig["median"] <= fig["max"]
        assert doc["figures"][f"verdict_disagreements_{fmt}_weak"]["max"] == 0
        c = doc["corpus"]["by_format_mix"][f"{fmt}_weak"]
        assert c["completions"] == 12 * 6 and c["verdict_disagreements"] == 0
        # Each of the 3 arms' verdicts on every completion, checked against plain's.
        assert c["verdicts_checked"] == 3 * 12 * 6
    assert doc["verdicts"] == {"checked": 2 * 3 * 12 * 6, "disagreements": 0, "identical": True,
                               "listed": []}
    assert "Synthetic completions" in doc["corpus"]["what"]
    assert doc["figures"]["verify_worker_startup_first_seconds"]["reps"] == 1
    # memo makes at most as many math-verify calls as plain, one per completion.
    assert (doc["figures"]["memo_boxed_weak/math_verify_calls"]["max"]
            <= doc["figures"]["plain_boxed_weak/math_verify_calls"]["max"] == 12 * 6)
