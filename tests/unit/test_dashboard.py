"""The dashboard's index, JSON API and security, through Starlette's test client (no browser; the
browser tests are tests/integration/test_dashboard_browser.py)."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the dashboard extra is not installed (pip install -e '.[dashboard]')")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
from starlette.testclient import TestClient  # noqa: E402

from boundlab.dashboard import data  # noqa: E402
from boundlab.dashboard.export import export  # noqa: E402
from boundlab.dashboard.index import Index  # noqa: E402
from boundlab.dashboard.server import check_host, make_app  # noqa: E402
from boundlab.dashboard.synthetic import make_run  # noqa: E402
from boundlab.probe.estimator import pass_at_k_matrix  # noqa: E402
from boundlab.probe.store import SampleRow, Store  # noqa: E402
from boundlab.rundir.io import append_jsonl  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))  # the counts index, kept here
    store = Store(tmp_path / "store.sqlite")
    rows = make_run(tmp_path / "runs" / "run", store, checkpoints=3, problems=12, n=8)
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the given paths")
    index = Index([tmp_path / "runs"], store=str(tmp_path / "store.sqlite"))
    # the page's own origin: any other Host is refused (test_a_foreign_host_gets_400_and_no_data)
    return tmp_path, store, rows, index, TestClient(make_app(index), base_url="http://127.0.0.1:8050")


def test_api_serves_each_view(world):
    tmp, store, rows, index, client = world
    runs = client.get("/api/runs").json()
    assert [r["probes"] for r in runs] == [4] and runs[0]["has_store"]
    ov = client.get("/api/run/0/overview").json()
    assert [p["step"] for p in ov["probes"]] == [0, 2, 4, 6]
    assert ov["probes"][2]["pass@n"] == pytest.approx(rows[2]["pass@n"])
    m = client.get("/api/run/0/problems").json()
    assert len(m["problems"]) == 12 and len(m["columns"]) == 4


def test_problem_map_sorted_by_base_rate_with_lost_and_gained(world):
    tmp, store, rows, index, client = world
    m = client.get("/api/run/0/problems").json()
    base = m["columns"][0]["cells"]
    rates = [c / n for c, n in base]
    assert rates == sorted(rates, reverse=True)
    for col, row in zip(m["columns"][1:], rows[1:]):
        lost = [j for j, (b, x) in enumerate(zip(base, col["cells"])) if b[0] > 0 and x[0] == 0]
        gained = [j for j, (b, x) in enumerate(zip(base, col["cells"])) if b[0] == 0 and x[0] > 0]
        assert col["lost"] == lost and col["gained"] == gained
        # The same counts the run itself wrote (make_run counted them from its draws).
        assert (len(col["lost"]), len(col["gained"])) == (row["lost"], row["gained"])
        # And the map's c/n give back the row's pass@n.
        mat = pass_at_k_matrix(np.array([x[1] for x in col["cells"]]), np.array([x[0] for x in col["cells"]]), row["n"])
        assert mat[:, -1].mean() == pytest.approx(row["pass@n"], abs=1e-9)


def test_map_counts_only_the_rows_n_when_the_store_holds_more(world):
    tmp, store, rows, index, client = world
    key, pid = rows[0]["probe_key"], "p0000"
    before = {p: tuple(x) for p, x in zip(*(lambda m: (m["problems"], m["columns"][0]["cells"]))(
        client.get("/api/run/0/problems").json()))}
    # A later probe with a larger n appended samples under the same key (n is not in the key).
    store.add_samples(key, [SampleRow(pid, 100 + i, "more", "19", True, None, "correct", 3) for i in range(8)])
    fresh = Index([tmp / "runs"], store=str(tmp / "store.sqlite"))
    m = data.problem_map(fresh, fresh.run(0))
    cells = dict(zip(m["problems"], m["columns"][0]["cells"]))
    assert tuple(cells[pid]) == before[pid] and cells[pid][1] == 8


def test_curve_band_brackets_the_rows_curve(world):
    tmp, store, rows, index, client = world
    for i, row in enumerate(rows):
        b = client.get(f"/api/run/0/band/{i}").json()
        assert len(b["low"]) == row["n"]
        for lo, mid, hi in zip(b["low"], row["curve"], b["high"]):
            assert lo - 1e-6 <= mid <= hi + 1e-6
        assert b["high"][0] > b["low"][0]


def test_samples_paginated_at_checkpoint_and_base(world):
    tmp, store, rows, index, client = world
    d = client.get("/api/run/0/problem/0?probe=2&page=0").json()
    assert [s["who"] for s in d["sides"]] == ["checkpoint", "base"]
    side = d["sides"][0]
    assert side["total"] == 8 and [s["idx"] for s in side["samples"]] == list(range(8))
    assert side["samples"][0]["text"].startswith(d["problem"] + " step 4 sample 0")
    stored = {s.idx: s for s in store.samples(rows[2]["probe_key"], d["problem"])}
    assert [s["correct"] for s in side["samples"]] == [stored[i].correct for i in range(8)]
    # Pages of PAGE samples: 8 samples fit on page 0, page 1 is empty.
    assert client.get("/api/run/0/problem/0?probe=2&page=1").json()["sides"][0]["samples"] == []


@pytest.mark.parametrize("url", [
    "/api/run/1/overview", "/api/run/-1/overview", "/api/run/0/band/99", "/api/run/0/problem/12?probe=0",
    "/api/run/0/problem/0?probe=9", "/api/run/0/problem/0?probe=0&page=-1", "/api/run/x/overview",
    "/api/run/0/problem/p0000", "/static/../secret.txt", "/static/..%2f..%2fsecret.txt",
    "/static/%2e%2e/%2e%2e/secret.txt", "/../secret.txt", "/secret.txt", "/static/index.html",
    "/api/run/0/problem/..%2f..%2fsecret.txt", "/runs/run/probes.jsonl", "/static/app.py",
])
def test_no_url_reaches_outside_the_index(world, url):
    tmp, store, rows, index, client = world
    r = client.get(url)
    assert r.status_code in (403, 404), (url, r.status_code)
    assert "outside the given paths" not in r.text


def test_symlinked_dir_outside_the_paths_is_not_indexed(tmp_path):
    store = Store(tmp_path / "store.sqlite")
    make_run(tmp_path / "inside" / "run", store, checkpoints=1, problems=3, n=2)
    make_run(tmp_path / "outside" / "run", store, checkpoints=1, problems=3, n=2, seed=1)
    (tmp_path / "inside" / "link").symlink_to(tmp_path / "outside")
    index = Index([tmp_path / "inside"], store=str(tmp_path / "store.sqlite"))
    assert [r.path for r in index.runs] == [(tmp_path / "inside" / "run").resolve()]


def test_page_has_no_inline_script_and_a_strict_csp(world):
    tmp, store, rows, index, client = world
    r = client.get("/")
    assert r.status_code == 200
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    assert "<script>" not in r.text  # every script has a src: an injected inline one could not run
    js = client.get("/static/app.js").text
    assert "innerHTML" not in js.replace("never innerHTML", "") and "textContent" in js
    assert "innerHTML" not in client.get("/static/sketch.js").text
    assert client.get("/static/plotly.min.js").status_code == 200


def test_plotly_is_cached_for_good_only_under_its_versioned_url(world):
    tmp, store, rows, index, client = world
    page = client.get("/").text
    url = page.split('<meta name="boundlab-plotly" content="')[1].split('"')[0]
    assert url.startswith("static/plotly.min.js?v=") and len(url) > len("static/plotly.min.js?v=")
    assert '<script src="static/plotly.min.js' not in page  # app.js loads it after its first requests
    fixed = client.get("/" + url)
    assert fixed.status_code == 200 and "immutable" in fixed.headers["cache-control"]
    assert fixed.headers["content-security-policy"]
    for other in ("/static/plotly.min.js", "/static/plotly.min.js?v=stale"):
        assert client.get(other).headers["cache-control"] == "no-cache"


def _map_via_new_index(tmp):
    return TestClient(make_app(Index([tmp / "runs"], store=str(tmp / "store.sqlite"))),
                      base_url="http://localhost").get(
        "/api/run/0/problems").json()


def test_counts_index_serves_a_fresh_process_without_counting_the_store(world, monkeypatch):
    tmp, store, rows, index, client = world
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # a finished store: no frames in the WAL
    first = client.get("/api/run/0/problems").json()
    files = list((tmp / "cache" / "dashboard").glob("counts-*.json"))
    assert len(files) == 1
    calls = []
    real = Store.counts
    monkeypatch.setattr(Store, "counts", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    assert _map_via_new_index(tmp) == first
    assert calls == []  # every count came from the index
    # A re-verification (replace_verdicts: every sample of one problem now correct) writes to the
    # store and invalidates the index: the next process counts again and shows the new count.
    key, pid, n = rows[1]["probe_key"], first["problems"][-1], rows[1]["n"]
    assert first["columns"][1]["cells"][-1][0] < n
    fixed = [dataclasses.replace(r, correct=True) for r in store.samples(key, pid)]
    assert store.replace_verdicts(key, fixed) == len(fixed)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    again = _map_via_new_index(tmp)
    assert calls != [] and again["columns"][1]["cells"][-1] == [n, n]


def test_counts_read_while_the_store_changed_are_not_kept(tmp_path):
    from boundlab.dashboard.counts_cache import CountsCache

    store = Store(tmp_path / "store.sqlite")
    rows = make_run(tmp_path / "runs" / "run", store, checkpoints=1, problems=3, n=4)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    key = rows[0]["probe_key"]
    fc = CountsCache(store.path, tmp_path / "cache")
    before = fc.stamp()
    got = store.counts(key)
    store.add_samples(key, [SampleRow("p0000", 50, "x", "19", True, None, "correct", 1)])  # meanwhile
    fc.put(key, 4, got, before)
    fc.flush()
    assert fc.get(key, 4) is None and not fc.file.exists()
    fc.put(key, 4, store.counts(key, n_max=4), fc.stamp())  # read after the write: kept
    fc.flush()
    assert [pc.c for pc in CountsCache(store.path, tmp_path / "cache").get(key, 4)] == [pc.c for pc in got]
    store.close()


def test_a_corrupt_counts_index_is_named_and_the_store_counted(world, capsys):
    tmp, store, rows, index, client = world
    first = client.get("/api/run/0/problems").json()
    (f,) = (tmp / "cache" / "dashboard").glob("counts-*.json")
    f.write_text("{not json")
    assert _map_via_new_index(tmp) == first
    err = capsys.readouterr().err
    assert "ignoring the counts index" in err and str(f) in err


def test_live_a_new_probe_shows_without_restart(world):
    tmp, store, rows, index, client = world
    v0 = client.get("/api/version").json()["version"]
    extra = dict(rows[-1], step=8)
    append_jsonl(tmp / "runs" / "run" / "probes.jsonl", extra)
    assert client.get("/api/version").json()["version"] != v0
    assert [p["step"] for p in client.get("/api/run/0/overview").json()["probes"]] == [0, 2, 4, 6, 8]


@pytest.mark.parametrize("host,ok", [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                     ("0.0.0.0", False), ("192.168.1.5", False), ("example.org", False)])
def test_bind_loopback_unless_asked(host, ok):
    if ok:
        check_host(host, allow_remote=False)
    else:
        with pytest.raises(ValueError, match="--allow-remote"):
            check_host(host, allow_remote=False)
        check_host(host, allow_remote=True)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8050", "127.0.0.1.nip.io", "localhost.evil.example",
                                  "192.168.1.5:8050", "0.0.0.0", "", "[::2]:8050"])
@pytest.mark.parametrize("path", ["/", "/api/runs", "/api/run/0/overview", "/api/run/0/problem/0", "/static/app.js"])
def test_a_foreign_host_gets_400_and_no_data(world, host, path):
    """DNS rebinding: a page on another name that resolves to 127.0.0.1 is refused before any route."""
    tmp, store, rows, index, client = world
    r = client.get(path, headers={"host": host})
    assert r.status_code == 400
    assert r.text == "Invalid host header"  # nothing of the runs, the page or the store
    assert "p0000" not in r.text and "synthetic" not in r.text


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8050", "localhost", "LOCALHOST:9", "[::1]", "[::1]:8050"])
def test_loopback_names_are_served(world, host):
    tmp, store, rows, index, client = world
    r = client.get("/api/runs", headers={"host": host})
    assert r.status_code == 200 and [x["probes"] for x in r.json()] == [4]


def test_allow_remote_serves_any_host(world):
    tmp, store, rows, index, client = world
    remote = TestClient(make_app(index, allow_remote=True), base_url="http://dash.lab.example:8050")
    assert remote.get("/api/runs").status_code == 200
    assert client.get("/api/runs", headers={"host": "dash.lab.example:8050"}).status_code == 400


def test_cli_refuses_a_remote_bind_and_a_missing_path(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    r = subprocess.run([sys.executable, str(ROOT / "dashboard.py"), str(tmp_path), "--host", "0.0.0.0"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "--allow-remote" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = subprocess.run([sys.executable, str(ROOT / "dashboard.py"), str(tmp_path / "nope")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "no such path" in r.stderr


def test_export_is_one_file_with_escaped_payload(tmp_path):
    store = Store(tmp_path / "store.sqlite")
    evil = "</script><script>window.__pwned=1</script>"
    make_run(tmp_path / "runs" / evil.replace("/", "_"), store, checkpoints=2, problems=4, n=4)
    index = Index([tmp_path / "runs"], store=str(tmp_path / "store.sqlite"))
    out = export(index, tmp_path / "dash.html")
    html = out.read_text()
    assert "<script src=" not in html and "static/app.css" not in html
    payload = html.split("window.BOUNDLAB_STATIC = ", 1)[1].split(";</script>", 1)[0]
    assert "</script" not in payload
    got = json.loads(payload)
    assert got["runs"]["0"]["overview"]["probes"][0]["kind"] == "base"
    assert "_script><script>window.__pwned=1<_script>" in got["runs_list"][0]["label"]


def test_export_payload_holds_no_markup_characters(tmp_path):
    """Every "<", ">" and "&" of the inline JSON is a \\u escape: "<!--<script>" (which would leave the
    real "</script>" unable to end the element) and "</script>" cannot reach HTML's tokenizer."""
    store = Store(tmp_path / "store.sqlite")
    evil = "<!--<script>&amp;\u2028</script>"
    make_run(tmp_path / "runs" / evil.replace("/", "_"), store, checkpoints=1, problems=3, n=2)
    index = Index([tmp_path / "runs"], store=str(tmp_path / "store.sqlite"))
    html = export(index, tmp_path / "dash.html").read_text()
    payload = html.split("window.BOUNDLAB_STATIC = ", 1)[1].split(";</script>", 1)[0]
    assert not set(payload) & set("<>&\u2028\u2029")
    assert "\\u003c!--\\u003cscript\\u003e\\u0026amp;" in payload
    assert json.loads(payload)["runs_list"][0]["label"].endswith(evil.replace("/", "_"))


