"""Run a probe without touching the caller's random state.

A probe in the training process (inline probing) seeds and draws from the global RNGs: the HF sampler
calls `torch.manual_seed` per chunk, and anything it imports may use Python's `random` or NumPy's
global generator. The trainer draws from the same generators (dropout, data order, sampling of
rollouts), so without isolation `probe.n` would change the trained weights, and a run killed after a
probe and resumed (which restores the RNG states saved *before* that probe) would diverge from the
run that was never killed. `isolated_rng` saves every generator a probe can touch and puts it back.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch


def _cuda_devices() -> list[int]:
    # Only the current device: the probe samples on "cuda", which is the current device, and forking
    # every visible device would create a CUDA context on each (rank 0 of a multi-GPU job would then
    # hold memory on every rank's GPU). HF saves and restores the CUDA RNG whenever CUDA is present,
    # so it is forked whenever CUDA is present, even if this process has not used it yet.
    if torch.cuda.is_available():
        return [torch.cuda.current_device()]
    return []


@contextmanager
def isolated_rng() -> Iterator[None]:
    """Torch (CPU and the current CUDA device), Python `random` and NumPy's global state are the
    same after the block as before it, whatever the block draws or seeds."""
    py_state = random.getstate()
    np_state = np.random.get_state()
    devices = _cuda_devices()
    try:
        with torch.random.fork_rng(devices=devices, enabled=True):
            yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
