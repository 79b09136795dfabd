"""Code verifier: pull the program out of a completion, run it against the tests in the sandbox.

Problems carry their checks in `Problem.meta` (see `boundlab.tasks.code`):
  - `kind="function"`: `test` (Python test code; HumanEval's defines `check(candidate)`),
    `entry_point`, and `continuation` (the completion continues the prompt, as in HumanEval).
  - `kind="stdio"`: `cases` = [[stdin, expected stdout], ...], optional `float_tol`.
  - either: optional `timeout_s`.

Outcomes: passed, failed, timeout, memory, runtime_error, sandbox_error. `correct` is True only
for passed. A `sandbox_error` means the sandbox could not run the program even after retries:
it is not the model's failure, and the probe should not count it as one.

  - `kind="evalplus"` (HumanEval+, MBPP+): EvalPlus's rules, `boundlab.verify.evalplus`; the
    canonical outputs are computed in the sandbox on first use and cached (`use_cache_dir`).
  - `kind="lcb_functional"` (LiveCodeBench): `Solution().<func_name>(*args)` through a shim
    appended to the program; `test` holds the cases (`boundlab.tasks.livecodebench`).
  - stdio and lcb_functional: optional `preamble`, prepended to the program (LiveCodeBench's
    standard-library imports).

Identical programs for one problem are run once (sampling at large n repeats itself).
"""

from __future__ import annotations

import ast
import platform
import re
from dataclasses import fields
from pathlib import Path
from typing import Any, Sequence

from boundlab.sandbox import FunctionJob, SandboxConfig, SandboxPool, StdioJob
from boundlab.tasks.base import Problem
from boundlab.verify import evalplus
from boundlab.verify.base import Verdict, Verifier

_PY_LANGS = {"", "python", "py", "python3", "py3", "python2", "ipython", "pycon", "sage"}
# Where a raw continuation stops being the solution: top-level lines that test, print or chat.
_STOP = re.compile(r"^(?:if\s+__name__\s*==|print\(|assert\s|```|<\||>>>)", re.M)
_MAX_TRIMS = 30


def code_blocks(text: str) -> list[tuple[str, str]]:
    """Fenced blocks as (language, code); an unclosed last fence runs to the end of the text."""
    blocks: list[tuple[str, str]] = []
    lang: str | None = None
    buf: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if lang is None:
            if s.startswith("```"):
                lang = s[3:].strip().split(" ")[0].lower() if s[3:].strip() else ""
                buf = []
        elif s.startswith("```") and not s[3:].strip():
            blocks.append((lang, "\n".join(buf)))
            lang = None
        else:
            buf.append(line)
    if lang is not None and buf:
        blocks.append((lang, "\n".join(buf)))
    return blocks


def _defines(code: str, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.M) is not None


def _definitions_only(code: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    ok = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
          ast.Assign, ast.AnnAssign)
    return bool(tree.body) and all(
        isinstance(n, ok) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
        for n in tree.body)


