"""Sweeps are runs too: a `-m` job that fails validation is reported as failed and the others still
run; the sweep ends with a done/failed/skipped summary and exit 1; report.py names every job the
sweep defined that left no probes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from omegaconf import OmegaConf

from boundlab.report.inputs import sweep_job_notes, sweep_run_dirs
from boundlab.sweep import STATUS_FILE, defined_jobs, summary_lines, sweep_jobs

ROOT = Path(__file__).resolve().parents[2]


def test_a_bad_job_fails_alone_and_the_sweep_says_so(tmp_path):
    sweep = tmp_path / "sweep"
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline")
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), "-m", "task=toy_arith", "probe.n=2,0,4",
                           f"export={tmp_path / 'prompts.jsonl'}", "logger=none", f"hydra.sweep.dir={sweep}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stdout.count("wrote 200 problems of toy_arith") == 2  # jobs 0 and 2, after job 1 failed
    bad = f"task=toy_arith probe.n=0 export={tmp_path / 'prompts.jsonl'} logger=none"
    err = proc.stderr.strip().splitlines()
    assert err[0] == f"error: job 1 ({bad}): probe.n=0: must be >= 1 (samples per problem; pass@k is " \
                     f"reported for k = 1..n)"
    assert err[-2].startswith(f"sweep: job 1 ({bad}) failed: probe.n=0: must be >= 1")
    assert err[-1] == "sweep: 2 done, 1 failed, 0 skipped (of 3)"
    assert [(j.num, j.status) for j in sweep_jobs(sweep)] == [(0, "done"), (1, "failed"), (2, "done")]


def _job_dir(sweep: Path, num: int, overrides: list[str], probes: bool) -> Path:
    d = sweep / f"{num}_grpo"
    (d / ".hydra").mkdir(parents=True)
    OmegaConf.save(OmegaConf.create(overrides), d / ".hydra" / "overrides.yaml")
    if probes:
        (d / "probes.jsonl").write_text(json.dumps({"step": 0, "key": "k"}) + "\n")
    return d


def test_every_job_the_sweep_defined_is_listed_and_those_without_probes_named(tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    task = ["algo=grpo", "train.seed=1,2,3,4"]
    OmegaConf.save(OmegaConf.create({"hydra": {"overrides": {"task": task}}}), sweep / "multirun.yaml")
    jobs = defined_jobs(task)
    assert jobs == [["algo=grpo", f"train.seed={s}"] for s in (1, 2, 3, 4)]
    _job_dir(sweep, 0, jobs[0], probes=True)
    _job_dir(sweep, 1, jobs[1], probes=False)  # failed at validation: a dir, no probes
    _job_dir(sweep, 2, jobs[2], probes=True)  # probed, then killed before it reported
    with (sweep / STATUS_FILE).open("w") as f:
        f.write(json.dumps({"num": 0, "overrides": jobs[0], "status": "done"}) + "\n")
        f.write(json.dumps({"num": 1, "overrides": jobs[1], "status": "failed",
                            "reason": "train.lr=-1: must be > 0"}) + "\n")
    got = sweep_jobs(sweep)
    assert [(j.num, j.status) for j in got] == [(0, "done"), (1, "failed"), (2, "skipped"), (3, "skipped")]
    assert summary_lines(got)[-1] == "sweep: 1 done, 1 failed, 2 skipped (of 4)"
    notes = sweep_job_notes(sweep, sweep_run_dirs(sweep))
    assert notes == [
        f"sweep {sweep}: job 1 (algo=grpo train.seed=2) has no probes (failed: train.lr=-1: must be > 0); "
        f"it is not in the comparison",
        f"sweep {sweep}: job 3 (algo=grpo train.seed=4) has no probes (skipped); it is not in the comparison"]


def test_a_folder_without_multirun_yaml_is_no_sweep(tmp_path):
    assert sweep_jobs(tmp_path) is None
    assert sweep_job_notes(tmp_path, []) == []


def test_a_sweep_the_config_defines_counts_its_jobs_as_hydra_does(tmp_path):
    # experiment=paper_grid sweeps from its config (hydra.sweeper.params), not the command line:
    # its jobs are the config's params first, then the command line's overrides.
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    OmegaConf.save(OmegaConf.create({"hydra": {"sweeper": {"params": {"task": "gsm8k,math500"}},
                                               "overrides": {"task": ["+experiment=paper_grid", "model=toy"]}}}),
                   sweep / "multirun.yaml")
    jobs = [["task=gsm8k", "+experiment=paper_grid", "model=toy"], ["task=math500", "+experiment=paper_grid", "model=toy"]]
    with (sweep / STATUS_FILE).open("w") as f:
        for i, j in enumerate(jobs):
            f.write(json.dumps({"num": i, "overrides": j, "status": "done"}) + "\n")
    got = sweep_jobs(sweep)
    assert [(j.overrides, j.status) for j in got] == [(jobs[0], "done"), (jobs[1], "done")]
