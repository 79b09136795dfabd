"""Pull a final answer out of a math completion.

Order: the last `\\boxed{...}` (or `\\fbox{...}`) with balanced braces; failing that, "the answer
is X"; failing that, the last number. Scanning is iterative (no recursion, no regex backtracking)
so 10k-deep braces or 100k-character completions cost linear time.
"""

from __future__ import annotations

import re

# Longest answer we hand to the parser; longer ones are judged `too_long` without parsing.
MAX_ANSWER_CHARS = 512

_BOX_TOKENS = ("\\boxed", "\\fbox")
_ANSWER_IS = re.compile(r"answer is[:\s]*\$?([^\n$]{1,200}?)\$?(?:\.\s|\.$|\n|$)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?|-?\.\d+")


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


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} with balanced braces, or None.

    `\\boxed 5` (no braces) is accepted too. An unclosed box is skipped.
    """
    starts = []
    for tok in _BOX_TOKENS:
        j = text.find(tok)
        while j != -1:
            starts.append((j, len(tok)))
            j = text.find(tok, j + 1)
    if not starts:
        return None
    match = None
    for idx, tok_len in sorted(starts, reverse=True):
        j = idx + tok_len
        while j < len(text) and text[j] == " ":
            j += 1
        if j < len(text) and text[j] == "{":
            if match is None:
                match = _matching_braces(text)
            end = match.get(j)
            if end is not None:
                return text[j + 1 : end]
        elif j < len(text) and (text[j].isalnum() or text[j] in "-+.\\"):
            k = j
            while k < len(text) and not text[k].isspace() and text[k] != "$":
                k += 1
            return text[j:k]
    return None


def extract_math_answer(text: str) -> str | None:
    boxed = last_boxed(text)
    if boxed is not None and boxed.strip():
        return boxed.strip()
    tail = text[-4000:]  # phrases and numbers are looked for near the end only
    matches = list(_ANSWER_IS.finditer(tail))
    if matches:
        ans = matches[-1].group(1).strip().rstrip(".").strip()
        if ans:
            return ans
    nums = _NUMBER.findall(tail)
    if nums:
        return nums[-1].replace(",", "")
    return None
