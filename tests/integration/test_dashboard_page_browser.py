"""The page itself in headless Chromium (Debian's chromium + chromium-driver, as
test_dashboard_browser.py drives them), against the real dashboard server and the real exported
file: data that looks like markup, requests under a foreign name, and how the views read (axes,
toolbar, numbering, empty boxes). The runs are synthetic (boundlab.dashboard.synthetic), so no
training runs here: a sweep of two runs (n = 16, checkpoints at steps 2 and 4, no per-problem tags,
no checkpoint crossing the base) whose dir names, overrides and completions hold
`</script><script>...` and `<!--<script>` (the sequence after which HTML's tokenizer no longer lets
the real `</script>` end the element).
"""

import http.client
import os
import subprocess
import sys
from pathlib import Path

import pytest

from browser_kit import browser, ready, served, severe  # noqa: E402 (imported first: it skips without chromium)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from boundlab.dashboard.synthetic import make_run  # noqa: E402
from boundlab.probe.store import Store  # noqa: E402
from boundlab.rundir import PROBES_FILE  # noqa: E402
from boundlab.rundir.io import write_jsonl  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# A dir name cannot hold "/", so the run names close their script with "<\\script>"; the overrides
# and completions hold the real "</script>".
NAME = "<!--<script>window.__pwned=1<\\script>&amp;"
OVERRIDE = "</script><script>window.__pwned=2</script><!--<script>"
COMPLETION = "A:7 </script><script>window.__pwned=3</script><!--<script> <img src=x onerror=window.__pwned=4>"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _text(pid, step, idx, ok):
    return f"{pid} {COMPLETION} {idx}"










@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("markup")
    root = tmp / "runs"
    store = Store(tmp / "store.sqlite")
    for i, lr in enumerate(["1e-4", OVERRIDE]):
        run = root / "sweep" / f"{i}_{NAME}"
        rows = make_run(run, store, checkpoints=2, problems=4, n=16, seed=i, text=_text, bootstrap_iters=20)
        for r in rows[1:]:
            r["crossing_k"] = None  # no checkpoint crosses the base
        write_jsonl(run / PROBES_FILE, rows)
        (run / ".hydra").mkdir()
        (run / ".hydra" / "overrides.yaml").write_text(f"- 'model.name={lr}'\n")
    store.close()
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp / "store.sqlite"), BOUNDLAB_CACHE=str(tmp / "cache"),
               PYTHONPATH=str(ROOT / "src"))
    with served(root, env) as (url, port, d):
        yield {"url": url, "port": port, "tmp": tmp, "root": root, "env": env, "driver": d}


def _page_is_intact(d, scripts: int):
    """The page's own elements, in place and nothing more: its scripts, its six views, no image."""
    assert d.execute_script("return window.__pwned") is None
    assert d.execute_script("return document.scripts.length") == scripts
    assert [s.get_attribute("id") for s in d.find_elements(By.CSS_SELECTOR, "main > section")] == [
        "view-boundary", "view-steps", "view-map", "view-groups", "view-samples", "view-sweep"]
    assert d.find_elements(By.CSS_SELECTOR, "img") == []
    labels = [o.text for o in d.find_elements(By.CSS_SELECTOR, "#run-select option")]
    assert len(labels) == 2 and all(NAME in x for x in labels), labels  # the name, shown as text
    WebDriverWait(d, 10).until(lambda x: x.execute_script(
        "return document.querySelectorAll('#sweeps .js-plotly-plot .scatterlayer .trace').length") >= 2)
    assert OVERRIDE in d.find_element(By.ID, "sweeps").text


