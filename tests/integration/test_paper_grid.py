"""The grid as one command: `probe.py +experiment=paper_grid` probes one model over the six math
benchmarks in one multirun (here the shipped toy model, 2 problems, n = 4: the mechanics, not a
result), and `python -m boundlab.report.grid` draws one panel per benchmark from the store."""

import csv
import os
import subprocess
import sys
from pathlib import Path

from boundlab.probe.store import Store
from boundlab.report.grid import PAPER_MATH

ROOT = Path(__file__).resolve().parents[2]


def test_paper_grid_multirun_then_figure(tmp_path):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), "+experiment=paper_grid", "model=toy",
                           "probe.n=4", "probe.limit=2", "probe.max_new_tokens=8", "logger=none",
                           f"hydra.sweep.dir={tmp_path / 'sweep'}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    store = Store(tmp_path / "store.sqlite", writable=False)
    try:
        probes = store.list_probes()
        assert sorted(p["task_name"] for p in probes) == sorted(PAPER_MATH)
        assert all(sum(pc.n for pc in store.counts(p["key"])) == 8 for p in probes)
    finally:
        store.close()
    out = tmp_path / "grid.png"
    proc = subprocess.run([sys.executable, "-m", "boundlab.report.grid", "--store", str(tmp_path / "store.sqlite"),
                           "--models", "base=toy", "--out", str(out), "--iters", "20"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "no probe" not in proc.stdout and out.stat().st_size > 10_000
    with out.with_suffix(".csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["task"] for r in rows if r["k"] == "1"] == list(PAPER_MATH)
