"""Pull the final answer(s) out of a math completion.

`extract(text, mode, cut_off)` returns every answer of the final statement and where it came from:

1. **Boxes.** Every closed `\\boxed{...}` / `\\fbox{...}` of the final statement: the last box and
   the boxes just before it (at most `STATEMENT_GAP` characters apart, no blank line between).
   `It is \\boxed{3} or maybe \\boxed{5}.` gives two answers; the verifier decides whether that is
   a hedge (one gold) or a list (a gold with several answers). A box further back (an intermediate
   result) is not part of the final statement. In `lenient` mode a "final answer is X" written
   *after* the last box wins over it, as in math-verify, which ranks that phrase with the box.
   A final statement of empty boxes (`\\boxed{}`) is no answer (`empty_box`): never a fallback to
   an unanchored number (the one found is often the gold restated); only an anchored "answer is
   X" statement in the tail still counts, in `lenient` mode (a small model that states its answer
   and then echoes the prompt's "within \\boxed{}" is read like a completion with no box).
2. **No box, `lenient` mode only: math-verify's own extraction** over the end of the completion (the
   last `TAIL_CHARS` characters, from a line start): its LaTeX and expression regexes, tried in its
   priority order ("final answer is", "answer:", "answer ...", then any LaTeX environment or
   number), the rightmost match first. Departures from plain math-verify, all in the direction of
   "no answer" rather than a wrong credit:
   - only the end of the completion is read, so a number restated from the problem at the top of a
     long completion is never the answer;
   - a number glued to what follows it (`2x`, `3\\sqrt{2}`, `10^5`) is the middle of a larger
     expression, not an answer: that match is skipped (a unit such as `1,000.99m²` is not glue);
   - a "LaTeX" match that is a sentence (`[Note: the solution is ...]`) is skipped, where
     math-verify would skip it after failing to parse it;
   - the match is not parsed here: the matched LaTeX (or the number, with its thousands separators
     dropped: math-verify accepts only valid groups of three, so `1 000` is 1000 and `[0,1)` is no
     number) is handed to the verifier as the answer string, so identical answers are checked once;
     math-verify would try the next match when a match does not parse, we judge it wrong.
   The unanchored scan tries the last `_QUICK_CHARS` characters before the whole tail (display
   math that could span the cut disables the shortcut). Before math-verify's patterns, a last
   "answer is <number word up to twenty>" statement answers that number (policy in `normalize.py`).
3. **A completion cut off at `max_new_tokens`** (`cut_off=True`) keeps only what it stated as final:
   a box, or an anchored statement ("final answer is X", "the answer is X", "Answer: X"). Anything
   else is `truncated`: a digit pulled from cut-off text (often the restated problem) is not an
   answer.

`boxed` mode (the usual RL reward rule) reads boxes only.

Every answer is normalized before it is handed on (`normalize.py`): thousands written with LaTeX
spacing (`2\\,220` is 2220) and a number wrapped in `\\text{}`/`\\textbf{}` (`\\textbf{(073)}` is 73).

Scanning is linear: braces are matched in one pass, and the regexes only see the tail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from boundlab.verify.normalize import normalize_answer, number_word_answer

# Longest answer we hand to the parser; longer ones are judged `too_long` without parsing.
MAX_ANSWER_CHARS = 512
# How much of the end of an unboxed completion the statement extraction reads.
TAIL_CHARS = 4000
# Boxes further apart than this (or a blank line apart) belong to different statements.
STATEMENT_GAP = 100
# The unanchored scan looks at the last this-many characters first (see statement_answers).
_QUICK_CHARS = 400

MODES = ("lenient", "boxed")

_BOX_TOKENS = ("\\boxed", "\\fbox")
# After a number: these characters mean the number is part of a larger expression (2x, 3\sqrt2,
# 10^5, 4_2, 5{...}). Units after a space ("5 cm") are fine.
_GLUED = re.compile(r"[A-Za-z0-9\\^_{(\[]")
# ... except a unit written against the number (math-verify reads `100m2` as 100 on purpose).
_UNIT = re.compile(r"(?:mm|cm|km|m|kg|mg|g|s|ms|min|h|hrs?|ml|mL|l|L)(?:\^?[23]|[\u00b2\u00b3])?"
                   r"(?![A-Za-z0-9])")
# Prose caught between brackets or dollars (`[Note: the solution is ...]`) is not an answer.
_PROSE = re.compile(r"(?<!\\)\b[A-Za-z]{3,}\s+[A-Za-z]{3,}\s+[A-Za-z]{3,}\b")
# The anchored statements a cut-off completion may still end on (a match of math-verify's
# anchored patterns starts at its anchor word).
_FINAL_STATEMENT = re.compile(r"(?i)final answer|answer\s*(?:is\b|:|=)")
# math-verify's priority for unanchored matches (a bare LaTeX environment or number).
_UNANCHORED = 300
# ... and for "final answer is X" (math-verify ranks a box at this priority too).
_FINAL_PRIORITY = 50


@dataclass(frozen=True)
class Extraction:
    # Distinct answers of the final statement, in order of appearance (empty: none found).
    answers: tuple[str, ...]
    # boxed | statement (an anchored "answer is" / "final answer" phrase) | tail (an unanchored
    # LaTeX environment or number near the end) | empty_box (the final box is empty) | truncated
    # | none
    source: str
    # The completion holds at least one closed box anywhere (for the box share).
    has_box: bool


def _matching_braces(text: str) -> dict[int, int]:
    """Map each '{' index to its matching '}' index, in one linear pass."""
    match: dict[int, int] = {}
    stack: list[int] = []
    for i, ch in enumerate(text):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            match[stack.pop()] = i
    return match


_BRACE = re.compile(r"[{}]")
# Up to this many box tokens, each box's closing brace is found by a scan from the box on (a
# completion has one or two boxes, mostly at its end); beyond it, one pass over the whole text
# (`_matching_braces`) serves them all, so scanning stays linear.
_FEW_BOXES = 4


def _closing_brace(text: str, j: int) -> int | None:
    """Index of the '}' matching the '{' at `j`, or None: the same answer as `_matching_braces`
    (a '}' before `j` that closes nothing cannot pair with anything after it)."""
    depth = 0
    for m in _BRACE.finditer(text, j):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return m.start()
    return None


def all_boxes(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of every closed box, in order. `\\boxed 5` (no braces) counts too;
    an unclosed box is skipped."""
    starts = []
    for tok in _BOX_TOKENS:
        j = text.find(tok)
        while j != -1:
            starts.append((j, len(tok)))
            j = text.find(tok, j + 1)
    if not starts:
        return []
    match: dict[int, int] | None = None
    out = []
    for idx, tok_len in sorted(starts):
        j = idx + tok_len
        while j < len(text) and text[j] == " ":
            j += 1
        if j < len(text) and text[j] == "{":
            if len(starts) <= _FEW_BOXES:
                end = _closing_brace(text, j)
            else:
                if match is None:
                    match = _matching_braces(text)
                end = match.get(j)
            if end is not None:
                out.append((idx, end + 1, text[j + 1: end]))
        elif j < len(text) and (text[j].isalnum() or text[j] in "-+.\\"):
            k = j
            while k < len(text) and not text[k].isspace() and text[k] != "$":
                k += 1
            out.append((idx, k, text[j:k]))
    # A box nested in another box is part of it, not a separate answer.
    flat: list[tuple[int, int, str]] = []
    for b in out:
        if flat and b[0] < flat[-1][1]:
            continue
        flat.append(b)
    return flat


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} with balanced braces, or None."""
    boxes = all_boxes(text)
    return boxes[-1][2] if boxes else None


def final_boxes(text: str) -> list[str]:
    """Contents of the boxes of the final statement: the last box and those before it in the same
    statement (at most STATEMENT_GAP characters apart, no blank line between). Empty boxes are
    dropped."""
    return final_statement(text, all_boxes(text))


def final_statement(text: str, boxes: list[tuple[int, int, str]]) -> list[str]:
    if not boxes:
        return []
    group = [boxes[-1]]
    for b in reversed(boxes[:-1]):
        gap = text[b[1]: group[-1][0]]
        if len(gap) > STATEMENT_GAP or "\n\n" in gap:
            break
        group.append(b)
    return [c.strip() for _, _, c in reversed(group) if c.strip()]


# -- math-verify's extraction over the tail -------------------------------------------------------
@lru_cache(maxsize=1)
def _patterns() -> list[tuple[int, list[tuple[re.Pattern[str], bool]]]]:
    """math-verify's LaTeX and expression regexes (its default configs, boxes left to us), grouped
    by its priorities, highest first: [(priority, [(pattern, is_latex), ...]), ...]."""
    from math_verify.parser import (ExprExtractionConfig, LatexExtractionConfig,
                                    get_extraction_regexes)

    regs = get_extraction_regexes((LatexExtractionConfig(boxed_match_priority=-1),
                                   ExprExtractionConfig()))
    by_prio: dict[int, list[tuple[re.Pattern[str], bool]]] = {}
    for patterns, target in regs:
        for pattern, prio in patterns:
            by_prio.setdefault(prio, []).append((pattern, isinstance(target, LatexExtractionConfig)))
    return [(p, by_prio[p]) for p in sorted(by_prio)]


def _latex_parts(m: re.Match[str]) -> list[str]:
    # The match has ~100 named groups, nearly all empty: one pass over the filled ones.
    filled = {k: v for k, v in m.groupdict().items() if v}
    parts = []
    for prefix in ["first_"] + [f"next{i}_" for i in range(1, 6)]:
        val = next((v for k, v in filled.items() if k.startswith(prefix + "latex")), None)
        if val is None:
            continue
        val = val.strip()
        if "\\text" not in val and _PROSE.search(val):
            return []  # a sentence in brackets, not math
        if filled.get(prefix + "percent"):
            val += "\\%"
        if val:
            parts.append(val)
    return parts


def _expr_part(m: re.Match[str], text: str) -> str | None:
    groups = m.groupdict()
    integer = next((v for k, v in groups.items() if k.startswith("integer") and v), "")
    decimal = next((v for k, v in groups.items() if k.startswith("decimal") and v), "")
    if integer or decimal:
        end = max(m.end(k) for k, v in groups.items()
                  if v and (k.startswith("integer") or k.startswith("decimal")))
        if (not groups.get("percent") and end < len(text) and _GLUED.match(text, end)
                and not _UNIT.match(text, end)):
            return None  # a number out of the middle of a larger expression
        sign = "-" if integer.startswith("-") else ""
        digits = integer.lstrip("-").replace(",", "").replace(" ", "").lstrip("0") or "0"
        num = sign + digits + decimal.replace(",", ".")
        return num + ("\\%" if groups.get("percent") else "")
    expr = (groups.get("expr") or "").strip().rstrip(".").strip()
    if expr:
        end = m.end("expr")
        if end < len(text) and _GLUED.match(text, end):
            return None
        return expr
    return None


def statement_answers(text: str, anchored_only: bool = False,
                      max_priority: int = _UNANCHORED) -> tuple[list[str], str]:
    """math-verify's extraction over `text`: (answers, "statement" | "tail"), or ([], "none").

    With `anchored_only`, only "answer is / answer: / final answer" statements count; only
    math-verify priorities up to `max_priority` are tried."""
    lower = None
    for prio, group in _patterns():
        anchored = prio < _UNANCHORED
        if (anchored_only and not anchored) or prio > max_priority:
            break
        scan = text
        if anchored:
            # Every anchored pattern starts with its anchor word, so no match starts before the
            # word's first occurrence: scan from there (exact, and far cheaper on long text).
            if lower is None:
                lower = text.lower()
                if len(lower) != len(text):  # a few characters lower-case to two
                    lower = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)
            first = lower.find("final answer" if prio <= _FINAL_PRIORITY else "answer")
            if first == -1:
                continue
            scan = text[first:]
        parts = None
        if not anchored and len(text) > _QUICK_CHARS:
            # The unanchored scan is the slow one (a LaTeX environment or a number anywhere). The
            # rightmost match almost always lies in the last lines: look there first. Only
            # display math ($$, \[ \]) can open before a line and close inside it, so the
            # shortcut is taken only when the last lines hold none.
            last = tail_of(text, _QUICK_CHARS)
            if "$$" not in last and "\\[" not in last and "\\]" not in last:
                parts = _rightmost(last, group, anchored_only)
        if not parts:
            parts = _rightmost(scan, group, anchored_only)
        if parts:
            return parts, ("statement" if anchored else "tail")
    return [], "none"


def _rightmost(text: str, group: list[tuple[re.Pattern[str], bool]],
               anchored_only: bool) -> list[str] | None:
    """The answers of the rightmost acceptable match of one priority group, as math-verify orders
    them (latest end first, then earliest start)."""
    found = []
    for pattern, is_latex in group:
        for m in pattern.finditer(text):
            found.append((m.end(), -m.start(), m, is_latex))
    found.sort(key=lambda x: (x[0], x[1]), reverse=True)
    for _, _, m, is_latex in found:
        if anchored_only and not _FINAL_STATEMENT.match(m.group(0)):
            continue
        parts = _latex_parts(m) if is_latex else [p for p in [_expr_part(m, text)] if p]
        if parts:
            return parts
    return None


def tail_of(text: str, chars: int = TAIL_CHARS) -> str:
    """The last `chars` characters, starting at a line start when there is one (so a `$...$` pair
    is not cut in half)."""
    if len(text) <= chars:
        return text
    cut = len(text) - chars
    nl = text.find("\n", cut)
    return text[nl + 1:] if nl != -1 else text[cut:]


def _distinct(xs: list[str]) -> tuple[str, ...]:
    """Normalized (`normalize.normalize_answer`: thousands in LaTeX spacing, numbers in `\\text{}`),
    then de-duplicated."""
    if len(xs) == 1:  # the usual case: one box
        a = normalize_answer(xs[0]).strip()
        return (a,) if a and not _EMPTY_BOX.fullmatch(a) else ()
    return tuple(dict.fromkeys(a for a in (normalize_answer(x).strip() for x in xs)
                               if a and not _EMPTY_BOX.fullmatch(a)))


# "the final answer is $\boxed{}$": the statement holds no answer.
_EMPTY_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{\s*\}")


def extract(text: str, mode: str = "lenient", cut_off: bool = False) -> Extraction:
    if mode not in MODES:
        raise ValueError(f"unknown extraction mode {mode!r} (use one of {', '.join(MODES)})")
    boxes = all_boxes(text)
    if boxes:
        after = text[boxes[-1][1]:][-TAIL_CHARS:]
        if mode == "lenient" and "final answer" in after.lower():
            # math-verify ranks "final answer is X" with (or above) a box: a final-answer
            # statement written after the last box is the answer.
            parts, _ = statement_answers(after, anchored_only=True, max_priority=_FINAL_PRIORITY)
            if parts:
                return Extraction(_distinct(parts), "statement", True)
        final = final_statement(text, boxes)
        if final:
            return Extraction(_distinct(final), "boxed", True)
        # The final statement is an empty box: never an unanchored number from elsewhere (that
        # number is often the gold restated). An explicit "the answer is X" statement still
        # counts, in lenient mode: small models echo the prompt's "put your final answer within
        # \boxed{}" after stating their answer.
        parts = _distinct(_anchored(tail_of(text))) if mode == "lenient" else ()
        return Extraction(parts, "statement" if parts else "empty_box", True)
    if mode == "lenient":
        tail = tail_of(text)
        word = number_word_answer(tail)
        if word is not None:
            return Extraction((word,), "statement", False)
        parts, source = statement_answers(tail, anchored_only=cut_off)
        if parts:
            return Extraction(_distinct(parts), source, False)
    return Extraction((), "truncated" if cut_off else "none", False)


def _anchored(text: str) -> list[str]:
    word = number_word_answer(text)
    return [word] if word is not None else statement_answers(text, anchored_only=True)[0]


def extract_math_answer(text: str, mode: str = "lenient") -> str | None:
    """The final answer as one string (several answers joined by ", "), or None."""
    ex = extract(text, mode)
    return ", ".join(ex.answers) if ex.answers else None
