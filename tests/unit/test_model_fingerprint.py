"""A model's fingerprint is its config and weights, not the training state saved beside them."""

from __future__ import annotations

import shutil
from pathlib import Path

from boundlab.models import model_fingerprint
from boundlab.worlds.toyworld import paths


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_trainer_state_beside_the_weights_does_not_change_the_fingerprint(tmp_path):
    base = paths.base_model_dir()
    a, b = _copy(base, tmp_path / "run_a" / "checkpoint-2"), _copy(base, tmp_path / "run_b" / "checkpoint-2")
    # What HF's Trainer writes beside a checkpoint's weights; training_args.bin holds the run dir.
    for d, tag in ((a, b"run_a"), (b, b"run_b")):
        for name in ("training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth", "rng_state_1.pth"):
            (d / name).write_bytes(tag * 10)
    assert model_fingerprint(str(a)) == model_fingerprint(str(b)) == model_fingerprint(str(base))


def test_different_weights_or_config_change_it(tmp_path):
    base = paths.base_model_dir()
    w = _copy(base, tmp_path / "w")
    data = bytearray((w / "model.safetensors").read_bytes())
    data[-1] ^= 1  # one bit of one weight
    (w / "model.safetensors").write_bytes(bytes(data))
    assert model_fingerprint(str(w)) != model_fingerprint(str(base))
    # A weights file in .bin form (pytorch_model.bin) still counts.
    b = _copy(base, tmp_path / "b")
    (b / "pytorch_model.bin").write_bytes(b"weights")
    assert model_fingerprint(str(b)) != model_fingerprint(str(base))


def test_weights_rewritten_in_place_with_same_size_and_mtime_get_a_new_digest(tmp_path):
    """Identity is content: a cache keyed by (path, size, mtime) handed the old weights' digest to
    new weights written over them with the same size and a restored mtime, so the probe key, and
    with it the old stored samples, were reused for a different model."""
    import os
    import time

    from boundlab.probe.store import Store

    w = _copy(paths.base_model_dir(), tmp_path / "w")
    f = w / "model.safetensors"
    store = Store(str(tmp_path / "store.sqlite"))
    try:
        before = model_fingerprint(str(w), store)
        assert model_fingerprint(str(w), store) == before  # the cache hit gives the same answer
        st = f.stat()
        time.sleep(0.05)  # past the kernel's coarse timestamp tick, so the rewrite's ctime moves
        data = bytearray(f.read_bytes())
        data[-1] ^= 1
        with f.open("r+b") as fh:  # in place: same inode, same size
            fh.write(bytes(data))
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime put back
        after = f.stat()
        assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
        changed = model_fingerprint(str(w), store)
        assert changed != before
        assert changed == model_fingerprint(str(w))  # the digest of the new content, cache or not
    finally:
        store.close()
