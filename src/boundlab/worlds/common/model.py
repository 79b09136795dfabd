"""The tiny causal LM of the toy worlds: a Llama-style decoder (RMSNorm, SwiGLU, RoPE) with about
1M parameters.

Llama, not Qwen2: transformers 5 maps `model_type: qwen2` to `Qwen2Tokenizer` when
`AutoTokenizer` loads a model folder, and that class replaces our character-level pre-tokenizer and
`Fuse` decoder with its byte-level ones. For `llama` it trusts `tokenizer_config.json` and loads the
tokenizer exactly as saved (a test checks this on the shipped folders).
"""

from __future__ import annotations

from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerBase


def build_config(tokenizer: PreTrainedTokenizerBase, hidden: int = 128, layers: int = 4,
                 heads: int = 4, intermediate: int = 512, max_positions: int = 64) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        # toyworld: prompts are 8 tokens and completions at most ~22; 64 leaves room for templates
        # (toyworld2 passes 128).
        max_position_embeddings=max_positions,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )


def build_model(tokenizer: PreTrainedTokenizerBase, **kw) -> LlamaForCausalLM:
    return LlamaForCausalLM(build_config(tokenizer, **kw))
