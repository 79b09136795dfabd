"""What the toy worlds share: the one way a world reaches code another world also uses. (The
exception, stated in pyproject's import contracts: the visual world is built on toyworld2, whose
problems it draws, whose base it starts from and whose verifier and audit it uses.)

- `pretrain`: the one pretraining loop (warmup-cosine schedule, AdamW, length-weighted micro-batches,
  bit-identical resume from a partial state), `encode_pairs`, `lr_at` and `save`. Each world keeps its
  own data (its corpus and how a row is encoded) and its model's settings.
- `model`, `tokenizer`: the tiny Llama-style causal LM and the character-level tokenizer builder;
  each world picks its characters and sizes.
- `measure`: `sample` (n completions per prompt) and `pass_at_k`, for a world's own self-checks.
- `paths`: the `${toy_model:...}` config resolver over a registry each world fills with its shipped
  models (`base`, `teacher`: toyworld; `base2`, `teacher2`: toyworld2; `vlm`: toyvision).

The core (probe, sampling, verify, algos, ...) imports no world and not this kit; the entry layer
(boundlab.builtins) imports the worlds, which register themselves. Named to move as it is into a future
`boundlab/worlds/` wing (as `worlds/common`).
"""
