"""A finished training run carried to a fresh machine (boundlab.probe.run_archive, issue 40's arms):
a real debug=smoke run is packed, its run dir and the whole store deleted (what a new session
starts with), and the archive restored. report.py over the restored sweep writes the same numbers,
byte for byte, and probe.py on the restored final checkpoint hits the probe key training recorded,
with every sample read back from the store (the weights' fingerprint, hence the key, is the same)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.models import model_fingerprint

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("run_archive")


@pytest.fixture(scope="module")
def env(work):
    e = dict(os.environ, BOUNDLAB_STORE=str(work / "store.sqlite"), BOUNDLAB_CACHE=str(work / "cache"),
             WANDB_MODE="offline", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true",
             PYTHONPATH=str(ROOT / "src"))
    e.pop("WANDB_SERVICE", None)  # see tests/conftest.py
    return e


def cli(args, cwd, env, timeout=600):
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def sweep(work, smoke_run):
    """A sweep dir holding one finished smoke run (the session's, tests/integration/conftest.py:
    steps 2 and 4 saved and probed, n=4 on 8 problems), copied here with its store."""
    run_dir, store, _ = smoke_run
    run = work / "sweep" / "grpo_s0"
    shutil.copytree(run_dir, run, symlinks=True)
    for f in store.parent.glob(store.name + "*"):  # the database and any -wal/-shm beside it
        shutil.copy2(f, work / f.name.replace(store.name, "store.sqlite"))
    assert (run / "training_done").is_file()
    return work / "sweep"


def report(sweep: Path, out: Path, env) -> dict[str, bytes]:
    proc = cli([str(ROOT / "report.py"), f"base={sweep}", f"sweeps=[{sweep}]", f"out={out}",
                "perplexity.enabled=false"], sweep.parent, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = {f.name: f.read_bytes() for f in sorted(out.glob("*.csv"))}
    # The report's text, less the time it was written.
    files["report.md"] = re.sub(rb"Written [0-9: -]+\.", b"", (out / "report.md").read_bytes())
    return files


def test_a_packed_run_restored_on_a_fresh_machine_reports_and_probes_the_same(work, env, sweep):
    run = sweep / "grpo_s0"
    before = report(sweep, work / "report_before", env)
    final_key = [json.loads(x) for x in (run / "probes.jsonl").read_text().splitlines()][-1]["probe_key"]

    arms = work / "archive" / "arms"
    proc = cli(["-m", "boundlab.probe.run_archive", "pack", str(run), "--out", str(arms / "grpo_s0"),
                "--store", env["BOUNDLAB_STORE"]], work, env)
    assert proc.returncode == 0, proc.stderr
    packed = json.loads(proc.stdout)["bytes"]
    print(f"archive sizes: {packed}")  # the report's numbers for a 4-step run of the toy2 model
    man = json.loads((arms / "grpo_s0" / "manifest.json").read_text())
    assert man["final_step"] == 4 and {p["key"] for p in man["probes"]} >= {final_key}
    assert not [f for f in man["files"] if f.startswith("checkpoints/checkpoint-2/")
                or f.endswith(("optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin"))]

    # A fresh machine: no run dir, no store.
    shutil.rmtree(run)
    for f in Path(env["BOUNDLAB_STORE"]).parent.glob("store.sqlite*"):
        f.unlink()
    proc = cli(["-m", "boundlab.probe.run_archive", "restore", str(arms / "grpo_s0"), "--sweep-dir", str(sweep),
                "--store", env["BOUNDLAB_STORE"]], work, env)
    assert proc.returncode == 0, proc.stderr
    assert (run / "training_done").is_file() and not (run / "checkpoints" / "checkpoint-2").exists()

    after = report(sweep, work / "report_after", env)
    assert sorted(after) == sorted(before) and len(after) > 10
    assert {k for k in before if after[k] != before[k]} == set()

    # The final checkpoint probed as the script's large probe would be (here at the run's own
    # settings): the same key, and every sample comes from the restored store.
    proc = cli([str(ROOT / "probe.py"), "model=toy2", f"model.path={run}/checkpoints/checkpoint-4", "task=toy2",
                "probe.n=4", "probe.limit=8", "probe.max_new_tokens=80", "probe.bootstrap_iters=50", "logger=none",
                "sampler.torch_threads=1", f"hydra.run.dir={work / 'final_probe'}"], work, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"(probe {final_key})" in proc.stdout
    assert "all samples came from the store (nothing new to sample)" in proc.stdout


def test_a_run_stopped_midway_packed_and_restored_elsewhere_resumes_to_the_same_weights(tmp_path, env, smoke_run):
    """The session's smoke run as it stood after step 2 (checkpoint 4, its probe and training_done
    removed: a run stopped there), packed with --allow-unfinished, deleted with its store, restored
    in another folder and resumed with `train.py resume=`: the resumed step 4 has the uninterrupted
    run's weights (the packed trainer state is complete), so its probe has the same key."""
    from smoke_kit import copy_smoke_run, train_env

    run = copy_smoke_run(smoke_run, tmp_path / "first")
    whole_fp = model_fingerprint(str(run / "checkpoints" / "checkpoint-4"))
    rows = [json.loads(x) for x in (run / "probes.jsonl").read_text().splitlines()]
    step4_key = next(r["probe_key"] for r in rows if r.get("kind") == "checkpoint" and r["step"] == 4)
    (run / "probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r.get("step") != 4))
    shutil.rmtree(run / "checkpoints" / "checkpoint-4")
    (run / "training_done").unlink()

    out = tmp_path / "archive" / "arms" / "grpo_s0"
    e1 = dict(env, **{k: v for k, v in train_env(tmp_path / "first").items() if k == "BOUNDLAB_STORE"})
    proc = cli(["-m", "boundlab.probe.run_archive", "pack", str(run), "--out", str(out),
                "--store", e1["BOUNDLAB_STORE"], "--allow-unfinished"], tmp_path, e1)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["finished"] is False
    shutil.rmtree(tmp_path / "first")  # the machine goes away

    second = tmp_path / "second"
    e2 = dict(env, BOUNDLAB_STORE=str(second / "store.sqlite"))
    proc = cli(["-m", "boundlab.probe.run_archive", "restore", str(out), "--sweep-dir", str(second / "sweep"),
                "--store", e2["BOUNDLAB_STORE"]], tmp_path, e2)
    assert proc.returncode == 0, proc.stderr
    restored = second / "sweep" / "grpo_s0"
    assert not (restored / "training_done").exists()
    proc = cli([str(ROOT / "train.py"), f"resume={restored}"], second, e2, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (restored / "training_done").is_file()
    assert model_fingerprint(str(restored / "checkpoints" / "checkpoint-4")) == whole_fp
    rows = [json.loads(x) for x in (restored / "probes.jsonl").read_text().splitlines()]
    assert [r["probe_key"] for r in rows if r.get("kind") == "checkpoint" and r["step"] == 4] == [step4_key]