def test_a_corrupt_probes_file_is_named_not_shown_as_empty_silently(world, capsys):
    tmp, store, rows, index, client = world
    f = tmp / "runs" / "run" / "probes.jsonl"
    lines = f.read_text().splitlines()
    f.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    ov = client.get("/api/run/0/overview").json()
    assert len(ov["probes"]) == 4  # the last good rows stay on the page
    err = capsys.readouterr().err
    assert "probes.jsonl:2" in err and err.count("\n") == 1
    client.get("/api/run/0/overview")
    assert capsys.readouterr().err == ""  # said once per change, not on every poll


def test_sweep_dirs_and_their_swept_values(tmp_path):
    store = Store(tmp_path / "store.sqlite")
    for i, lr in enumerate(["1e-4", "4e-4"]):
        d = tmp_path / "out" / "sweep" / f"{i}_grpo"
        make_run(d, store, checkpoints=2, problems=3, n=2, seed=i)
        (d / ".hydra").mkdir()
        (d / ".hydra" / "overrides.yaml").write_text(f"- debug=smoke\n- algo.learning_rate={lr}\n")
    make_run(tmp_path / "out" / "single", store, checkpoints=1, problems=3, n=2, seed=5)
    index = Index([tmp_path / "out"], store=str(tmp_path / "store.sqlite"))
    sw = data.sweep(index)["sweeps"]
    assert [s["name"] for s in sw] == ["out/sweep"] and sw[0]["swept"] == ["algo.learning_rate"]
    assert [r["values"] for r in sw[0]["runs"]] == [{"algo.learning_rate": "1e-4"}, {"algo.learning_rate": "4e-4"}]
    assert sw[0]["runs"][0]["steps"] == [2, 4]
    # A run dir given by itself is not a sweep member, whatever lies beside it.
    alone = Index([tmp_path / "out" / "sweep" / "0_grpo"], store=str(tmp_path / "store.sqlite"))
    assert data.sweep(alone)["sweeps"] == []
