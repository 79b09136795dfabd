"""MathVista and MathVision from the user's own copy: a JSONL file plus an image folder.

    probe.py task=mathvista task.path=/data/mathvista/testmini.jsonl task.visual.image_dir=/data/mathvista
    probe.py task=mathvision task.path=/data/MATH-V/data/testmini.jsonl task.visual.image_dir=/data/MATH-V

Nothing downloads. Each row's `image` is a path relative to `task.visual.image_dir` (both benchmarks ship
`images/<n>.jpg`); `Problem.images` holds its absolute path. A path that is absolute or has a `..`
part is refused (a data file must not point outside the folder it was given). The check is on the
path as written, not on where symlinks lead: a Hugging Face cache folder holds symlinks into its
blob store, and those are the user's own files.

Schemas (one JSON object per line):
- MathVista (testmini/test, as on the Hub; the GitHub release's `testmini.json`, an object keyed by
  pid, becomes this with one object per line): `pid`, `question`, `image`, `choices` (list or null),
  `unit`, `precision`, `answer`, `question_type` (multi_choice | free_form), `answer_type`
  (text | integer | float | list), `metadata` {task, skills, grade, context, category, source,
  language, ...}; `query` and `decoded_image` are ignored. Multiple choice: the gold is the option
  text, stored as its letter. Meta tags: question_type, answer_type, task, skills, grade, context,
  category, source, language.
- MathVision (MATH-V `data/test.jsonl`, `testmini.jsonl`): `id`, `question`, `options` (a list; empty
  for free-form), `image`, `answer` (a letter A-E when there are options), `level` (1-5), `subject`;
  `solution` is ignored. Meta tags: level, subject, question_type.

The prompt text is built from the fields, the same way whichever copy the file came from:
MathVista's own hint line (which names the answer's form and precision), the question (with its
unit), the options as `(A) ...` lines; MathVision's question and options. A row that breaks the
schema, or whose image is missing or unreadable, fails with the file and line.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Callable

from boundlab.config import TaskConfig
from boundlab.tasks import TASKS
from boundlab.tasks.base import Problem, Task
from boundlab.tasks.jsonl import DataError, iter_jsonl
from boundlab.tasks.mmath import QWEN_SYSTEM

# The prompt of EasyR1's math format (`examples/format_prompt/math.jinja`), the framework the paper
# trained Qwen2.5-VL-7B with on Geometry3K; base and trained models are probed with the prompt the
# training saw. The math tasks' "qwen-boxed" prompt is one override away (conf/task/mathvista.yaml).
EASYR1_MATH = ("{question} You FIRST think about the reasoning process as an internal monologue and "
               "then provide the final answer. The reasoning process MUST BE enclosed within <think> "
               "</think> tags. The final answer MUST BE put in \\boxed{}.")
QUESTION_TYPES = ("multi_choice", "free_form")
# A gold number of an integer/float row (the verifier reads the answer's number the same way).
_GOLD_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")
_MATHVISTA_ANSWER_TYPES = ("text", "integer", "float", "list")


def image_path(where: str, image_dir: Path, rel: Any, check: bool = True) -> str:
    """The absolute path of a row's image inside `image_dir` (see the module docstring)."""
    if not isinstance(rel, str) or not rel.strip():
        raise DataError(f"{where}: field 'image' must be a non-empty path, got {rel!r:.80}")
    posix, win = PurePosixPath(rel), PureWindowsPath(rel)
    if posix.is_absolute() or win.is_absolute() or win.drive or ".." in posix.parts or ".." in win.parts:
        raise DataError(f"{where}: image path {rel!r} leaves the image folder (an absolute path or a "
                        f"'..' part); paths must be relative to task.visual.image_dir={image_dir}")
    full = Path(image_dir, rel).absolute()
    if check:
        if not full.is_file():
            raise DataError(f"{where}: image file not found: {full} (image {rel!r} under "
                            f"task.visual.image_dir={image_dir})")
        _check_image(where, full)
    return str(full)


