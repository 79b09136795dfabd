"""The toy world's character-level tokenizer (built by `boundlab.worlds.common.tokenizer`)."""

from __future__ import annotations

from transformers import PreTrainedTokenizerFast

from boundlab.worlds.common.tokenizer import EOS, PAD, SPECIALS, UNK, build_char_tokenizer

__all__ = ["CHARS", "EOS", "PAD", "SPECIALS", "UNK", "build_tokenizer"]

# Every character the world writes, plus a space so a stray template space is not <unk>.
CHARS = tuple("0123456789+-*=,;:QA ")


def build_tokenizer(chars: tuple[str, ...] = CHARS, max_length: int = 64) -> PreTrainedTokenizerFast:
    return build_char_tokenizer(chars, max_length)
