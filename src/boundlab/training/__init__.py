"""Training: `train.py` builds model, task, reward and algorithm, and tracks the boundary."""