def test_served_page_shows_markup_as_text(site):
    d = site["driver"]
    d.get_log("browser")
    d.get(site["url"])
    ready(d)
    # sketch.js, app.js, and plotly.min.js added by app.js
    WebDriverWait(d, 20).until(lambda x: x.execute_script("return typeof window.Plotly") == "object")
    _page_is_intact(d, scripts=3)
    d.find_element(By.CSS_SELECTOR, '#problem-map tr[data-p="0"]').click()
    WebDriverWait(d, 10).until(lambda x: x.find_elements(By.CSS_SELECTOR, "#samples .sample"))
    texts = [e.text for e in d.find_elements(By.CSS_SELECTOR, "#samples pre")]
    assert texts and all(COMPLETION in t for t in texts), texts[:2]
    assert d.find_elements(By.CSS_SELECTOR, "#samples script, #samples img") == []
    assert d.execute_script("return window.__pwned") is None
    assert severe(d) == []


def test_exported_file_shows_markup_as_text(site):
    out = site["tmp"] / "export.html"
    p = subprocess.run([sys.executable, str(ROOT / "dashboard.py"), str(site["root"]), "--export", str(out)],
                       env=site["env"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    d = browser(offline=True)
    try:
        d.get(out.as_uri())
        ready(d)  # with the payload's "<!--<script>" read as markup, app.js never runs
        _page_is_intact(d, scripts=3)  # plotly, the payload, app.js: all inline
        assert d.execute_script("return Object.keys(window.BOUNDLAB_STATIC.runs).length") == 2
        assert severe(d) == []
    finally:
        d.quit()


@pytest.mark.parametrize("host", ["rebind.evil.example", "rebind.evil.example:{port}", "10.0.0.1"])
def test_a_foreign_host_header_gets_400_from_the_real_server(site, host):
    host = host.format(port=site["port"])
    for path in ("/", "/api/runs", "/api/run/0/problem/0"):
        c = http.client.HTTPConnection("127.0.0.1", site["port"], timeout=10)
        c.request("GET", path, headers={"Host": host})
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        assert r.status == 400 and body == "Invalid host header", (path, r.status, body[:200])
    ok = http.client.HTTPConnection("127.0.0.1", site["port"], timeout=10)
    ok.request("GET", "/api/runs", headers={"Host": f"localhost:{site['port']}"})
    assert ok.getresponse().status == 200
    ok.close()


# -- how the views read (issue 38) ---------------------------------------------------------------
def _loaded(site):
    d = site["driver"]
    d.get_log("browser")
    d.get(site["url"])
    ready(d)
    WebDriverWait(d, 20).until(lambda x: x.execute_script(
        "return document.getElementById('plot-steps').dataset.drawn === 'plotly'"
        " && document.getElementById('plot-boundary').dataset.drawn === 'plotly'"))
    return d


def _ticks(d, plot: str, axis: str) -> list[str]:
    """The tick labels plotly drew on `axis` (xtick, ytick, y2tick) of `plot`, left to right / bottom up."""
    return d.execute_script(
        "return [...document.querySelectorAll('#' + arguments[0] + ' g.' + arguments[1] + ' text')]"
        ".map(t => t.textContent)", plot, axis)


def test_log_k_ticks_are_powers_of_two_up_to_n(site):
    d = _loaded(site)
    assert _ticks(d, "plot-boundary", "xtick") == ["1", "2", "4", "8", "16"]
    WebDriverWait(d, 10).until(lambda x: x.execute_script(
        "return document.querySelectorAll('#plot-sweep-curve-0 .scatterlayer .trace').length") >= 2)
    assert _ticks(d, "plot-sweep-curve-0", "xtick") == ["1", "2", "4", "8", "16"]


def test_crossing_k_axis_reads_cleanly_when_nothing_crosses(site):
    d = _loaded(site)
    labels = _ticks(d, "plot-steps", "y2tick")
    assert labels == ["1", "2", "4", "8", "16"], labels
    names = d.execute_script("return document.getElementById('plot-steps').data.map(t => t.name)")
    assert "crossing k (none: no curve crosses the base)" in names


def test_step_axes_show_whole_steps(site):
    d = _loaded(site)
    for plot in ("plot-steps", "plot-sweep-0"):
        WebDriverWait(d, 10).until(lambda x: _ticks(x, plot, "xtick"))
        labels = _ticks(d, plot, "xtick")
        assert labels and all(t.isdigit() for t in labels), (plot, labels)
    assert _ticks(d, "plot-steps", "xtick") == ["2", "4"]


def test_toolbar_does_not_cover_the_legend(site):
    d = _loaded(site)
    for plot in ("plot-boundary", "plot-steps"):
        rects = d.execute_script(
            "const p = document.getElementById(arguments[0]);"
            "const r = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };"
            "return [r(p.querySelector('.modebar')), ...[...p.querySelectorAll('.legend .traces')].map(r)];", plot)
        bar, entries = rects[0], rects[1:]
        assert entries and bar[2] > bar[0] and bar[3] > bar[1], (plot, rects)
        for e in entries:  # no legend entry intersects the toolbar's box
            assert e[3] <= bar[1] or e[1] >= bar[3] or e[2] <= bar[0] or e[0] >= bar[2], (plot, bar, e)
    # view 2's legend sits right of its crossing-k axis title, not over it
    title, legend = d.execute_script(
        "const p = document.getElementById('plot-steps');"
        "const r = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };"
        "return [r(p.querySelector('.g-y2title')), r(p.querySelector('.legend'))];")
    assert title[2] > title[0] and title[2] <= legend[0], (title, legend)


def test_the_sweeps_last_checkpoint_plot_has_its_base_curves(site):
    d = _loaded(site)
    WebDriverWait(d, 10).until(lambda x: x.execute_script(
        "return document.querySelectorAll('#plot-sweep-curve-0 .scatterlayer .trace').length") >= 2)
    names = d.execute_script("return document.getElementById('plot-sweep-curve-0').data.map(t => t.name)")
    bases = [x for x in names if x.startswith("base of ")]
    assert len(bases) == 2 and sum(x.endswith("last checkpoint") for x in names) == 2, names  # two seeds: two bases
    n = d.execute_script("return document.getElementById('plot-sweep-curve-0').data.find(t => t.name.startsWith('base')).x.length")
    assert n == 16


def test_sections_are_numbered_in_page_order(site):
    d = _loaded(site)
    heads = [h.text for h in d.find_elements(By.CSS_SELECTOR, "main > section > h2")]
    assert [int(h.split(".", 1)[0]) for h in heads] == [1, 2, 3, 4, 5, 6], heads


def test_a_run_without_tags_gets_no_empty_plot_box(site):
    d = _loaded(site)
    assert "no per-problem tag" in d.find_element(By.ID, "groups-table").text
    box = d.execute_script("const b = document.getElementById('plot-groups').getBoundingClientRect(); return b.height")
    assert box == 0
    assert d.execute_script("return document.querySelector('#view-groups').getBoundingClientRect().height") < 120
    assert severe(d) == []


def test_runs_compared_with_markup_names_stay_text(site):
    """Issue 38's compare list over every indexed run: names holding markup are shown as text, in
    the list, the legend and the notes, and the page keeps its structure."""
    d = _loaded(site)
    WebDriverWait(d, 20).until(lambda x: x.find_elements(By.ID, "compare-run-1"))
    for i in (0, 1):
        d.find_element(By.ID, f"compare-run-{i}").click()
    WebDriverWait(d, 20).until(lambda x: x.execute_script(
        "const p = document.getElementById('plot-compare'); return p.dataset.drawn === 'plotly' && p.data.length === 4"))
    assert all(NAME in x.text for x in d.find_elements(By.CSS_SELECTOR, "#compare-pick label"))
    names = d.execute_script("return document.getElementById('plot-compare').data.map(t => t.name)")
    assert sum(NAME in x for x in names) == 4, names
    _page_is_intact(d, scripts=3)
    assert d.find_elements(By.CSS_SELECTOR, "#compare-pick script, #compare-diffs script, #plot-compare img") == []
    assert severe(d) == []
