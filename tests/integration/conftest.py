"""Every integration test is `slow` (end to end on CPU: minutes, not seconds), so the fast subset,
`python -m pytest -q -m "not slow"`, is the unit tests that are not marked slow themselves."""

from pathlib import Path

import pytest

from smoke_kit import build_sft_run, build_smoke_run  # tests/integration, shared

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.slow)


# ---- artifacts built once per session (a trained smoke run costs a minute of train.py) ----

_BUILT: dict[str, object] = {}


@pytest.fixture
def built_once():
    """`built_once(name, build)`: build() the first time a test asks for `name`, the cached result
    after that. Function-scoped on purpose: the first build runs inside that test's isolated
    environment (tests/conftest.py: HOME, W&B, caches), never the session's real one."""

    def get(name: str, build):
        if name not in _BUILT:
            _BUILT[name] = build()
        return _BUILT[name]

    return get


@pytest.fixture
def smoke_run(tmp_path_factory, built_once):
    """The session's one finished `train.py debug=smoke` run (smoke_kit.build_smoke_run): (run dir,
    its probe store, the train.py process). Read it in place; a test that changes the run or its
    store works on a copy (smoke_kit.copy_smoke_run)."""
    return built_once("smoke_run", lambda: build_smoke_run(tmp_path_factory.mktemp("smoke_run")))


@pytest.fixture
def sft_run(tmp_path_factory, built_once):
    """The session's one finished `algo=sft_distill` smoke run (smoke_kit.build_sft_run): (run dir,
    the train.py process). Read it in place."""
    return built_once("sft_run", lambda: build_sft_run(tmp_path_factory.mktemp("sft_run")))
