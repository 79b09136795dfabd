"""The second-edition toy world's character-level tokenizer: the first edition's, plus `#`, the
brackets and `>` (the visible state's separator)."""

from __future__ import annotations

from boundlab.toyworld.tokenizer import CHARS
from boundlab.toyworld.tokenizer import build_tokenizer as _build

CHARS2 = CHARS + tuple("#()>")


def build_tokenizer():
    return _build(CHARS2, max_length=128)
