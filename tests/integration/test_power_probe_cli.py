"""`probe.py sampler=power` end to end: a probe whose stored settings name the power engine (so its
samples never mix with plain sampling's or another alpha's), and one-line refusals of what would
change p."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_probe(tmp_path, *overrides):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, str(ROOT / "probe.py"), *overrides]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def args(tiny_lm, run_dir, *extra):
    return ["model=hf", f"model.path={tiny_lm}", "model.name=tiny", "task=aime24", "probe.limit=2",
            "task.chat=false", "probe.n=4", "probe.max_new_tokens=6", "probe.top_p=1.0", "probe.bootstrap_iters=50",
            "sampler=power", "sampler.power.mcmc_steps=2", "sampler.torch_threads=1", "logger=none",
            f"hydra.run.dir={run_dir}", *extra]


def stored_settings(tmp_path) -> list[dict]:
    db = sqlite3.connect(tmp_path / "store.sqlite")
    try:
        return [json.loads(s) for s, in db.execute("SELECT settings FROM probes ORDER BY created")]
    finally:
        db.close()


@pytest.mark.slow
def test_probe_with_power_sampler_keys_its_samples_by_alpha_and_steps(tmp_path, tiny_lm):
    proc = run_probe(tmp_path, *args(tiny_lm, tmp_path / "a", "sampler.power.alpha=4"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pass@4" in proc.stdout
    [first] = stored_settings(tmp_path)
    assert first["engine"] == "power:alpha=4:steps=2"
    db = sqlite3.connect(tmp_path / "store.sqlite")
    (count, most), = db.execute("SELECT COUNT(*), MAX(n_tokens) FROM samples").fetchall()
    db.close()
    assert count == 8 and 1 <= most <= 6

    # Another alpha is another probe: nothing is reused from the first.
    proc = run_probe(tmp_path, *args(tiny_lm, tmp_path / "b", "sampler.power.alpha=2"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sampled 8 new completions" in proc.stdout
    engines = [s.get("engine") for s in stored_settings(tmp_path)]
    assert engines == ["power:alpha=4:steps=2", "power:alpha=2:steps=2"]
    # The same command again samples nothing new.
    proc = run_probe(tmp_path, *args(tiny_lm, tmp_path / "c", "sampler.power.alpha=2"))
    assert proc.returncode == 0 and "nothing new to sample" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("extra,line", [
    (["probe.top_p=0.9"], "error: probe.top_p=0.9: must be 1 with sampler=power"),
    (["probe.stop=[';']"], "error: probe.stop=[';']: must be empty with sampler=power"),
    (["sampler.power.alpha=0.5"], "error: sampler.power.alpha=0.5: must be >= 1"),
    (["sampler.power.mcmc_steps=-1"], "error: sampler.power.mcmc_steps=-1: must be >= 0"),
    (["match_entropy.of={tmp}"], "error: match_entropy.of={tmp}: cannot be combined with sampler=power"),
])
def test_settings_that_change_p_are_one_line_errors(tmp_path, extra, line):
    extra, line = [e.format(tmp=tmp_path) for e in extra], line.format(tmp=tmp_path)
    proc = run_probe(tmp_path, "task=aime24", "probe.limit=1", "probe.n=1", "logger=none",
                     "sampler=power", f"hydra.run.dir={tmp_path / 'run'}", *extra)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines and lines[-1].startswith(line), proc.stderr
    assert "Traceback" not in proc.stderr