def _check_image(where: str, path: Path) -> None:
    """The file opens as an image (PIL reads the header only): a corrupt file is named here, not
    in a traceback from the sampler."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im.size  # noqa: B018 - reading the header is the check
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise DataError(f"{where}: image {path} is not a readable image ({type(e).__name__}: "
                        f"{str(e)[:80]})") from None


def _str(where: str, r: dict, key: str) -> str:
    v = r.get(key)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = str(v)  # ids and numeric answers are sometimes written as numbers
    if not isinstance(v, str) or not v.strip():
        raise DataError(f"{where}: field {key!r} must be a non-empty string, got {v!r:.80}")
    return v


def _options(where: str, r: dict, key: str) -> list[str]:
    v = r.get(key)
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(o, (str, int, float)) and not isinstance(o, bool)
                                          and str(o).strip() for o in v):
        raise DataError(f"{where}: field {key!r} must be a list of non-empty strings, got {v!r:.80}")
    if len(v) > 26:
        raise DataError(f"{where}: field {key!r} has {len(v)} options; at most 26 (A-Z) can be named")
    return [str(o) for o in v]


def letter_of(i: int) -> str:
    """The letter naming option i (0 -> A)."""
    return chr(ord("A") + i)


def choices_block(choices: list[str]) -> str:
    return "Choices:\n" + "\n".join(f"({letter_of(i)}) {c}" for i, c in enumerate(choices))


def _mathvista_hint(qtype: str, atype: str, precision: int | None) -> str:
    """MathVista's own hint line (its `build_query.py`), stating the answer's form."""
    if qtype == "multi_choice":
        return "Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, at the end."
    if atype == "integer":
        return ("Hint: Please answer the question requiring an integer answer and provide the final "
                "value, e.g., 1, 2, 3, at the end.")
    if atype == "float" and precision in (1, 2):
        return {1: "Hint: Please answer the question requiring a floating-point number with one decimal "
                   "place and provide the final value, e.g., 1.2, 1.3, 1.4, at the end.",
                2: "Hint: Please answer the question requiring a floating-point number with two decimal "
                   "places and provide the final value, e.g., 1.23, 1.34, 1.45, at the end."}[precision]
    if atype == "float" and precision is not None:
        return (f"Hint: Please answer the question requiring a floating-point number with {precision} "
                f"decimal places and provide the final value at the end.")
    if atype == "float":
        return "Hint: Please answer the question requiring a floating-point number and provide the final value at the end."
    if atype == "text":
        return "Hint: Please answer the question and provide the final answer at the end."
    return ("Hint: Please answer the question requiring a Python list as an answer and provide the "
            "final list, e.g., [1, 2, 3], [1.2, 1.3, 1.4], at the end.")


def _not_a_keyed_json(path: Path) -> None:
    """MathVista's GitHub release is one JSON object keyed by pid (`testmini.json`), not JSONL: say so
    and how to convert, instead of "bad JSON at line 1"."""
    with open(path, "rb") as f:
        head = f.read(64).lstrip()
    if head.split(b"\n", 1)[0].strip() == b"{":  # a JSONL row opens and closes on its own line
        raise DataError(f"{path}: one JSON object spanning lines (MathVista's GitHub testmini.json, "
                        f"keyed by pid?); this task reads one row per line: python -c \"import json,"
                        f"sys; [print(json.dumps(r)) for r in json.load(open(sys.argv[1])).values()]\" "
                        f"{path.name} > testmini.jsonl")


def load_mathvista(path: str | Path, image_dir: str | Path, check_images: bool = True) -> list[Problem]:
    path, image_dir = Path(path), Path(image_dir)
    _not_a_keyed_json(path)
    out, seen = [], {}
    for lineno, r in iter_jsonl(path):
        where = f"{path}:{lineno}"
        pid = _str(where, r, "pid")
        qtype = _str(where, r, "question_type")
        if qtype not in QUESTION_TYPES:
            raise DataError(f"{where}: field 'question_type' must be one of {', '.join(QUESTION_TYPES)}, "
                            f"got {qtype!r}")
        atype = _str(where, r, "answer_type")
        if atype not in _MATHVISTA_ANSWER_TYPES:
            raise DataError(f"{where}: field 'answer_type' must be one of "
                            f"{', '.join(_MATHVISTA_ANSWER_TYPES)}, got {atype!r}")
        answer = _str(where, r, "answer")
        choices = _options(where, r, "choices")
        precision = r.get("precision")
        if precision is not None:
            if isinstance(precision, bool) or not isinstance(precision, (int, float)) \
                    or precision != int(precision) or not 0 <= precision <= 10:
                raise DataError(f"{where}: field 'precision' must be a whole number of decimals "
                                f"(0-10) or null, got {precision!r}")
            precision = int(precision)
        if qtype == "multi_choice":
            if len(choices) < 2:
                raise DataError(f"{where}: a multi_choice row needs 'choices' with at least 2 options")
            if answer not in choices:
                raise DataError(f"{where}: 'answer' {answer!r:.60} is not one of its 'choices'")
            kind, gold = "choice", letter_of(choices.index(answer))
        else:
            kind, gold = ("float" if atype == "float" else atype), answer.strip()
            if kind in ("integer", "float") and _GOLD_NUMBER.fullmatch(gold) is None:
                raise DataError(f"{where}: 'answer' {answer!r:.60} is not a number ({atype} answer)")
        md = r.get("metadata") or {}
        if not isinstance(md, dict):
            raise DataError(f"{where}: field 'metadata' must be an object, got {md!r:.60}")
        unit = r.get("unit")
        question = f"Question: {_str(where, r, 'question')}" + (f" (Unit: {unit})" if unit else "")
        text = "\n".join([_mathvista_hint(qtype, atype, precision), question]
                         + ([choices_block(choices)] if choices else []))
        meta = {"answer_kind": kind, "choices": choices, "precision": precision,
                "question_type": qtype, "answer_type": atype, "image": r.get("image"),
                **{k: md.get(k) for k in ("task", "skills", "grade", "context", "category", "source",
                                          "language")}}
        if kind == "choice":
            meta["answer_text"] = answer
        pid_key = f"mathvista-{pid}"
        if pid_key in seen:
            raise DataError(f"{where}: duplicate pid {pid!r} (first on line {seen[pid_key]})")
        seen[pid_key] = lineno
        out.append(Problem(pid_key, text, gold, meta,
                           images=[image_path(where, image_dir, r.get("image"), check_images)]))
    return out


def load_mathvision(path: str | Path, image_dir: str | Path, check_images: bool = True) -> list[Problem]:
    path, image_dir = Path(path), Path(image_dir)
    out, seen = [], {}
    for lineno, r in iter_jsonl(path):
        where = f"{path}:{lineno}"
        pid = _str(where, r, "id")
        answer = _str(where, r, "answer").strip()
        options = _options(where, r, "options")
        level = r.get("level")
        if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 5:
            raise DataError(f"{where}: field 'level' must be an integer 1-5, got {level!r:.40}")
        if options:
            if len(answer) != 1 or not 0 <= ord(answer.upper()) - ord("A") < len(options):
                raise DataError(f"{where}: 'answer' must be the letter of one of its {len(options)} "
                                f"options (A-{letter_of(len(options) - 1)}), got {answer!r:.40}")
            kind, gold = "choice", answer.upper()
        else:
            kind, gold = "math", answer
        question = _str(where, r, "question")
        if options:
            letters_only = [o.strip() for o in options] == [letter_of(i) for i in range(len(options))]
            # Options that are only their letters are drawn in the image: list the letters.
            question += ("\nChoices: " + ", ".join(options)) if letters_only else "\n" + choices_block(options)
        meta = {"answer_kind": kind, "choices": options, "precision": None,
                "question_type": "multi_choice" if options else "free_form",
                "level": level, "subject": _str(where, r, "subject"), "image": r.get("image")}
        pid_key = f"mathvision-{pid}"
        if pid_key in seen:
            raise DataError(f"{where}: duplicate id {pid!r} (first on line {seen[pid_key]})")
        seen[pid_key] = lineno
        out.append(Problem(pid_key, question, gold, meta,
                           images=[image_path(where, image_dir, r.get("image"), check_images)]))
    return out


def _factory(name: str, loader: Callable[..., list[Problem]], example: str) -> Callable[[TaskConfig | None], Task]:
    def factory(cfg: TaskConfig | None) -> Task:
        from boundlab.config import ConfigError

        raw_path, raw_dir = (cfg.path, cfg.visual.image_dir) if cfg is not None else (None, None)
        if not raw_path or not raw_dir:
            missing = " and ".join(k for k, v in (("task.path", raw_path), ("task.visual.image_dir", raw_dir)) if not v)
            raise ConfigError(f"task={name} needs {missing}: your own copy of the benchmark (nothing is "
                              f"downloaded), e.g. {example}")
        path, image_dir = Path(str(raw_path)).expanduser(), Path(str(raw_dir)).expanduser()
        if not path.is_file():
            raise DataError(f"task={name}: task.path={path} is not a file (the benchmark's JSONL)")
        if not image_dir.is_dir():
            raise DataError(f"task={name}: task.visual.image_dir={image_dir} is not a folder (the folder the "
                            f"rows' image paths are relative to)")
        problems = loader(path, image_dir)
        qtype = cfg.visual.question_type if cfg is not None else None
        if qtype is not None:
            if qtype not in QUESTION_TYPES:
                raise ConfigError(f"task.visual.question_type={qtype}: must be one of "
                                  f"{', '.join(QUESTION_TYPES)}, or null for all")
            problems = [p for p in problems if p.meta["question_type"] == qtype]
        return Task(name, problems, template=EASYR1_MATH, verifier="typed", chat=True, system=QWEN_SYSTEM)

    return factory


TASKS.register("mathvista")(_factory(
    "mathvista", load_mathvista, "task.path=/data/mathvista/testmini.jsonl task.visual.image_dir=/data/mathvista"))
TASKS.register("mathvision")(_factory(
    "mathvision", load_mathvision, "task.path=/data/MATH-V/data/testmini.jsonl task.visual.image_dir=/data/MATH-V"))
