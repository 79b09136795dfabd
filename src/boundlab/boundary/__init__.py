"""The boundary loop: probing checkpoints while a run trains. `tracker` (probe the base once, then
each checkpoint against it; probes.jsonl, boundary.csv/png, W&B), `callback` (the TrainerCallback
that marks checkpoints complete and probes them inline), `watch` (the detached `probe.py watch=`
worker). It sits above probing (boundlab.probe) and below training and the entry layer."""