def _compiles(code: str) -> bool:
    try:
        compile(code, "<program>", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


def _trim_to_compile(code: str) -> str:
    """Drop trailing top-level statements (a cut-off last line, chat after the code) until the
    program compiles; the untouched text when no prefix does."""
    if _compiles(code):
        return code
    lines = code.split("\n")
    starts = [i for i, ln in enumerate(lines) if ln and not ln[0].isspace() and ln[0] != "#"
              and not ln.startswith((")", "]", "}"))]
    for cut in reversed(starts[-_MAX_TRIMS:]):
        head = "\n".join(lines[:cut]).rstrip() + "\n"
        if head.strip() and _compiles(head):
            return head
    return code


def _continues(text: str) -> bool:
    for line in text.splitlines():
        if line.strip():
            return line[0] in " \t"
    return False


def _cut_continuation(text: str) -> str:
    m = _STOP.search(text)
    return text[: m.start()] if m else text


def extract_program(completion: str, prefix: str = "",
                    entry_point: str | None = None) -> str | None:
    """The program a completion stands for, or None when there is none.

    - A raw continuation of `prefix` (HumanEval: prompt + completion): used when there is no
      fence, or when the completion's first line is indented (it continues the prompt's
      function; a fence after it ends the code). Cut where top-level testing, printing or a
      fence starts, then trimmed to the longest prefix that compiles (a completion cut off by
      the token limit).
    - Fenced code: with an entry point, the last block that defines it, preceded by the other
      blocks that only define things (helpers, imports), not the ones that call or print; without
      one (stdin/stdout programs), the last block. With a prefix, the block is appended to it,
      so the prompt's imports and helper functions stay and the block's definition replaces the
      prompt's stub.
    """
    if completion is None:
        return None
    if prefix and _continues(completion):
        # An indented first line continues the prompt's function; a fence after it ends the code.
        return _trim_to_compile(prefix + _cut_continuation(completion).rstrip() + "\n")
    blocks = [(lang, code) for lang, code in code_blocks(completion)
              if lang in _PY_LANGS and code.strip()]
    if blocks:
        codes = [c for _, c in blocks]
        if entry_point:
            defining = [c for c in codes if _defines(c, entry_point)]
            if defining:
                main = defining[-1]
                helpers = [c for c in codes if c is not main and not _defines(c, entry_point)
                           and _definitions_only(c)]
                body = "\n\n".join(helpers + [main])
            else:
                body = codes[-1]
        else:
            body = codes[-1]
        if not prefix:
            return body.rstrip() + "\n"
        if entry_point and _defines(body, entry_point):
            return prefix.rstrip() + "\n\n\n" + body.rstrip() + "\n"
        return _trim_to_compile(prefix + body.rstrip() + "\n")
    if not completion.strip() and not prefix:
        return None
    if not prefix:
        return _trim_to_compile(completion.rstrip() + "\n")
    return _trim_to_compile(prefix + _cut_continuation(completion).rstrip() + "\n")


def program_for(problem: Problem, completion: str) -> str | None:
    meta = problem.meta
    if not completion or not completion.strip():
        return None
    prefix = problem.question if meta.get("continuation") else ""
    entry = meta.get("entry_point") if meta.get("kind", "function") in ("function", "evalplus") \
        else None
    return extract_program(completion, prefix=prefix, entry_point=entry)


_SANDBOX_FIELDS = {f.name for f in fields(SandboxConfig)}


_LCB_SHIM = """


_boundlab_lcb_state = []


def _boundlab_lcb_call(*args):
    if not _boundlab_lcb_state:
        _boundlab_lcb_state.append(Solution())
    return getattr(_boundlab_lcb_state[0], %r)(*args)
"""


class CodeVerifier(Verifier):
    name = "code"
    # 2: EvalPlus (HumanEval+/MBPP+) and LiveCodeBench functional problems; a test's own time
    # limit is a `timeout` outcome (was `failed`).
    version = 2
    # Cannot change a verdict: the worker count, the opt-out below. Everything else it is built with (its
    # `verify.code` block, any other SandboxConfig field) is in the probe key.
    # `allow_weaker` (the `sandbox.allow_weaker` opt-out) only lets a run start without a layer that failed to set up (the pool logs
    # which): an honest program's verdict is the same with it, and keys stay as they were.
    verdict_neutral = frozenset({"workers", "allow_weaker"})
    runs_code = True  # built with `sandbox.allow_weaker` (boundlab.probe.context.open_verifier)

    def identity(self) -> dict[str, Any]:
        # Programs run under this interpreter (sys.executable): its version can change a verdict.
        return {**super().identity(), "python": platform.python_version()}

    def __init__(self, timeout_s: float = 3.0, workers: int | None = None,
                 allow_weak_isolation: bool = False, dedupe: bool = True, **options: Any):
        # `options` are SandboxConfig fields (memory_mb, retries, ...); anything else is a bug in
        # the caller, refused rather than dropped.
        unknown = set(options) - _SANDBOX_FIELDS
        if unknown:
            raise TypeError(f"code verifier: unknown option(s) {sorted(unknown)}; known: "
                            f"{sorted(_SANDBOX_FIELDS | {'dedupe'})}")
        self.dedupe = dedupe
        self.expected = evalplus.ExpectedCache()
        self._tests: dict[tuple[str, str], tuple[str, float]] = {}
        self._keys: dict[int, tuple[Problem, str]] = {}
        # Builds (and checks) the pool now, so a missing sandbox fails at start, loudly; the
        # worker processes themselves start on first use.
        self.pool = SandboxPool(SandboxConfig(timeout_s=timeout_s, workers=workers,
                                              allow_weak_isolation=allow_weak_isolation,
                                              **options))

    @property
    def isolation(self) -> str:
        return self.pool.isolation

    def use_cache_dir(self, directory: str | Path) -> None:
        """Keep EvalPlus's canonical outputs in `directory` too (verdict-neutral: keyed by content)."""
        self.expected.directory = Path(directory)

    def _key(self, problem: Problem) -> str:
        """evalplus.cache_key, once per problem object (it hashes every input of the row); the
        problem is kept with it, so its id cannot be reused by another while cached."""
        hit = self._keys.get(id(problem))
        if hit is None or hit[0] is not problem:
            hit = self._keys[id(problem)] = (problem, evalplus.cache_key(problem))
        return hit[1]

    def _ensure_expected(self, problems: Sequence[Problem]) -> None:
        """Run the canonical solution of every EvalPlus problem not yet in the cache."""
        todo = {}
        for p in problems:
            if p.meta.get("kind") == "evalplus":
                key = self._key(p)
                if key not in todo and self.expected.get(key, evalplus.expected_shape(p)) is None:
                    todo[key] = p
        futs = []
        for key, p in todo.items():
            ins = evalplus.all_inputs(p)
            futs.append((key, p, {s: (len(v), self.pool.submit(evalplus.canonical_job(p, v)))
                                  for s, v in ins.items()}))
        for key, p, runs in futs:
            self.expected.put(key, {s: evalplus.parse_canonical(p, n, f.result())
                                    for s, (n, f) in runs.items()})

    def _job(self, problem: Problem, program: str) -> FunctionJob | StdioJob:
        meta = problem.meta
        timeout = meta.get("timeout_s")
        kind = meta.get("kind", "function")
        if meta.get("preamble") and kind in ("stdio", "lcb_functional"):
            program = meta["preamble"] + "\n" + program
        if kind == "stdio":
            cases = [(str(i), str(o)) for i, o in meta["cases"]]
            return StdioJob(program, cases, timeout_s=timeout, float_tol=meta.get("float_tol"))
        if kind == "lcb_functional":
            return FunctionJob(program.rstrip() + "\n" + _LCB_SHIM % meta["func_name"], meta["test"],
                               "_boundlab_lcb_call", timeout_s=timeout)
        if kind == "evalplus":
            key = (self._key(problem), meta.get("tests", "plus"))
            if key not in self._tests:  # built once per problem, not once per program
                expected = self.expected.get(key[0], evalplus.expected_shape(problem))
                if expected is None:  # damaged since _ensure_expected read it: run the canonical again
                    self._ensure_expected([problem])
                    expected = self.expected.get(key[0], evalplus.expected_shape(problem))
                self._tests[key] = evalplus.test_code(problem, expected)
            test, limit = self._tests[key]
            return FunctionJob(program, test, meta["entry_point"], timeout_s=limit)
        if kind != "function":
            raise ValueError(f"problem {problem.problem_id}: unknown code kind {kind!r}")
        return FunctionJob(program, meta["test"], meta.get("entry_point"), timeout_s=timeout)

    def score(self, problem: Problem, completions: Sequence[str]) -> list[Verdict]:
        return self.score_many([(problem, completions)])[0]

    def score_many(self, items: Sequence[tuple[Problem, Sequence[str]]]) -> list[list[Verdict]]:
        self._ensure_expected([p for p, _ in items])
        plans: list[list[tuple[str | None, Any]]] = []
        for problem, completions in items:
            seen: dict[str, Any] = {}
            row = []
            for c in completions:
                program = program_for(problem, c)
                if program is None:
                    row.append((None, None))
                    continue
                fut = seen.get(program) if self.dedupe else None
                if fut is None:
                    fut = self.pool.submit(self._job(problem, program))
                    seen[program] = fut
                row.append((program, fut))
            plans.append(row)
        out: list[list[Verdict]] = []
        for row in plans:
            verdicts = []
            for program, fut in row:
                if fut is None:
                    verdicts.append(Verdict(False, None, "failed", info={"reason": "no program"}))
                    continue
                r = fut.result()
                info = {k: (v[:300] if isinstance(v, str) else v) for k, v in r.info.items()
                        if k in ("reason", "error", "case", "cases")}
                verdicts.append(Verdict(r.outcome == "passed", program, r.outcome, info=info))
            out.append(verdicts)
        return out

    def close(self) -> None:
        self.pool.close()


from boundlab.verify import VERIFIERS  # noqa: E402

VERIFIERS.register("code")(CodeVerifier)
