"""Issue 38's run views in headless Chromium (Debian's chromium + chromium-driver, as
test_dashboard_page_browser.py drives them), against the real dashboard server and the exported
file: training curves beside the boundary (the latest *complete* checkpoint's trainer_state.json),
the W&B run id with its link or its `wandb sync` command, and any indexed runs compared across
sweep folders with their probes' differences named. Synthetic run dirs (boundlab.dashboard.synthetic),
so no training runs:

    runs/sweepA/0   W&B online (entity me, project proj); checkpoint-4 complete, checkpoint-6 not
    runs/sweepA/1   W&B offline, its offline-run folder in the run dir; no checkpoint yet
    runs/sweepB/0   another sweep folder; probed at temperature 0.7 (the others: unset)
    runs/zcopy/run  in no sweep; sweepA/0's probes (so the same base probe: drawn once)
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from browser_kit import browser, served, severe  # noqa: E402 (imported first: it skips without chromium)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from boundlab.dashboard.synthetic import make_run  # noqa: E402
from boundlab.probe.store import Store  # noqa: E402
from boundlab.rundir import CHECKPOINT_COMPLETE, RUN_INFO  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
KEYS = ["reward", "reward_std", "kl", "entropy", "loss"]








def _checkpoint(run: Path, step: int, steps: list[int], complete: bool, scale: float = 1.0) -> None:
    ck = run / "checkpoints" / f"checkpoint-{step}"
    ck.mkdir(parents=True)
    hist = [{"step": s, "reward": scale * s / 10, "reward_std": 0.1, "kl": 0.01 * s, "entropy": 1 - 0.01 * s,
             "loss": 0.5 / s} for s in steps] + [{"step": steps[-1], "train_runtime": 12.0}]
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": hist}))
    if complete:
        (ck / CHECKPOINT_COMPLETE).write_text("ok\n")


def _logger(run: Path, run_id: str, **logger) -> None:
    (run / ".hydra").mkdir(exist_ok=True)
    (run / ".hydra" / "config.yaml").write_text("logger:\n" + "".join(f"  {k}: {v}\n" for k, v in logger.items()))
    (run / RUN_INFO).write_text(json.dumps({"wandb_run_id": run_id, "algo": "grpo"}))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runs")
    root = tmp / "runs"
    store = Store(tmp / "store.sqlite")
    a0, a1, b0 = root / "sweepA" / "0", root / "sweepA" / "1", root / "sweepB" / "0"
    make_run(a0, store, checkpoints=2, problems=4, n=16, seed=0, bootstrap_iters=20)
    make_run(a1, store, checkpoints=2, problems=4, n=16, seed=1, bootstrap_iters=20)
    make_run(b0, store, checkpoints=2, problems=4, n=16, seed=2, bootstrap_iters=20,
             settings={"n": 16, "temperature": 0.7})
    store.close()
    (root / "sweepB" / "multirun.yaml").write_text("{}\n")
    (root / "zcopy" / "run").mkdir(parents=True)
    shutil.copy(a0 / "probes.jsonl", root / "zcopy" / "run" / "probes.jsonl")
    _checkpoint(a0, 4, [1, 2, 3, 4], complete=True)
    _checkpoint(a0, 6, [1, 2, 3, 4, 5, 6], complete=False, scale=9.0)  # being written: never read
    _logger(a0, "abc123", name="wandb", entity="me", project="proj", mode="online")
    _logger(a1, "xyz789", name="wandb", entity="me", project="proj")
    offline = a1 / "wandb" / "offline-run-20261206_010203-xyz789"
    offline.mkdir(parents=True)
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp / "store.sqlite"), BOUNDLAB_CACHE=str(tmp / "cache"),
               PYTHONPATH=str(ROOT / "src"))
    with served(root, env) as (url, _, d):
        yield {"url": url, "tmp": tmp, "root": root, "env": env, "driver": d, "offline": offline}


def _load(d, url):
    d.get_log("browser")
    d.get(url)
    WebDriverWait(d, 30).until(lambda x: x.execute_script("return document.body.dataset.ready === '1'"))
    labels = [o.text for o in d.find_elements(By.CSS_SELECTOR, "#run-select option")]
    assert [x.split(" (")[0] for x in labels] == ["runs/sweepA/0", "runs/sweepA/1", "runs/sweepB/0",
                                                      "runs/zcopy/run"], labels


def _pick_run(d, rid: int, until: str):
    Select(d.find_element(By.ID, "run-select")).select_by_value(str(rid))
    WebDriverWait(d, 20).until(lambda x: x.execute_script(until))


def _ticks(d, plot: str) -> list[str]:
    return d.execute_script("return [...document.querySelectorAll('#' + arguments[0] + ' g.xtick text')]"
                            ".map(t => t.textContent)", plot)


def _check_training(d):
    WebDriverWait(d, 20).until(lambda x: x.execute_script(
        "return document.getElementById('plot-train').dataset.drawn === 'plotly'"))
    # beside the boundary: in view 1's section
    assert d.find_elements(By.CSS_SELECTOR, "#view-boundary #plot-train")
    got = d.execute_script("return document.getElementById('plot-train').data.map(t => [t.name, t.x, t.y])")
    assert [g[0] for g in got] == KEYS
    for name, x, y in got:  # checkpoint-4's log, not checkpoint-6's (incomplete)
        assert x == [1, 2, 3, 4], (name, x)
    assert got[0][2] == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert d.execute_script("return document.querySelectorAll('#plot-train .scatterlayer .trace').length") == 5
    labels = _ticks(d, "plot-train")
    assert labels and all(t.isdigit() for t in labels), labels  # whole steps, never 2.5
    assert "checkpoint-4" in d.find_element(By.ID, "train-note").text


def _check_wandb_online(d):
    WebDriverWait(d, 20).until(lambda x: x.find_elements(By.CSS_SELECTOR, "#wandb-info a"))
    a = d.find_element(By.CSS_SELECTOR, "#wandb-info a")
    assert a.get_attribute("href") == "https://wandb.ai/me/proj/runs/abc123"
    assert "abc123" in d.find_element(By.ID, "wandb-info").text


def test_training_curves_beside_the_boundary(site):
    d = site["driver"]
    _load(d, site["url"])
    _check_training(d)
    assert severe(d) == []


def test_a_run_without_a_checkpoint_says_so_in_one_line_not_an_empty_box(site):
    d = site["driver"]
    _load(d, site["url"])
    _check_training(d)  # run 0 drawn first, so a stale plot would show if it were not removed
    _pick_run(d, 1, "return document.getElementById('train-note').textContent.startsWith('No complete checkpoint yet')")
    assert d.execute_script("return document.getElementById('plot-train').getBoundingClientRect().height") == 0
    assert "\n" not in d.find_element(By.ID, "train-note").text
    assert severe(d) == []


def test_online_run_links_to_its_wandb_page(site):
    d = site["driver"]
    _load(d, site["url"])
    _check_wandb_online(d)
    assert d.find_elements(By.ID, "wandb-sync") == []


def test_offline_run_shows_its_id_and_sync_command(site):
    d = site["driver"]
    _load(d, site["url"])
    _pick_run(d, 1, "return document.getElementById('wandb-info').dataset.mode === 'offline'")
    text = d.find_element(By.ID, "wandb-info").text
    assert "xyz789" in text and "offline" in text
    assert d.find_element(By.ID, "wandb-sync").text == f"wandb sync {site['offline']}"
    assert d.find_elements(By.CSS_SELECTOR, "#wandb-info a") == []


def _tick(d, *ids):
    for i in ids:
        d.find_element(By.ID, f"compare-run-{i}").click()


def _compare_names(d, traces: int):
    WebDriverWait(d, 20).until(lambda x: x.execute_script(
        "const p = document.getElementById('plot-compare');"
        "return p.dataset.drawn === 'plotly' && p.data.length === arguments[0]", traces))
    return d.execute_script("return document.getElementById('plot-compare').data.map(t => t.name)")


def _check_compare_across_sweeps(d):
    # runs of two sweep folders: today's page compares only within one
    WebDriverWait(d, 20).until(lambda x: x.find_elements(By.ID, "compare-run-2"))
    _tick(d, 0, 2)
    names = _compare_names(d, 4)
    assert sorted(names) == sorted(["runs/sweepA/0 step 4 (last checkpoint)", "runs/sweepB/0 step 4 (last checkpoint)",
                                    "base of runs/sweepA/0", "base of runs/sweepB/0"]), names
    xs = d.execute_script("return document.getElementById('plot-compare').data.map(t => t.x.length)")
    assert xs == [16, 16, 16, 16]
    assert _ticks(d, "plot-compare") == ["1", "2", "4", "8", "16"]
    note = d.find_element(By.ID, "compare-diffs").text
    # the probes differ in temperature: named, for the last checkpoints and for the bases
    assert "runs/sweepA/0 vs runs/sweepB/0 (last checkpoint): probed unlike: temperature (unset) vs 0.7" in note, note
    assert "(base): probed unlike: temperature (unset) vs 0.7" in note, note
    # swap sweepB's run for sweepA's other one: alike, and that is said
    _tick(d, 2, 1)
    _compare_names(d, 4)
    WebDriverWait(d, 10).until(lambda x: "share their sampling settings" in x.find_element(By.ID, "compare-diffs").text)


def test_any_runs_compare_across_sweep_folders_and_unlike_probes_are_named(site):
    d = site["driver"]
    _load(d, site["url"])
    _check_compare_across_sweeps(d)
    assert severe(d) == []


def test_exported_file_shows_training_wandb_and_comparison_offline(site):
    out = site["tmp"] / "export.html"
    p = subprocess.run([sys.executable, str(ROOT / "dashboard.py"), str(site["root"]), "--export", str(out)],
                       env=site["env"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    d = browser(offline=True)
    try:
        _load(d, out.as_uri())
        _check_training(d)
        _check_wandb_online(d)
        _check_compare_across_sweeps(d)
        assert severe(d) == []
    finally:
        d.quit()


def test_runs_sharing_a_base_draw_it_once(site):
    d = site["driver"]
    _load(d, site["url"])
    WebDriverWait(d, 20).until(lambda x: x.find_elements(By.ID, "compare-run-3"))
    assert "(no sweep)" in d.find_element(By.CSS_SELECTOR, "label[for=compare-run-3]").text
    _tick(d, 0, 3)
    names = _compare_names(d, 3)
    assert sorted(names) == ["base of runs/sweepA/0, runs/zcopy/run", "runs/sweepA/0 step 4 (last checkpoint)",
                             "runs/zcopy/run step 4 (last checkpoint)"], names
    assert "share their sampling settings" in d.find_element(By.ID, "compare-diffs").text
    assert severe(d) == []


def test_live_training_curves_follow_a_checkpoint_that_lands(site):
    """A checkpoint that completes while the page is open is drawn without a reload, before any
    probe of it lands (zcopy/run: no checkpoint until this test writes one)."""
    d = site["driver"]
    _load(d, site["url"])
    _pick_run(d, 3, "return document.getElementById('train-note').textContent.startsWith('No complete checkpoint yet')")
    run = site["root"] / "zcopy" / "run"
    _checkpoint(run, 2, [1, 2], complete=False)
    time.sleep(3)  # a poll (2 s) or more: a checkpoint being written is not read
    assert d.find_element(By.ID, "train-note").text.startswith("No complete checkpoint yet")
    (run / "checkpoints" / "checkpoint-2" / CHECKPOINT_COMPLETE).write_text("ok\n")
    WebDriverWait(d, 60).until(lambda x: x.execute_script(
        "const p = document.getElementById('plot-train');"
        "return p.dataset.drawn === 'plotly' && p.data && p.data.length === 5 && p.data[0].x.join() === '1,2'"))
    assert "checkpoint-2" in d.find_element(By.ID, "train-note").text
    assert severe(d) == []
