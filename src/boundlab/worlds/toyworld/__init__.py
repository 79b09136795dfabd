"""The out-of-the-box world: a synthetic arithmetic task with a checkable chain of thought, a
character-level tokenizer, a tiny pretrained base model and a teacher, shipped under `assets/`.

- `world`: problems, splits, the strategies and the pretraining corpus mix.
- `task`: registers the `toy_arith` task; `verifier`: registers the `toy` verifier.
- `tokenizer`, `model`: build the tokenizer and the ~1M-parameter Qwen2-style model.
- `pretrain`: trains the base and the teacher; `measure`: samples them and reports the numbers.
- `paths`: where the shipped base and teacher live.
"""
