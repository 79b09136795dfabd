"""The dashboard's counts index decides what the problem map shows, so it is checked against its
content: a changed count, a malformed row (even under a recomputed digest), a truncated or non-JSON
file is ignored in one line and the store is counted; the map stays the store's."""

import json

import pytest

pytest.importorskip("starlette", reason="the dashboard extra is not installed")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
from starlette.testclient import TestClient  # noqa: E402

from boundlab.dashboard import counts_cache  # noqa: E402
from boundlab.dashboard.index import Index  # noqa: E402
from boundlab.dashboard.server import make_app  # noqa: E402
from boundlab.dashboard.synthetic import make_run  # noqa: E402
from boundlab.probe.store import Store  # noqa: E402


def _map(tmp):
    index = Index([tmp / "runs"], store=str(tmp / "store.sqlite"))
    try:
        return TestClient(make_app(index)).get("/api/run/0/problems").json()
    finally:
        index.close()


def _redigest(raw: dict) -> dict:
    raw = {k: v for k, v in raw.items() if k != "sha256"}
    return {**raw, "sha256": counts_cache._digest(raw)}


def _bump_a_count(raw: dict) -> dict:
    """Change one stored c to another valid value (digest left as it was)."""
    for rows in raw["counts"].values():
        for r in rows:
            if r[2] < r[1]:
                r[2] += 1
                return raw
    raise AssertionError("no count to change")


def _short_row(raw: dict) -> dict:
    rows = next(iter(raw["counts"].values()))
    rows[0] = rows[0][:3]
    return _redigest(raw)


def _c_over_n(raw: dict) -> dict:
    rows = next(iter(raw["counts"].values()))
    rows[0][2] = rows[0][1] + 1
    return _redigest(raw)


def _no_digest(raw: dict) -> dict:
    raw.pop("sha256")
    return raw


EDITS = {"a changed count": _bump_a_count, "a short row under a fresh digest": _short_row,
         "c > n under a fresh digest": _c_over_n, "no digest": _no_digest}
BREAKS = {"truncated": lambda b: b[: len(b) // 2], "not JSON": lambda b: b"{not json", "empty": lambda b: b""}


@pytest.fixture()
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))
    store = Store(tmp_path / "store.sqlite")
    make_run(tmp_path / "runs" / "run", store, checkpoints=3, problems=12, n=8)
    store.close()  # a finished store: its stamp holds still
    first = _map(tmp_path)
    (f,) = (tmp_path / "cache" / "dashboard").glob("counts-*.json")
    return tmp_path, first, f


@pytest.mark.parametrize("how", list(EDITS) + list(BREAKS))
def test_a_tampered_counts_index_is_ignored_and_the_map_stays_right(world, capsys, how):
    tmp, first, f = world
    assert _map(tmp) == first  # the index is read as it is when it is intact
    capsys.readouterr()
    if how in EDITS:
        f.write_text(json.dumps(EDITS[how](json.loads(f.read_text()))))
    else:
        f.write_bytes(BREAKS[how](f.read_bytes()))
    assert _map(tmp) == first
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ignoring the counts index" in err and str(f) in err
    assert "Traceback" not in err
    assert _map(tmp) == first and capsys.readouterr().err == ""  # rewritten whole by the count
