"""EvalPlus's cached expected outputs decide verdicts, so they are checked against their content:
a tampered entry (a flipped digit, a truncated file, malformed JSON, a missing or stale digest, a
consistent entry of the wrong length) is named in one line and recomputed in the real sandbox, and
the canonical solution is still judged correct; nothing ends in a traceback."""

import hashlib
import json
from pathlib import Path

import pytest

import boundlab.builtins  # noqa: F401
from boundlab.tasks.evalplus import load_evalplus
from boundlab.verify import build_verifier, evalplus

D = Path(__file__).parents[1] / "data" / "code_benchmarks"
FIB = [55, 1, 89, 21]


def _fib55():
    return {p.problem_id: p for p in load_evalplus(D / "HumanEvalPlus-fixture.jsonl.gz", "humaneval")}["HumanEval/55"]


def _flip_digit(f: Path) -> None:
    """55 -> 56 in the first output: still valid JSON, a wrong expected value."""
    v = json.loads(f.read_text())
    assert v["base"][0][0] == 55
    f.write_text(f.read_text().replace("[[55,", "[[56,", 1).replace("[[55, ", "[[56, ", 1))
    assert json.loads(f.read_text())["base"][0][0] == 56


def _consistent_but_short(f: Path) -> None:
    """One output fewer, with a digest and record that match it: only the problem's length catches it."""
    v = json.loads(f.read_text())
    v["base"] = v["base"][:-1]
    blob = json.dumps(v).encode()
    f.write_bytes(blob)
    f.with_suffix(".sha256").write_text(json.dumps({"sha256": hashlib.sha256(blob).hexdigest(),
                                                    "shape": {k: len(x) for k, x in v.items()}}))


TAMPER = {
    "flipped digit": _flip_digit,
    "truncated": lambda f: f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 2]),
    "malformed JSON": lambda f: f.write_text("{not json"),
    "empty": lambda f: f.write_bytes(b""),
    "digest missing (an old entry)": lambda f: f.with_suffix(".sha256").unlink(),
    "digest malformed": lambda f: f.with_suffix(".sha256").write_text("[1, 2"),
    "wrong length, consistent digest": _consistent_but_short,
}


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    d = tmp_path_factory.mktemp("evalplus_expected")
    p = _fib55()
    with build_verifier("code", workers=1) as v:
        v.use_cache_dir(d)
        assert v.score(p, [p.meta["canonical_solution"]])[0].correct
    key = evalplus.cache_key(p)
    return d, key, (d / f"{key}.json").read_bytes(), (d / f"{key}.sha256").read_bytes()


@pytest.mark.parametrize("how", list(TAMPER))
def test_a_tampered_entry_is_recomputed_and_the_verdict_stays_right(cached, tmp_path, capsys, how):
    src, key, blob, check = cached
    d = tmp_path / "evalplus_expected"
    d.mkdir()
    f = d / f"{key}.json"
    f.write_bytes(blob)
    (d / f"{key}.sha256").write_bytes(check)
    TAMPER[how](f)
    p = _fib55()
    with build_verifier("code", workers=1) as v:
        v.use_cache_dir(d)
        good, wrong = v.score(p, [p.meta["canonical_solution"], "    return 55\n"])
    assert good.correct and good.outcome == "passed", (good.outcome, good.info)
    assert not wrong.correct
    err = capsys.readouterr().err
    assert f"the cached expected outputs {f} fail their check" in err and "Traceback" not in err
    assert err.count("\n") == 1
    # ...and the entry was rewritten whole: a later verifier reads it without a word.
    assert evalplus.decoded_expected(json.loads(f.read_text()))["base"] == FIB
    with build_verifier("code", workers=1) as v:
        v.use_cache_dir(d)
        assert v.expected.get(key, evalplus.expected_shape(p)) is not None
    assert capsys.readouterr().err == ""
