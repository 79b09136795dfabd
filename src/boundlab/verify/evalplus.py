"""EvalPlus's judging rules (HumanEval+, MBPP+) on BoundLab's sandbox.

The oracle. The expected outputs are the canonical solution's: `canonical_job` is a stdin/stdout
program (prompt + canonical solution + a small driver) that runs in the sandbox like any model
program, calls the entry point on every input and prints each result as tagged JSON (the
sandbox's own codec: tuples, sets, complex numbers and big ints survive) with the call's time.
Results are cached by content: `cache_key(problem)` is the sha256 of the row's fields that
decide them (dataset, task id, prompt, canonical solution, entry point, inputs) and the Python
version; the verifier keeps them in memory and, when the probe gives it one, in a directory next
to the store (`<store dir>/evalplus_expected/<sha256>.json`).

The check (`test_code`) runs in the sandbox's judge, never in the program: each input is sent to
the program's entry point as plain data, and the result is compared there, as EvalPlus's
`unsafe_execute` does:
- exact equality, except that floats compare within `atol` (as `np.allclose(out, exp,
  rtol=1e-7, atol=atol)`), and `atol` = 1e-6 when the row's is 0 and the expected value is a
  float or a non-empty list/tuple of floats;
- special oracles: HumanEval `find_zero` passes when |poly(xs, x)| <= atol; MBPP's eight
  set-valued tasks compare as sets, its three "returns something" tasks compare truthiness of
  `is not None` (a bool result compares as is), `are_equivalent` always passes, `sum_div` also
  passes on 0. Not reproduced: MBPP's `surface_Area` (Mbpp/581) and `digit_distance_nums`
  (Mbpp/558) oracles; those two are judged against the canonical outputs;
- time: each input must return within max(MIN_TIME_LIMIT_S, TIME_LIMIT_FACTOR x the canonical
  call's time) (EvalPlus's defaults, 1 s and 4x); the whole run is bounded by the sum plus 1 s.
  The time is measured in the judge, around the call, so it includes passing the arguments
  and the result (small next to the 1 s floor). A late result is `timeout`.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from boundlab.sandbox import StdioJob
from boundlab.sandbox._worker.codec import _dumps, decode, encode
from boundlab.tasks.base import Problem
from boundlab.tasks.jsonl import DataError

MIN_TIME_LIMIT_S = 1.0
TIME_LIMIT_FACTOR = 4.0
# Inputs per canonical run (each run is one sandboxed process with its own stdout limit).
CHUNK = 64
CANONICAL_TIMEOUT_S = 120.0

MBPP_SET_EQ = ("similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly",
               "larg_nnum", "intersection_array", "find_dissimilar", "Diff")
MBPP_NOT_NONE = ("check_str", "text_match_three", "text_starta_endb")


def _codec_source() -> str:
    return resources.files("boundlab.sandbox._worker").joinpath("codec.py").read_text()


# -- MBPP+ stores tuples, sets and complex numbers as JSON; rebuild them per task id, as EvalPlus's
# `mbpp_deserialize_inputs` does (the ids are the release's facts).
def _tup(x: Any) -> tuple:
    return tuple(x)


def _deep_tuple(x: Any) -> Any:
    return tuple(_deep_tuple(i) for i in x) if isinstance(x, list) else x


_MBPP_RULES: dict[int, Any] = {}
for _i in (2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579, 596, 616, 630,
           726, 740, 744, 809):
    _MBPP_RULES[_i] = lambda inp: [_tup(a) for a in inp]
for _i in (63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780):
    _MBPP_RULES[_i] = lambda inp: [[_tup(a) for a in arg] for arg in inp]
for _i in (75, 413, 444, 753):
    _MBPP_RULES[_i] = lambda inp: [[_tup(a) for a in inp[0]]] + [inp[1]]
for _i in (106, 750):
    _MBPP_RULES[_i] = lambda inp: [inp[0]] + [_tup(inp[1])]
for _i in (250, 405, 446, 617, 720, 763, 808):
    _MBPP_RULES[_i] = lambda inp: [_tup(inp[0])] + [inp[1]]
for _i in (259, 401, 445):
    _MBPP_RULES[_i] = lambda inp: [_tup(_tup(a) for a in arg) for arg in inp]
for _i in (580, 615, 791):
    _MBPP_RULES[_i] = _deep_tuple
_MBPP_RULES[115] = lambda inp: [[set(a) if isinstance(a, list) and a else {} for a in inp[0]]]
_MBPP_RULES[124] = lambda inp: (float(inp[0]), complex(inp[1]))
_MBPP_RULES[252] = lambda inp: [complex(inp[0])]
_MBPP_RULES[278] = lambda inp: [_tup(_tup(a) if isinstance(a, list) else a for a in inp[0])]
_MBPP_RULES[307] = lambda inp: [_tup(inp[0])] + [inp[1], inp[2]]
_MBPP_RULES[722] = lambda inp: [{k: _tup(v) for k, v in inp[0].items()}] + inp[1:]


def deserialize(problem: Problem, inputs: list) -> list:
    if problem.meta.get("dataset") != "mbpp":
        return inputs
    try:
        num = int(str(problem.problem_id).rsplit("/", 1)[-1])
    except ValueError:
        return inputs
    rule = _MBPP_RULES.get(num)
    return [rule(inp) for inp in inputs] if rule else inputs


def all_inputs(problem: Problem) -> dict[str, list]:
    m = problem.meta
    return {"base": deserialize(problem, m["base_input"]),
            "plus": deserialize(problem, m.get("plus_input") or [])}


def cache_key(problem: Problem) -> str:
    m = problem.meta
    blob = json.dumps([m["dataset"], problem.problem_id, problem.question, m["canonical_solution"],
                       m["entry_point"], m["base_input"], m.get("plus_input") or [],
                       platform.python_version()], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


_DRIVER = '''
import io as _io, json as _json, sys as _sys, time as _time
_c = {"__name__": "_boundlab_codec"}
exec(%(codec)r, _c)
_real = _sys.stdout
_sys.stdout = _io.StringIO()
_g = {"__name__": "__boundlab_canonical__"}
exec(compile(%(program)r, "<canonical>", "exec"), _g)
_fn = _g[%(entry)r]
_out = []
for _inp in _c["decode"](_sys.stdin.read()):
    _t0 = _time.perf_counter()
    try:
        _r = _fn(*_inp)
    except BaseException as _e:
        _out.append({"error": type(_e).__name__ + ": " + str(_e)[:200]})
        continue
    _dt = _time.perf_counter() - _t0
    _out.append({"v": _c["encode"](_r), "t": _dt})
_real.write(_json.dumps(_out))
_real.flush()
'''


def canonical_job(problem: Problem, inputs: list) -> StdioJob:
    """One sandboxed run of the canonical solution per CHUNK inputs; stdout is captured."""
    m = problem.meta
    program = _DRIVER % {"codec": _codec_source(), "entry": m["entry_point"],
                         "program": problem.question + m["canonical_solution"]}
    cases = [(_dumps(encode(inputs[i:i + CHUNK])), "") for i in range(0, len(inputs), CHUNK)]
    return StdioJob(program, cases or [(_dumps([]), "")], timeout_s=CANONICAL_TIMEOUT_S,
                    capture=True)


def parse_canonical(problem: Problem, n: int, result: Any) -> list[list]:
    """[[encoded output, seconds], ...] from a canonical run; DataError if it did not work."""
    if result.outcome != "passed":
        raise DataError(f"{problem.problem_id}: the canonical solution did not run in the sandbox "
                        f"({result.outcome}: {str(result.info)[:300]})")
    rows: list[list] = []
    for text in result.info.get("stdout", []):
        for j, r in enumerate(json.loads(text)):
            if "error" in r:
                raise DataError(f"{problem.problem_id}: the canonical solution fails on input "
                                f"{len(rows)}: {r['error']}")
            rows.append([r["v"], float(r["t"])])
    if len(rows) != n:
        raise DataError(f"{problem.problem_id}: the canonical run gave {len(rows)} outputs for {n} "
                        "inputs")
    return rows


def expected_shape(problem: Problem) -> dict[str, int]:
    """How many expected outputs each test set of the problem has (its inputs, one output each)."""
    m = problem.meta
    return {"base": len(m["base_input"]), "plus": len(m.get("plus_input") or [])}


def check_expected(value: Any, shape: dict[str, int] | None = None) -> str | None:
    """Why `value` is not a usable set of expected outputs (None: it is): {"base"/"plus": [[encoded
    output, seconds >= 0], ...]}, each output decodable, with `shape`'s lengths when given."""
    if not isinstance(value, dict) or set(value) != {"base", "plus"}:
        return "not a {base, plus} object"
    for name, rows in value.items():
        if not isinstance(rows, list):
            return f"{name} is not a list"
        if shape is not None and len(rows) != shape.get(name):
            return f"{name} has {len(rows)} outputs for {shape.get(name)} inputs"
        for r in rows:
            if not (isinstance(r, list) and len(r) == 2 and isinstance(r[1], (int, float))
                    and not isinstance(r[1], bool) and 0 <= r[1] < float("inf")):
                return f"a {name} row is not [output, seconds]"
            try:
                decode(json.dumps(r[0]))
            except Exception:  # noqa: BLE001 - any codec failure means the entry is unusable
                return f"a {name} output does not decode"
    return None


