"""The dashboard in real headless Chromium (Debian's chromium + chromium-driver, driven by selenium
through /usr/bin/chromedriver; Selenium Manager is kept offline), on the output of a real smoke run.

Skipped, with the reason, only when chromium or chromedriver is absent; CI installs both
(scripts/install-system-deps.sh). Screenshots of each view go to $BOUNDLAB_DASHBOARD_SHOTS when set
(docs/img/dashboard/ holds the committed ones), else to the test's tmp dir.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from browser_kit import browser, ready, served, severe  # noqa: E402 (imported first: it skips without chromium)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

STATIC = Path(__file__).resolve().parents[2] / "src" / "boundlab" / "dashboard" / "static"
from boundlab.probe.store import SampleRow, Store  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EVIL = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">A:7'
VIEWS = ["view-boundary", "view-steps", "view-map", "view-samples", "view-groups", "view-sweep"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _env(tmp):
    return dict(os.environ, BOUNDLAB_STORE=str(tmp / "store.sqlite"), WANDB_MODE="offline",
                HF_HUB_OFFLINE="1", WANDB_SILENT="true", PYTHONPATH=str(ROOT / "src"))








def load(d, url):
    d.get_log("browser")  # drain what earlier tests left in the log
    d.get(url)
    ready(d)




def shoot(d, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    for v in VIEWS:
        e = d.find_element(By.ID, v)
        d.execute_script("arguments[0].scrollIntoView()", e)
        p = out / f"{v.removeprefix('view-')}.png"
        e.screenshot(str(p))
        shots.append(p)
    return shots


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dash")
    root = tmp / "runs"
    run = root / "run"
    # The cheapest real run with probes and a store: debug=smoke (base + checkpoints 2 and 4), with
    # the base-vs-base null turned back on (one more 32-sample probe) for view 1's null band.
    p = subprocess.run([sys.executable, str(ROOT / "train.py"), "debug=smoke", "backend.torch_threads=1",
                        "task.toy2.train_mix={H1:0.5,B3:0.5}", "probe.null_seed_offset=1", f"hydra.run.dir={run}"],
                       cwd=tmp, env=_env(tmp),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [json.loads(x) for x in (run / "probes.jsonl").read_text().splitlines()]
    store = Store(tmp / "store.sqlite")
    base = rows[0]
    # A stored completion holding markup, one past each base problem's n (the map counts only n).
    store.add_samples(base["probe_key"], [SampleRow(pc.problem_id, 100, EVIL, "7", False, None, "wrong", 9)
                                          for pc in store.counts(base["probe_key"])])
    store.close()
    # A sweep dir for view 6: the run's probes under two override values (the view is under test
    # here, not the numbers).
    for i, lr in enumerate(["1e-4", "4e-4"]):
        d = root / "sweep" / f"{i}_grpo"
        (d / ".hydra").mkdir(parents=True)
        shutil.copy(run / "probes.jsonl", d / "probes.jsonl")
        (d / ".hydra" / "overrides.yaml").write_text(f"- debug=smoke\n- algo.learning_rate={lr}\n")
    with served(root, _env(tmp)) as (url, _, d):
        cks = [r for r in rows if r["kind"] == "checkpoint"]
        assert [r["kind"] for r in rows[:2]] == ["base", "null"] and len(cks) == 2
        yield {"url": url, "tmp": tmp, "run": run, "root": root, "rows": rows, "cks": cks, "driver": d}


def test_every_view_renders_without_console_errors(site):
    d = site["driver"]
    load(d, site["url"])
    assert d.execute_script("return document.querySelectorAll('#plot-boundary .scatterlayer .trace').length") >= 3
    names = d.execute_script("return document.getElementById('plot-boundary').data.map(t => t.name)")
    assert {"base", "null band (base re-probed)", "base 95% band"} <= set(names), names
    assert d.execute_script("return document.querySelectorAll('#plot-steps .scatterlayer .trace').length") >= 2
    assert len(d.find_elements(By.CSS_SELECTOR, "#problem-map tbody tr")) == site["rows"][0]["problems"]
    assert d.execute_script("return document.querySelectorAll('#plot-groups .scatterlayer .trace').length") > 0
    assert len(d.find_elements(By.CSS_SELECTOR, "#groups-table tr")) > 1
    WebDriverWait(d, 10).until(lambda x: x.execute_script(
        "return document.querySelectorAll('#sweeps .js-plotly-plot .scatterlayer .trace').length") >= 2)
    assert "algo.learning_rate" in d.find_element(By.ID, "sweeps").text
    assert severe(d) == []


def test_step_control_changes_the_plot(site):
    d = site["driver"]
    load(d, site["url"])
    sel = "return document.getElementById('plot-boundary').data.find(t => t.name.endsWith('(selected)'))"
    first = d.execute_script(sel + ".name")
    assert first == f"step {site['cks'][-1]['step']} (selected)"
    d.execute_script("const s = document.getElementById('step-slider'); s.value = 0;"
                     "s.dispatchEvent(new Event('input'))")
    WebDriverWait(d, 10).until(lambda x: x.execute_script(sel + ".name") != first)
    assert d.execute_script(sel + ".name") == f"step {site['cks'][0]['step']} (selected)"
    assert d.find_element(By.ID, "plot-boundary").get_attribute("data-step") == str(site["cks"][0]["step"])
    assert severe(d) == []


def test_click_on_a_problem_shows_its_samples_and_markup_stays_text(site):
    d = site["driver"]
    load(d, site["url"])
    d.find_element(By.CSS_SELECTOR, '#problem-map tr[data-p="0"]').click()
    WebDriverWait(d, 10).until(lambda x: x.find_elements(By.CSS_SELECTOR, "#samples .sample"))
    sides = d.find_elements(By.CSS_SELECTOR, "#samples .side")
    assert [s.get_attribute("data-who") for s in sides] == ["checkpoint", "base"]
    texts = [e.text for e in d.find_elements(By.CSS_SELECTOR, '#samples .side[data-who="base"] pre')]
    assert EVIL in texts  # shown as text
    assert d.execute_script("return window.__pwned") is None  # and never run
    assert d.find_elements(By.CSS_SELECTOR, "#samples script, #samples img") == []
    shoot(d, Path(os.environ.get("BOUNDLAB_DASHBOARD_SHOTS") or site["tmp"] / "shots"))
    assert severe(d) == []


def test_next_page_button_shows_the_next_samples(site):
    d = site["driver"]
    load(d, site["url"])
    d.find_element(By.CSS_SELECTOR, '#problem-map tr[data-p="0"]').click()
    WebDriverWait(d, 10).until(lambda x: x.find_elements(By.CSS_SELECTOR, "#samples .sample"))
    pid = d.find_element(By.CSS_SELECTOR, '#problem-map tr[data-p="0"] td.pid').text

    def shown():  # {side: sample indices shown}, read in one go (the view is rebuilt on a click)
        return d.execute_script("return Object.fromEntries([...document.querySelectorAll('#samples .side')].map("
                                "s => [s.dataset.who, [...s.querySelectorAll('.sample')].map(e => Number(e.dataset.idx))]))")

    # The smoke run stores 4 samples a problem (one page): 36 more of this problem on each side,
    # past the run's n (so no count in the map changes), make two pages. The server reads them live.
    store = Store(site["tmp"] / "store.sqlite")
    sides = (("checkpoint", site["cks"][-1]), ("base", site["rows"][0]))
    try:
        for who, row in sides:
            store.add_samples(row["probe_key"], [SampleRow(pid, 200 + i, f"{who} extra {i}: A:{i}", str(i), i % 2 == 0,
                                                           None, "correct" if i % 2 == 0 else "wrong", 5) for i in range(36)])
        # each side's stored sample indices, in the order the page pages them
        want = {who: [s.idx for s in store.samples(row["probe_key"], pid)] for who, row in sides}
    finally:
        store.close()
    assert all(len(v) > 20 for v in want.values()), want  # two pages on each side
    d.find_element(By.CSS_SELECTOR, '#problem-map tr[data-p="0"]').click()  # page 1 again, with them
    WebDriverWait(d, 10).until(lambda x: x.execute_script(
        "const b = document.getElementById('samples-next'); return b !== null && !b.disabled"))
    assert shown() == {who: v[:20] for who, v in want.items()}
    assert d.execute_script("return document.getElementById('samples-prev').disabled") is True
    d.find_element(By.ID, "samples-next").click()  # a real click on the button
    # read in the page (the view is rebuilt on a click: a WebElement found before may go stale)
    WebDriverWait(d, 10).until(lambda x: x.execute_script(
        "const t = document.getElementById('samples-title'); return t !== null && t.textContent.includes('page 2')"))
    assert shown() == {who: v[20:40] for who, v in want.items()}  # the next samples, not page 1's
    assert d.execute_script("return document.getElementById('samples-prev').disabled") is False
    assert severe(d) == []


def test_views_1_2_are_sketched_until_plotly_is_there(site):
    """plotly.min.js is parsed and run after the data of views 1-2 is in; until then sketch.js
    draws the same traces as SVG. Blocked here, so the sketch stays and can be counted."""
    d = site["driver"]
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    d.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*plotly.min.js*"]})
    count = "return document.querySelectorAll(arguments[0]).length"
    try:
        d.get(site["url"])
        WebDriverWait(d, 15).until(lambda x: "plotly.min.js did not load" in x.find_element(By.ID, "live-status").text)
        # the curves are sketched first, the bands added when their requests are answered
        WebDriverWait(d, 10).until(lambda x: x.execute_script(count, "#plot-boundary svg.sketch polygon") == 3)
        assert d.execute_script(count, "svg.sketch") == 2
        # View 1: each checkpoint and the base as a line, and the three bands (null, base, the
        # selected checkpoint) as areas; view 2: pass@1 and pass@n, a marker per checkpoint each.
        assert d.execute_script(count, "#plot-boundary svg.sketch .sketch-line") == len(site["cks"]) + 1
        assert d.execute_script(count, "#plot-boundary svg.sketch polygon") == 3
        assert d.execute_script(count, "#plot-steps svg.sketch .sketch-line") == 2
        assert d.execute_script(count, "#plot-steps svg.sketch circle") == 2 * len(site["cks"])
        assert d.find_element(By.ID, "plot-boundary").get_attribute("data-drawn") == "sketch"
        out = Path(os.environ.get("BOUNDLAB_DASHBOARD_SHOTS") or site["tmp"] / "shots")
        out.mkdir(parents=True, exist_ok=True)
        d.find_element(By.ID, "view-boundary").screenshot(str(out / "boundary-sketch.png"))
    finally:
        d.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        d.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": False})
    load(d, site["url"])  # plotly allowed: it replaces the sketch
    assert d.execute_script(count, "svg.sketch") == 0
    assert d.find_element(By.ID, "plot-boundary").get_attribute("data-drawn") == "plotly"
    assert severe(d) == []


@pytest.mark.parametrize("path", ["static/..%2f..%2f..%2fetc%2fpasswd", "static/../../etc/passwd",
                                  "api/run/0/problem/..%2f..%2fstore.sqlite", "run/probes.jsonl",
                                  "api/run/9/overview", "static/%2e%2e/%2e%2e/etc/passwd"])
def test_a_url_outside_the_paths_is_refused(site, path):
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(site["url"] + path, timeout=5)
    assert e.value.code in (403, 404)
    d = site["driver"]
    d.get(site["url"] + path)
    assert "root:" not in d.page_source and "SQLite" not in d.page_source


def test_export_renders_offline(site):
    out = site["tmp"] / "export.html"
    p = subprocess.run([sys.executable, str(ROOT / "dashboard.py"), str(site["root"]), "--export", str(out)],
                       env=_env(site["tmp"]), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    d = browser(offline=True)
    try:
        d.get(out.as_uri())
        ready(d)
        for plot in ("plot-boundary", "plot-steps", "plot-groups", "plot-sweep-0"):
            assert d.execute_script(f"return document.querySelectorAll('#{plot} .scatterlayer .trace').length") > 0, plot
        assert len(d.find_elements(By.CSS_SELECTOR, "#problem-map tbody tr")) == site["rows"][0]["problems"]
        assert severe(d) == []
    finally:
        d.quit()


def test_live_a_new_probe_appears_without_a_reload(site):
    # The mechanism behind "within 10 s": the page polls the server every POLL_MS (<= 10 s) and draws
    # what a poll brings. The wait below is generous, so a loaded machine does not fail the test; a
    # page that never polls still does.
    poll_ms = re.search(r"const POLL_MS = (\d+);", (STATIC / "app.js").read_text())
    assert poll_ms and 0 < int(poll_ms.group(1)) <= 10_000
    d = site["driver"]
    load(d, site["url"])
    row = dict(site["cks"][-1], step=site["cks"][-1]["step"] + 2)
    code = ("import json, sys; from boundlab.rundir.io import append_jsonl; "
            "append_jsonl(sys.argv[1], json.loads(sys.argv[2]))")
    subprocess.run([sys.executable, "-c", code, str(site["run"] / "probes.jsonl"), json.dumps(row)],
                   env=_env(site["tmp"]), check=True, timeout=60)
    want = f"step {row['step']}"
    WebDriverWait(d, 120).until(lambda x: want in x.find_element(By.ID, "step-label").text)
    assert d.execute_script("return document.getElementById('plot-boundary').data.some(t => t.name.startsWith('"
                            + want + "'))")
    assert severe(d) == []


def test_a_real_runs_training_curves_and_wandb_run(site):
    """Issue 38, on the smoke run's own files: the training curves are its latest complete
    checkpoint's trainer_state.json, and its offline W&B run (WANDB_MODE=offline) is named with
    the `wandb sync` command of the folder it wrote."""
    from boundlab.rundir.checkpoints import latest_complete, step_of

    d = site["driver"]
    load(d, site["url"])  # run 0 is site["run"] (the sweep's copies sort after it)
    last = latest_complete(site["run"] / "checkpoints")
    assert last is not None
    hist = json.loads((last / "trainer_state.json").read_text())["log_history"]
    WebDriverWait(d, 20).until(lambda x: x.execute_script(
        "return document.getElementById('plot-train').dataset.drawn === 'plotly'"))
    got = {t[0]: t[1] for t in d.execute_script(
        "return document.getElementById('plot-train').data.map(t => [t.name, t.x])")}
    assert {"reward", "loss"} <= set(got), got
    assert got["reward"] == [h["step"] for h in hist if "reward" in h] and got["reward"]
    assert f"checkpoint-{step_of(last)}" in d.find_element(By.ID, "train-note").text
    info = json.loads((site["run"] / "run_info.json").read_text())
    text = d.find_element(By.ID, "wandb-info").text
    assert info["wandb_run_id"] in text and "offline" in text, text
    sync = d.find_element(By.ID, "wandb-sync").text
    assert sync.startswith("wandb sync ") and Path(sync.split(" ", 2)[2]).is_dir(), sync
    assert info["wandb_run_id"] in sync
    assert severe(d) == []
