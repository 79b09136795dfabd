"""Every test runs with its own HOME, store and W&B dir, and a cache that is not the user's: nothing a
test resolves or writes lands under the home the session started with (tests/conftest.py)."""

import os
import subprocess
import sys
from pathlib import Path


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(path).expanduser().resolve().relative_to(root)
        return True
    except ValueError:
        return False


def test_home_store_cache_and_wandb_are_not_the_users(real_home):
    for var in ("HOME", "BOUNDLAB_CACHE", "BOUNDLAB_STORE", "WANDB_DIR", "WANDB_CONFIG_DIR", "HF_HOME"):
        assert not _inside(Path(os.environ[var]), real_home), (var, os.environ[var])
    assert Path(os.path.expanduser("~")).resolve() != real_home


def test_config_paths_resolve_outside_the_users_home(real_home):
    # What a run composes: the SmolLM2 conversion cache and the probe store.
    from test_configs import _compose

    cfg = _compose("probe", ["model=smollm2_135m"])
    assert _inside(Path(cfg.model.cache_dir), Path(os.environ["BOUNDLAB_CACHE"]))
    assert Path(cfg.store.path) == Path(os.environ["BOUNDLAB_STORE"])
    for p in (cfg.model.cache_dir, cfg.store.path):
        assert not _inside(Path(p), real_home), p


def test_the_dashboard_index_is_written_to_the_isolated_cache(tmp_path, real_home):
    from boundlab.dashboard.counts_cache import CountsCache, cache_dir

    assert _inside(cache_dir(), Path(os.environ["BOUNDLAB_CACHE"]))
    store = tmp_path / "store.sqlite"
    store.write_bytes(b"")
    c = CountsCache(store)
    assert _inside(c.file, Path(os.environ["BOUNDLAB_CACHE"]))
    assert not _inside(c.file, real_home)


def test_a_child_process_inherits_the_isolated_home(real_home):
    out = subprocess.run([sys.executable, "-c", "import os; print(os.path.expanduser('~'))"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert out == os.environ["HOME"] and not _inside(Path(out), real_home)