class ExpectedCache:
    """Canonical outputs by cache_key: in memory, and in `directory` when one is set.

    The outputs decide verdicts, so an entry on disk is checked against its content before it is
    used, never trusted for its name: `<key>.json` (the outputs) has a `<key>.sha256` beside it
    with the sha256 of the outputs file's bytes and the number of outputs per test set. A missing or
    different digest, a wrong length, malformed JSON or an output that does not decode is said in
    one line on stderr and the entry is recomputed (the canonical solution is run again)."""

    def __init__(self) -> None:
        self.directory: Path | None = None
        self.memory: dict[str, dict[str, list]] = {}

    def get(self, key: str, shape: dict[str, int] | None = None) -> dict[str, list] | None:
        if key in self.memory:  # checked fully when it was put or read; here only its lengths
            got = self.memory[key]
            if shape is None or {k: len(v) for k, v in got.items()} == shape:
                return got
            del self.memory[key]
        if self.directory is not None:
            f = self.directory / f"{key}.json"
            if f.is_file() or (self.directory / f"{key}.sha256").is_file():
                why = self._read(key, shape)
                if why is None:
                    return self.memory[key]
                print(f"[boundlab] evalplus: the cached expected outputs {f} fail their check ({why}); "
                      f"recomputing them", file=sys.stderr, flush=True)
        return None

    def _read(self, key: str, shape: dict[str, int] | None) -> str | None:
        """Load the entry into memory; why it is unusable, or None."""
        assert self.directory is not None
        try:
            blob = (self.directory / f"{key}.json").read_bytes()
            check = json.loads((self.directory / f"{key}.sha256").read_text())
        except FileNotFoundError as e:
            return f"{Path(e.filename).name} is missing"
        except (OSError, ValueError) as e:
            return f"unreadable: {e}"
        if not isinstance(check, dict) or check.get("sha256") != hashlib.sha256(blob).hexdigest():
            return "its sha256 does not match its content"
        try:
            value = json.loads(blob)
        except ValueError as e:
            return f"malformed JSON: {e}"
        why = check_expected(value, shape)
        if why is None and check.get("shape") != {k: len(v) for k, v in value.items()}:
            why = "its lengths do not match its record"
        if why is None:
            self.memory[key] = value
        return why

    def put(self, key: str, value: dict[str, list]) -> None:
        why = check_expected(value)
        if why is not None:
            raise DataError(f"evalplus expected outputs for {key}: {why}")
        self.memory[key] = value
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            blob = json.dumps(value).encode()
            check = {"sha256": hashlib.sha256(blob).hexdigest(), "shape": {k: len(v) for k, v in value.items()}}
            for name, data in ((f"{key}.json", blob), (f"{key}.sha256", json.dumps(check).encode())):
                tmp = self.directory / f".{name}.{os.getpid()}.tmp"
                tmp.write_bytes(data)
                os.replace(tmp, self.directory / name)


