"""Answer clean-ups applied before math-verify sees an extracted answer (verifier version 3).

Each one fixes a real misreading by math-verify 0.9 (issue #11), and each applies only where the
reading is unambiguous:

- **Thousands separators in LaTeX spacing**: `2\\,220`, `2\\;220`, `2\\ 220`, `2~220`, `2{,}220`
  and `2,\\!220` are 2220. math-verify reads `2\\,220` as the juxtaposition 2 * 220 -> 222... a false
  negative against 2220 and a false positive against 222. Only a 1-3 digit group followed by groups
  of exactly three digits is joined (`1\\,000\\,000`); `(1,\\,2)` or `x\\,y` are left alone.
- **A number in `\\text{}`/`\\textbf{}`/`\\mathrm{}`/`\\mathbf{}`** (AoPS style
  `\\textbf{(073)}`) is unwrapped, parentheses and leading zeros dropped: 73. math-verify reads it as
  a symbol named `073`. Anything else inside the wrapper (`\\text{(C)}`, `\\text{east}`) is left as
  it was.
- **Number words in the "answer is" fallback** (`number_word_answer`): with no box, a completion
  whose *last* anchored statement ("the answer is", "final answer:", "answer =") is one number word
  from zero to twenty ending the sentence ("The answer is nine.") answers that number. Policy: one
  word only (`twenty-one`, `one hundred` and `one of ...` are not read), only right after the anchor
  and only before `.`, `!`, `;`, `,`, `$`, `*` (bold), a line end or the end of the text, so a word
  that starts a longer phrase is never taken for the answer. Larger numbers are written in digits in
  practice, and reading arbitrary number phrases would guess more than it reads.

- **E-notation**: a whole answer `4.5e33` (Minerva's golds) is `4.5 \\times 10^{33}`. math-verify
  reads `4.5e33` as 4.5 * e * 33 (Euler's e), so the gold `4.5e33` rejected `4.5 \\times 10^{33}`.
  Only a whole answer that is one number in e-notation is rewritten.

An empty `\\boxed{}` is handled in `extract.py` (`no_answer` unless an anchored "the answer is X"
statement gives one; never a fallback to an unanchored number).
"""

from __future__ import annotations

import re
from functools import lru_cache

_SEP = r"(?:\\,|\\;|\\:|\\ |~|\{,\}|,\\!)"
# A 1-3 digit group (not preceded by a digit, a dot or a separator) and >= 1 group of three digits
# after a LaTeX-spacing separator, not followed by another digit.
_THOUSANDS = re.compile(rf"(?<![\d.])(\d{{1,3}})((?:{_SEP}\d{{3}})+)(?!\d)")
_SEP_RE = re.compile(_SEP)
_WRAP = re.compile(r"^\\(?:text|textbf|mathrm|mathbf|textrm)\s*\{(.*)\}$", re.S)
_NUMBER = re.compile(r"^\(?\s*(-?)(\d+)(\.\d+)?\s*\)?$")
_ENOTATION = re.compile(r"^(-?\d+(?:\.\d+)?)[eE]([+-]?\d{1,4})$")

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen", "twenty")
_ANCHOR = re.compile(r"(?i)\b(?:final answer|answer)\s*(?:is\b|:|=)")
_WORD_AFTER = re.compile(r"(?i)\s*(?:\*\*|\$)?\s*(" + "|".join(WORDS) + r")(?![\w-])\s*(?=[.!;,$*\n]|$)")


def join_thousands(s: str) -> str:
    """`2\\,220` -> `2220` (see the module docstring)."""
    if "\\" not in s and "~" not in s and "{,}" not in s:
        return s
    return _THOUSANDS.sub(lambda m: m.group(1) + _SEP_RE.sub("", m.group(2)), s)


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0


def unwrap_text_number(s: str) -> str:
    """`\\textbf{(073)}` -> `73`; anything that is not a number inside the wrapper is unchanged."""
    inner = s.strip()
    wrapped = False
    while True:
        m = _WRAP.match(inner)
        if not m or not _balanced(m.group(1)):
            break
        inner, wrapped = m.group(1).strip(), True
    if not wrapped:
        return s
    n = _NUMBER.match(inner)
    if not n:
        return s
    return n.group(1) + (n.group(2).lstrip("0") or "0") + (n.group(3) or "")


def e_notation(s: str) -> str:
    """`4.5e33` -> `4.5 \\times 10^{33}` (a whole answer only)."""
    m = _ENOTATION.match(s.strip())
    if not m:
        return s
    return f"{m.group(1)} \\times 10^{{{int(m.group(2))}}}"


# Answers repeat (a model says `12` a hundred times): each distinct string is normalized once.
@lru_cache(maxsize=1 << 16)
def normalize_answer(s: str) -> str:
    return e_notation(unwrap_text_number(join_thousands(s)))


def number_word_answer(text: str) -> str | None:
    """The number (as digits) of a last "answer is <number word>" statement, else None."""
    last = None
    for last in _ANCHOR.finditer(text):
        pass
    if last is None:
        return None
    m = _WORD_AFTER.match(text, last.end())
    return str(WORDS.index(m.group(1).lower())) if m else None
