"""Every integration test is `slow` (end to end on CPU: minutes, not seconds), so the fast subset,
`python -m pytest -q -m "not slow"`, is the unit tests that are not marked slow themselves."""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.slow)