def limits(times: list[float]) -> list[float]:
    return [max(MIN_TIME_LIMIT_S, TIME_LIMIT_FACTOR * t) for t in times]


_CHECK = '''
import time as _time
_C = {"__name__": "_boundlab_codec"}
exec(_CODEC, _C)
_INPUTS = _C["decode"](_INPUTS_JSON)
_EXPECTED = _C["decode"](_EXPECTED_JSON)


def _is_floats(x):
    if isinstance(x, float):
        return True
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(i, float) for i in x)


def _close(a, b, atol):
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num):
        if a == b:
            return True
        return abs(a - b) <= atol + 1e-7 * abs(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return all(_close(x, y, atol) for x, y in zip(a, b))
    return False


def _poly(xs, x):
    return sum(c * x ** i for i, c in enumerate(xs))


def _ok(inp, out, exp):
    atol = _ATOL
    if _DATASET == "humaneval" and _ENTRY == "find_zero":
        return abs(_poly(*inp, out)) <= atol
    exact = out == exp
    if _DATASET == "mbpp":
        if _ENTRY == "are_equivalent":
            exact = True
        elif _ENTRY == "sum_div":
            exact = exact or out == 0
        elif _ENTRY in _SET_EQ:
            exact = set(out) == set(exp)
        elif _ENTRY in _NOT_NONE:
            exact = (out == exp) if isinstance(out, bool) else exp == (out is not None)
    if atol == 0 and _is_floats(exp):
        atol = 1e-6
    if not exact and atol != 0:
        return _close(out, exp, atol)
    return bool(exact)


def check(candidate):
    for i in range(len(_INPUTS)):
        t0 = _time.monotonic()
        out = candidate(*_INPUTS[i])
        dt = _time.monotonic() - t0
        if dt > _LIMITS[i]:
            raise TimeoutError("%s took %.2f s, over its %.2f s limit" % (_WHICH[i], dt, _LIMITS[i]))
        if not _ok(_INPUTS[i], out, _EXPECTED[i]):
            raise AssertionError("wrong output on " + _WHICH[i])
'''


