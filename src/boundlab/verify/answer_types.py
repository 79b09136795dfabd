"""Answer types of the visual benchmarks (MathVista, MathVision): read one extracted answer as the
problem's type and compare it with the gold. Pure functions; `typed.py` is the verifier around them.

A problem says its type in `meta["answer_kind"]` (set by `boundlab.tasks.visual`):

- `choice`: multiple choice. The gold is a letter (`Problem.answer`, "A" for the first of
  `meta["choices"]`). An answer counts as the option it names, read as (in this order):
  a letter alone (`B`, `(B)`, `B.`, `B)`, `\\text{B}`, `Option B`); a letter with the option's text
  (`B. 145°`, `(B) 145°`: the text must be that option's, or no option's); the option's text
  (case, spaces, `$`, `\\text{}` and the degree sign's spellings ignored); a number equal to exactly one
  option's number (`6` for `6cm`, `145` for `145°`). Nothing else: a letter in a sentence is not an
  answer (the verifier reads only boxes and "answer is" statements), and an answer that names no
  option is wrong, never the nearest option.
- `integer`: the answer's number must be an integer equal to the gold (`5.0` is 5; `5.5` is wrong).
- `float`: both numbers rounded to `meta["precision"]` decimals (half up, in decimal arithmetic), then
  compared: at precision 2, 3.142 is 3.14. Without a precision, the gold's own decimals are used.
- `list`: the same numbers in the same order, each compared as `float` (or as an integer).
- `text`: case- and space-insensitive string equality.
- `math` (free-form math, MathVision): not here; math-verify judges it (`typed.py`).

Where this departs from the benchmarks' own scorers, always toward "no credit for a guess":
MathVista's maps an answer that names no option to the most similar option (Levenshtein) and reads
an integer answer with `int(float(x))`, so 5.7 is 5; both would credit guesses in pass@k at large k.
Its float check compares `str(round(x, p))` with the gold string and so misses `1.50` vs `1.5`;
here the numbers are compared. MathVision's scorer reads unboxed letters from several phrasings; here
only a box or an anchored "answer is" statement counts.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Sequence

from boundlab.verify.normalize import normalize_answer

KINDS = ("choice", "integer", "float", "list", "text", "math")

# \text{B}, \textbf{(B)}, \mathrm{cm}: the wrapper goes, its content stays.
_WRAPPER = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|operatorname|mbox)\s*\{([^{}]*)\}")
_DEGREE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree|°")
# A letter alone: B, (B), B., B), B:, (b). A bare lower-case letter is not read (it is a word).
_LETTER = re.compile(r"\(([A-Za-z])\)[.:]?|([A-Z])[.:)]?")
_OPTION_WORD = re.compile(r"(?i)(?:option|choice)\s*")
# A letter, then the option's text: "B. 145°", "(B) 145°", "B) 145°", "B: 145°".
_LETTER_TEXT = re.compile(r"(?:\(([A-Za-z])\)|([A-Z])[.:)])\s*(.+)", re.S)
# A number, optionally with thousands commas and a unit or degree/percent sign after it.
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")
_UNIT_TAIL = re.compile(r"\s*(?:°|%|[A-Za-z]{1,5}(?:\^?\{?[23]\}?|[\u00b2\u00b3])?)?\s*")
_FRACTION = re.compile(r"([-+]?)\\d?frac\s*\{\s*(-?\d+)\s*\}\s*\{\s*(-?\d+)\s*\}|([-+]?\d+)\s*/\s*(\d+)")
# "the answer is X", "Answer: X", "the answer is: X", "the correct option is X" (the last one counts).
_ANCHOR = re.compile(r"(?i)\b(?:final answer|correct answer|correct option|correct choice|answer)"
                     r"\s*(?:is\b\s*:?|:|=)\s*(?:option\s+|choice\s+)?")


def clean(s: str) -> str:
    """The answer without LaTeX dressing: `$`, `\\text{}`-style wrappers, `\\left`/`\\right`,
    `\\!`/`\\,`/`~` spacing, bold `**`, a trailing period; the degree sign spelled `°`."""
    s = normalize_answer(s.strip())  # thousands in LaTeX spacing (`1\\,000`), as the math verifier
    prev = None
    while prev != s:
        prev = s
        s = _WRAPPER.sub(lambda m: m.group(1), s)
    s = _DEGREE.sub("°", s)
    s = s.replace("\\$", "").replace("\\%", "%")  # an escaped currency or percent sign
    s = s.replace("$", "").replace("\\left", "").replace("\\right", "").replace("**", "")
    s = re.sub(r"\\[,;:! ]|~", " ", s)
    return s.strip().rstrip(".").strip()


def text_key(s: str) -> str:
    """Case- and space-insensitive form of an option's or an answer's text."""
    return re.sub(r"\s+", "", clean(s)).casefold()


def to_number(s: str) -> Decimal | None:
    """The one number an answer states (`1,000`, `3.14`, `145°`, `12 m`, `\\frac{3}{2}`, `3/2`),
    else None. A unit or sign after the number is allowed; anything else (a second number, an
    expression) is not a number."""
    c = clean(s)
    m = _FRACTION.fullmatch(c.replace(" ", ""))
    if m:
        sign, num, den = (m.group(1), m.group(2), m.group(3)) if m.group(2) else ("", m.group(4), m.group(5))
        if int(den) == 0:
            return None
        return (Decimal(-1) if sign == "-" else Decimal(1)) * Decimal(num) / Decimal(den)
    m = _NUMBER.match(c)
    if not m or not _UNIT_TAIL.fullmatch(c, m.end()):
        return None
    try:
        return Decimal(m.group().replace(",", ""))
    except InvalidOperation:
        return None


def _decimals(gold: str) -> int:
    c = clean(gold).replace(",", "")
    return len(c.split(".", 1)[1]) if "." in c and c.split(".", 1)[1].isdigit() else 0


def round_to(x: Decimal, places: int) -> Decimal:
    return x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def number_matches(gold: str, answer: str, kind: str, precision: int | None) -> bool:
    """`integer` / `float` comparison of one answer with the gold (see the module docstring)."""
    g, a = to_number(gold), to_number(answer)
    if g is None or a is None:
        return False
    if kind == "integer":
        return a == a.to_integral_value() and a == g
    places = _decimals(gold) if precision is None else int(precision)
    return round_to(a, places) == round_to(g, places)


def list_matches(gold: str, answer: str, precision: int | None) -> bool:
    """Same numbers, same order: `[1, 2.5]` vs `[1, 2.50]`, `(1, 2.5)` or `1, 2.5`. A gold list that
    is not all numbers is compared as text (case and spaces ignored)."""
    gs, as_ = _items(gold), _items(answer)
    if gs is None:
        return text_key(gold) == text_key(answer)
    if as_ is None or len(gs) != len(as_):
        return False
    return all(number_matches(g, a, "float" if "." in g else "integer", precision)
               for g, a in zip(gs, as_))


def _items(s: str) -> list[str] | None:
    c = clean(s).strip()
    if c[:1] in "[(" and c[-1:] in "])":
        c = c[1:-1]
    parts = [p.strip() for p in c.split(",")]
    return parts if parts and all(to_number(p) is not None for p in parts) else None


def letter_of(i: int) -> str:
    return chr(ord("A") + i)


def choice_index(answer: str, choices: Sequence[str]) -> int | None:
    """The option an answer names (0-based), or None when it names none or contradicts itself."""
    n = len(choices)
    c = clean(answer)
    c = _OPTION_WORD.sub("", c, count=1) if _OPTION_WORD.match(c) else c
    m = _LETTER.fullmatch(c)
    if m:
        i = ord((m.group(1) or m.group(2)).upper()) - ord("A")
        return i if 0 <= i < n else None
    by_text = _by_text(c, choices)
    if by_text is not None:
        return by_text
    m = _LETTER_TEXT.fullmatch(c)
    if m:
        i = ord((m.group(1) or m.group(2)).upper()) - ord("A")
        if not 0 <= i < n:
            return None
        named = _by_text(m.group(3), choices)
        # "B. <text of C>" names two options: no credit.
        return i if named is None or named == i else None
    return _by_number(c, choices)


def _by_text(answer: str, choices: Sequence[str]) -> int | None:
    key = text_key(answer)
    hits = [i for i, ch in enumerate(choices) if text_key(ch) == key]
    return hits[0] if len(hits) == 1 else None


def _by_number(answer: str, choices: Sequence[str]) -> int | None:
    a = to_number(answer)
    if a is None:
        return None
    hits = [i for i, ch in enumerate(choices) if to_number(ch) == a]
    return hits[0] if len(hits) == 1 else None


def anchored_statement(text: str) -> str | None:
    """What the last "answer is" / "Answer:" statement says, up to the end of its sentence or line,
    or None. The reader for unboxed multiple-choice and list answers, which math-verify's
    extraction does not find (a letter, an option's words, a bracketed list)."""
    last = None
    for last in _ANCHOR.finditer(text):
        pass
    if last is None:
        return None
    rest = text[last.end():]
    end = len(rest)
    for stop in ("\n", ". ", "; "):
        j = rest.find(stop)
        if j != -1:
            end = min(end, j + (1 if stop == ". " else 0))
    said = rest[:end].strip()
    return said or None


def judge(kind: str, gold: str, answer: str, choices: Sequence[str] = (),
          precision: int | None = None) -> tuple[bool, str | None]:
    """(correct, how the answer was read): the option letter for `choice`, else the answer."""
    if kind == "choice":
        i = choice_index(answer, choices)
        return (i is not None and letter_of(i) == gold.strip()), (letter_of(i) if i is not None else None)
    if kind in ("integer", "float"):
        return number_matches(gold, answer, kind, precision), answer
    if kind == "list":
        return list_matches(gold, answer, precision), answer
    if kind == "text":
        return text_key(gold) == text_key(answer), answer
    raise ValueError(f"answer kind {kind!r} is not judged here (one of {', '.join(KINDS[:-1])})")
