"""The dashboard at scale (issue 19): a synthetic run of 50 checkpoints x 500 problems x n = 1024
(26M samples, built through the store API by boundlab.dashboard.synthetic), and the time the page's
requests take, through the real Starlette app (in-process client: routing, the store queries and
JSON encoding; not the browser's drawing).

- `overview_cold_s`: a fresh Index (scan + probes.jsonl) and what the page fetches first for views
  1, 2 and 4: /api/runs, /api/run/0/overview, and the bands of the base and the last checkpoint.
- `overview_warm_s`: the same requests again on a warm index (median of 5).
- `samples_page_s`: one page (20 samples) of a problem at the last checkpoint and at the base
  (median of 5, each on a different problem).
- `problem_map_cold_s` / `_warm_s`: view 3 (c/n of 500 problems x 51 probes; cold = the first
  GROUP BY over every probe's samples, then cached); `problem_map_cold_indexed_s`: a fresh Index
  (as a new dashboard process) whose counts come from the counts index the cold map left on disk.

    python bench/bench_dashboard.py --dir /tmp/dash_bench      # builds the store once, then reuses it
    python bench/bench_dashboard.py --quick                    # 5 checkpoints x 100 problems x n = 64
    python bench/bench_dashboard.py --browser                  # also end to end in headless Chromium

`--browser` starts `dashboard.py` on the run (a fresh process: its prewarm thread reads the map's
counts in the background, from the counts index the requests above left, or from the store with
`--no-index`) and opens the page in headless Chromium (selenium, /usr/bin/chromedriver):
`browser_views12_s` from navigation to views 1 and 2 shown (the SVG sketch or plotly's plot,
whichever first; the page's `views12-shown` mark, taken once a frame with both was painted, where
the page has it: `browser_views12_poll_s`, the same seen by polling from selenium, waits while
plotly.min.js runs on the main thread), `browser_views12_plotly_s` to both drawn by plotly, `browser_all_s` to every view
drawn (the map included), `browser_samples_s` from a click on a problem to its samples shown;
`browser_views12_profile_ms`: where the time to views 1-2 went (see PROFILE_JS);
`browser_reload_views12_plotly_s`: the same page reloaded twice, to views 1-2 drawn by plotly
(`browser_reload_plotly_ms`: the second reload's plotly.min.js timings);
`browser_api_ms`: each API request's [start, duration] in ms from navigation, as the browser saw it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# Where the time to views 1-2 went, in ms from navigation, read back from the page's Performance API
# the moment both are drawn: the HTML and scripts as loaded ([request start, response end]), the
# first API request's start, the API requests' [start, end] (those finished by then), and the page's
# own marks (app.js: `boundlab:*`; the time plotly.min.js finished running is `plotly-ready`).
# `plotly_run_ms`: from plotly.min.js's last byte to the page being able to use it (parse, compile
# and run, on the main thread or not: what the page waited for); without the mark (a page that
# loads plotly before its own script), to the first API request, which that page sends right after.
PROFILE_JS = """
const r = performance.getEntriesByType('resource'), nav = performance.getEntriesByType('navigation')[0];
const span = (e) => [Math.round(e.startTime), Math.round(e.responseEnd)];
const one = (tail) => { const e = r.find(x => x.name.split('?')[0].endsWith(tail)); return e ? span(e) : null; };
const api = r.filter(e => e.name.includes('/api/'));
const marks = {};
for (const m of performance.getEntriesByType('mark')) if (m.name.startsWith('boundlab:')) marks[m.name.slice(9)] = Math.round(m.startTime);
const p = one('plotly.min.js'), first = api.length ? Math.round(Math.min(...api.map(e => e.startTime))) : null;
const ready = marks['plotly-ready'] !== undefined ? marks['plotly-ready'] : first;
return {html: [Math.round(nav.requestStart), Math.round(nav.responseEnd)], dom_content_loaded: Math.round(nav.domContentLoadedEventEnd),
        app_js: one('app.js'), plotly_js: p, plotly_run_ms: p && ready !== null ? ready - p[1] : null,
        first_api_start: first, api: Object.fromEntries(api.map(e => [e.name.split('/api/')[1], span(e)])), marks};