def test_code(problem: Problem, expected: dict[str, list]) -> tuple[str, float]:
    """(the judge's test code, the whole run's time limit) for the problem's test set."""
    m = problem.meta
    ins = all_inputs(problem)
    sets = ["base"] + (["plus"] if m.get("tests", "plus") == "plus" else [])
    inputs, outs, times, which = [], [], [], []
    for s in sets:
        inputs += ins[s]
        outs += [r[0] for r in expected[s]]
        times += [r[1] for r in expected[s]]
        which += [f"{s} input {j}" for j in range(len(ins[s]))]
    lim = limits(times)
    head = "\n".join([
        f"_CODEC = {_codec_source()!r}",
        f"_INPUTS_JSON = {_dumps(encode(inputs))!r}",
        # Expected outputs are already encoded; wrap them as one list.
        f"_EXPECTED_JSON = {json.dumps(outs, separators=(',', ':'))!r}",
        f"_LIMITS = {lim!r}",
        f"_WHICH = {which!r}",
        f"_ATOL = {float(m.get('atol', 0.0))!r}",
        f"_ENTRY = {m['entry_point']!r}",
        f"_DATASET = {m['dataset']!r}",
        f"_SET_EQ = {MBPP_SET_EQ!r}",
        f"_NOT_NONE = {MBPP_NOT_NONE!r}",
    ])
    return head + "\n" + _CHECK, sum(lim) + 1.0


def decoded_expected(value: dict[str, list]) -> dict[str, list]:
    """The expected outputs as Python values (for tests and reports)."""
    return {k: [decode(json.dumps(r[0])) for r in v] for k, v in value.items()}
