"""The toy worlds, each a plug-in the core never imports (an import-linter contract):

- `toyworld`: the first edition, three-operand arithmetic (`experiment=toy1`);
- `toyworld2`: the second edition, the default task (`task=toy2`): precedence decisions, the
  counter-rule bracket family and an out-of-support tier;
- `toyvision`: toy2's problems drawn as pictures, for a tiny VLM (`task=toy_vision model=toy_vlm`);
- `common`: what they share (the pretraining loop, the tiny Llama and char tokenizer, the
  `${toy_model:...}` registry).

`boundlab.builtins` imports them, and each registers its tasks, verifiers and shipped models by the
names saved runs use (`toy_arith`, `toy2`, `toy_vision`; `${toy_model:base2}`, ...).
"""