"""


def browser_times(root: Path, store_path: Path, no_index: bool = False) -> dict:
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if no_index:  # a store never opened before: the server counts it (in the background)
        shutil.rmtree(os.environ["BOUNDLAB_CACHE"], ignore_errors=True)
    srv = subprocess.Popen([sys.executable, str(ROOT / "dashboard.py"), str(root / "runs"), "--port", str(port),
                            "--store", str(store_path)], stdout=subprocess.DEVNULL)
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1100"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        import urllib.request
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/version", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        t = time.perf_counter()
        d.get(f"http://127.0.0.1:{port}/")
        # Views 1 and 2 each shown: as the SVG sketch (sketch.js) or by plotly, whichever comes
        # first; then each drawn by plotly (one Plotly.react with every trace, so "has a trace" is
        # "drawn"). A page without the sketch meets both tests at once.
        shown = ("return ['plot-boundary', 'plot-steps'].every(id => document.querySelector("
                 "'#' + id + ' svg.sketch .sketch-line, #' + id + ' .scatterlayer .trace'))")
        WebDriverWait(d, 120, poll_frequency=0.02).until(lambda x: x.execute_script(shown))
        views12_poll = time.perf_counter() - t
        plotly_drawn = ("return ['plot-boundary', 'plot-steps'].every(id => "
                        "document.querySelectorAll('#' + id + ' .scatterlayer .trace').length > 0)")
        WebDriverWait(d, 120, poll_frequency=0.02).until(lambda x: x.execute_script(plotly_drawn))
        views12_plotly = time.perf_counter() - t
        profile = d.execute_script(PROFILE_JS)
        # A poll runs on the page's main thread, so while plotly.min.js runs there it waits: the
        # page's own mark (taken after the first frame with both sketches) is when they were seen.
        shown_ms = profile["marks"].get("views12-shown")
        views12 = shown_ms / 1000 if shown_ms is not None else views12_poll
        WebDriverWait(d, 300, poll_frequency=0.05).until(
            lambda x: x.execute_script("return document.body.dataset.ready === '1'"))
        everything = time.perf_counter() - t
        # Where the page's time went: each API request's duration as the browser saw it.
        fetches = d.execute_script(
            "return performance.getEntriesByType('resource').filter(e => e.name.includes('/api/'))"
            ".map(e => [e.name.split('/api/')[1], Math.round(e.startTime), Math.round(e.duration)])")
        t = time.perf_counter()
        d.find_element(By.CSS_SELECTOR, '#problem-map tr[data-p="7"]').click()
        WebDriverWait(d, 60, poll_frequency=0.05).until(
            lambda x: len(x.find_elements(By.CSS_SELECTOR, "#samples .sample")) >= 20)
        samples = time.perf_counter() - t
        # Two reloads: Chromium keeps V8's compiled code of a script seen twice, and uses it from
        # the third load on (where the HTTP cache may keep plotly.min.js: see server.plotly_js).
        reloads = []
        for _ in range(2):
            t = time.perf_counter()
            d.refresh()
            WebDriverWait(d, 120, poll_frequency=0.02).until(lambda x: x.execute_script(plotly_drawn))
            reloads.append(round(time.perf_counter() - t, 3))
        reload_profile = d.execute_script(PROFILE_JS)
    finally:
        d.quit()
        srv.terminate()
        srv.wait(10)
    return {"browser_views12_s": round(views12, 3), "browser_views12_poll_s": round(views12_poll, 3),
            "browser_views12_plotly_s": round(views12_plotly, 3),
            "browser_all_s": round(everything, 3),
            "browser_samples_s": round(samples, 3), "browser_views12_profile_ms": profile,
            "browser_reload_views12_plotly_s": reloads, "browser_reload_plotly_ms": {
                k: reload_profile[k] for k in ("plotly_js", "plotly_run_ms", "marks")},
            "browser_api_ms": {name: [start, dur] for name, start, dur in fetches}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/boundlab_dash_bench")
    ap.add_argument("--checkpoints", type=int, default=50)
    ap.add_argument("--problems", type=int, default=500)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--browser", action="store_true")
    ap.add_argument("--no-index", action="store_true",
                    help="with --browser: remove the counts index the requests above left first")
    a = ap.parse_args()
    if a.quick:
        a.checkpoints, a.problems, a.n = 5, 100, 64
    from starlette.testclient import TestClient

    from boundlab.dashboard.index import Index
    from boundlab.dashboard.server import make_app
    from boundlab.dashboard.synthetic import make_run
    from boundlab.probe.store import Store

    root = Path(a.dir) / f"c{a.checkpoints}_p{a.problems}_n{a.n}"
    store_path = root / "store.sqlite"
    built = None
    if not (root / "runs" / "run" / "probes.jsonl").is_file():
        root.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        st = Store(store_path)
        make_run(root / "runs" / "run", st, checkpoints=a.checkpoints, problems=a.problems, n=a.n,
                 step_every=10)
        st.close()
        built = round(time.perf_counter() - t, 1)

    # The dashboard's counts index (boundlab.dashboard.counts_cache) lives here, emptied first: the
    # first map below counts the store; `problem_map_cold_indexed_s` is a fresh Index reading the
    # index that map left; the browser's server (a new process) finds it too.
    cache = root / "counts_cache"
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["BOUNDLAB_CACHE"] = str(cache)
    t = time.perf_counter()
    index = Index([root / "runs"], store=str(store_path))
    client = TestClient(make_app(index))

    def overview() -> None:
        runs = client.get("/api/runs").json()
        ov = client.get(f"/api/run/{runs[0]['id']}/overview").json()
        for i in (0, len(ov["probes"]) - 1):
            assert client.get(f"/api/run/0/band/{i}").status_code == 200

    overview()
    cold = time.perf_counter() - t
    warm = []
    for _ in range(5):
        t = time.perf_counter()
        overview()
        warm.append(time.perf_counter() - t)

    t = time.perf_counter()
    m = client.get("/api/run/0/problems").json()
    map_cold = time.perf_counter() - t
    t = time.perf_counter()
    client.get("/api/run/0/problems")
    map_warm = time.perf_counter() - t
    t = time.perf_counter()
    m2 = TestClient(make_app(Index([root / "runs"], store=str(store_path)))).get("/api/run/0/problems").json()
    map_indexed = time.perf_counter() - t
    assert m2 == m, "the map read through the counts index differs from the one counted"

    last = len(index.run(0).rows) - 1
    page = max(min(3, a.n // 20 - 1), 0)
    pages = []
    for p in range(5):
        t = time.perf_counter()
        d = client.get(f"/api/run/0/problem/{p * 37 % a.problems}?probe={last}&page={page}").json()
        pages.append(time.perf_counter() - t)
        assert len(d["sides"]) == 2 and len(d["sides"][0]["samples"]) == min(20, a.n)
    extra = browser_times(root, store_path, a.no_index) if a.browser else {}
    if a.browser:
        extra["browser_counts_index"] = not a.no_index
    print(json.dumps({
        "checkpoints": a.checkpoints, "problems": a.problems, "n": a.n,
        "samples": (a.checkpoints + 1) * a.problems * a.n,
        "store_mb": round(store_path.stat().st_size / 1e6, 1), "build_s": built,
        "overview_cold_s": round(cold, 3), "overview_warm_s": round(statistics.median(warm), 3),
        "samples_page_s": round(statistics.median(pages), 3), "samples_page_max_s": round(max(pages), 3),
        "problem_map_cold_s": round(map_cold, 3), "problem_map_warm_s": round(map_warm, 3),
        "problem_map_cold_indexed_s": round(map_indexed, 3),
        "counts_index_files": sorted(p.name for p in cache.rglob("*.json")) if cache.is_dir() else [],
        "problem_map_cells": len(m["problems"]) * len(m["columns"]),
        **extra, "targets": {"overview_s": 2.0, "samples_page_s": 1.0},
    }, indent=2))


if __name__ == "__main__":
    main()
