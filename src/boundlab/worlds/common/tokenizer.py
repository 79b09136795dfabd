"""A character-level tokenizer for the toy worlds, built locally with `tokenizers` and wrapped in a
`PreTrainedTokenizerFast` so it saves and loads through `AutoTokenizer`.

Two details matter (DESIGN.md, "Tiny tokenizers"): `padding_side="left"` goes to the constructor,
or it does not survive save and load; and the decoder is `Fuse`, or decoded single characters come
out separated by spaces. The tokenizer adds no special tokens when encoding (no post-processor):
prompts stay exactly `Q:...;`, and trainers append EOS to completions themselves.
"""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
SPECIALS = (PAD, EOS, UNK)


def build_char_tokenizer(chars: tuple[str, ...], max_length: int) -> PreTrainedTokenizerFast:
    """One token per character of `chars` (in that order, after the specials): a world's ids are
    fixed by its character tuple, which its shipped tokenizer was saved with."""
    vocab = {t: i for i, t in enumerate(SPECIALS + tuple(chars))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    # One token per character (WordLevel would otherwise look up whole words).
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(list(SPECIALS))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        padding_side="left",
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        model_max_length=max_length,
        clean_up_tokenization_spaces=False,
    )
