"""The second-edition toy world's character-level tokenizer: the first edition's characters, plus
`#`, the brackets and `>` (the visible state's separator)."""

from __future__ import annotations

from boundlab.worlds.common.tokenizer import build_char_tokenizer

# The first edition's characters in their order (toyworld.tokenizer.CHARS; the ids of the shipped
# tokenizer depend on it), then this world's own.
CHARS2 = tuple("0123456789+-*=,;:QA ") + tuple("#()>")


def build_tokenizer():
    return build_char_tokenizer(CHARS2, max_length=128)
