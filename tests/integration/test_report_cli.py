"""report.py end to end: a smoke training run on the toy world, then its report (every section,
a CSV for every table, readable figures), the same numbers as the run's own probes, and W&B."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.report.build import SECTIONS
from boundlab.tracking.reader import read_offline_run

from smoke_kit import copy_smoke_run  # tests/integration, shared

ROOT = Path(__file__).resolve().parents[2]


def env_for(tmp_path):
    return dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
                HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true")


def cli(tmp_path, script, *overrides, check=True):
    proc = subprocess.run([sys.executable, str(ROOT / script), *overrides], cwd=tmp_path,
                          env=env_for(tmp_path), capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"{script} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-5000:]}")
    return proc


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_report_on_a_smoke_run(tmp_path, smoke_run):
    # The session's smoke training run (tests/integration/conftest.py), copied here with its store.
    run_dir, out = copy_smoke_run(smoke_run, tmp_path), tmp_path / "report"
    proc = cli(tmp_path, "report.py", f"base={run_dir}", f"runs=[{run_dir}]", f"out={out}",
               "perplexity.torch_threads=1", "bootstrap_iters=200")
    assert "wrote" in proc.stdout

    md = (out / "report.md").read_text()
    for s in SECTIONS:
        assert f"## {s}" in md, s
    assert "k = n = 4 (n < 256)" in md  # the smoke probe has n = 4: dSE says it is at n
    assert "### By `tier`" in md  # the toy world (second edition) tags its problems by tier
    for name in ("models", "passk", "passk_summary", "crossing", "delta_se", "coverage",
                 "coverage_problems", "problems", "perplexity", "perplexity_responses",
                 "progression", "algorithms", "case_studies", "breakdown_tier"):
        assert (out / f"{name}.csv").is_file(), name
        assert f"({name}.csv)" in md, name
    for name in ("passk", "coverage", "perplexity", "progression", "algorithms", "breakdown_tier"):
        assert (out / f"{name}.png").stat().st_size > 5000, name
        assert f"]({name}.png)" in md, name

    # The report reads the same probes the run recorded: the same numbers.
    probes = [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]
    prog = rows(out / "progression.csv")
    assert [int(r["step"]) for r in prog] == [p["step"] for p in probes] == [0, 2, 4]
    for r, p in zip(prog, probes):
        assert float(r["pass@1"]) == pytest.approx(p["pass@1"], abs=1e-9)
        assert float(r["pass@n"]) == pytest.approx(p["pass@n"], abs=1e-9)
    final = probes[-1]
    cov = rows(out / "coverage.csv")[0]
    assert int(cov["base_only"]) == final["lost"] and int(cov["model_only"]) == final["gained"]
    assert sum(int(cov[k]) for k in ("both", "base_only", "model_only", "neither")) == 8
    dse = rows(out / "delta_se.csv")[0]
    assert float(dse["dSE"]) == pytest.approx(final["pass@1"] - probes[0]["pass@n"], abs=1e-9)
    cross = rows(out / "crossing.csv")[0]
    if final["crossing_k"] is None:
        assert cross["crossing_k"] == ""
    else:
        assert float(cross["crossing_k"]) == pytest.approx(final["crossing_k"])
    ppl = {r["group"]: r for r in rows(out / "perplexity.csv")}
    assert set(ppl) == {"base", "run (grpo)"}
    assert all(int(r["scored"]) > 0 and float(r["median"]) >= 1.0 for r in ppl.values())

    # The same report into W&B: figures as images, tables as W&B tables.
    wb = tmp_path / "report_wandb"
    cli(tmp_path, "report.py", f"base={run_dir}", f"runs=[{run_dir}]", f"out={wb}", "logger=wandb",
        "perplexity.enabled=false", "bootstrap_iters=50")
    run = read_offline_run(wb)
    keys = {k for h in run.history for k in h}
    assert {f"report/figures/{n}" for n in ("passk", "coverage", "progression", "algorithms")} <= keys
    assert {f"report/tables/{n}" for n in ("delta_se", "crossing", "coverage", "algorithms")} <= keys
    logged = {k: v for h in run.history for k, v in h.items()}
    assert logged["report/figures/passk"]["_type"] == "image-file"
    assert logged["report/tables/delta_se"]["_type"] == "table-file"
    assert "Skipped (perplexity.enabled=false)" in (wb / "report.md").read_text()


@pytest.mark.slow
def test_report_without_a_base_fails_with_one_clear_line(tmp_path):
    proc = cli(tmp_path, "report.py", f"out={tmp_path / 'r'}", check=False)
    assert proc.returncode == 2
    assert "base is required" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "store.sqlite").touch()
    proc = cli(tmp_path, "report.py", "base=no-such-model", f"out={tmp_path / 'r'}", check=False)
    assert proc.returncode == 2 and "not a run dir, a sweep dir, a probe key" in proc.stderr
