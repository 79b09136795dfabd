"""reward.outcome_bonus and data.gate (issue 39) through train.py under debug=smoke: the bonus is a
reward function of its own on TRL's GRPO and on our trainer, the counts and the gated set are saved
with each checkpoint and logged, each step trains only on gated problems, and a run resumed from its
step-2 checkpoint ends with exactly the uninterrupted run's weights, counts and gated sets."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
KNOBS = ["debug=smoke", "backend.torch_threads=1", "reward.outcome_bonus.ucb_coef=0.5",
         "reward.outcome_bonus.repeat_penalty=0.2", "data.gate_samples=2"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("outcome_gate")


@pytest.fixture(scope="module")
def env(work):
    e = dict(os.environ, BOUNDLAB_STORE=str(work / "store.sqlite"), WANDB_MODE="offline",
             HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", WANDB_SILENT="true")
    e.pop("WANDB_SERVICE", None)  # see tests/conftest.py
    e.pop("RANK", None)
    return e


def cli(args, cwd, env):
    return subprocess.run([sys.executable, str(ROOT / "train.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def grpo_run(work, env):
    run = work / "grpo"
    p = cli([*KNOBS, "data.gate=low_likelihood", f"hydra.run.dir={run}"], work, env)
    assert p.returncode == 0, p.stderr[-3000:]
    return run


def ck(run, step, name):
    return run / "checkpoints" / f"checkpoint-{step}" / name


def gate_rows(run):
    return [json.loads(x) for x in (run / "data_gate.jsonl").read_text().splitlines()]


def counted(run, step):
    return json.loads(ck(run, step, "outcome_counts.json").read_text())["counts"]


def test_grpo_run_logs_and_saves_the_bonus_and_the_gate(grpo_run):
    from boundlab.tracking.reader import read_offline_run

    rows = gate_rows(grpo_run)
    assert [r["step"] for r in rows] == [0, 2]  # at the start and at the save of step 2, not at the last
    assert all(r["size"] == 32 and r["of"] == 64 and len(r["active"]) == 32 for r in rows)  # ceil(0.5 * 64)
    for step, row in ((2, rows[1]), (4, rows[1])):
        saved = json.loads(ck(grpo_run, step, "data_gate.json").read_text())
        assert saved["active"] == row["active"] and saved["gate"] == "low_likelihood"
    # Steps 1-2 train on step 0's gate, steps 3-4 on step 2's: every answer counted is of those problems.
    c2, c4 = counted(grpo_run, 2), counted(grpo_run, 4)
    assert c2 and set(c2) <= set(rows[0]["active"])
    later = {p for p, seen in c4.items() if seen != c2.get(p)}
    assert later and later <= set(rows[1]["active"])
    state = json.loads(ck(grpo_run, 4, "trainer_state.json").read_text())
    logged = [h for h in state["log_history"] if "rewards/outcome_bonus/mean" in h]
    assert len(logged) == 4 and all(h["rewards/outcome_bonus/mean"] > 0 for h in logged)
    history = read_offline_run(grpo_run).history
    assert sorted(h["train/gate_size"] for h in history if "train/gate_size" in h) == [32, 32]


def test_a_resumed_run_rewards_and_gates_as_the_uninterrupted_one(grpo_run, work, env):
    run = work / "grpo_cut"
    shutil.copytree(grpo_run, run, symlinks=True)
    shutil.rmtree(run / "checkpoints" / "checkpoint-4")
    (run / "training_done").unlink()
    p = cli([f"resume={run}"], work, env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "data.gate=low_likelihood at step" not in p.stdout  # restored from checkpoint-2, not probed again
    assert gate_rows(run) == gate_rows(grpo_run)
    assert counted(run, 4) == counted(grpo_run, 4)
    a, b = load_file(ck(grpo_run, 4, "model.safetensors")), load_file(ck(run, 4, "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_own_trainer_takes_the_bonus_and_the_zero_success_gate(work, env):
    run = work / "own"
    p = cli([*KNOBS, "algo=grpo_onpolicy", "data.gate=zero_success", f"hydra.run.dir={run}"], work, env)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = gate_rows(run)
    assert [r["step"] for r in rows] == [0, 2]
    for r in rows:  # zero_success keeps the problems with no success among their 2 samples
        assert r["fallback_whole_split"] or 0 < r["size"] < r["of"]
    c2 = counted(run, 2)
    assert c2 and (rows[0]["active"] is None or set(c2) <= set(rows[0]["active"]))
    state = json.loads(ck(run, 4, "trainer_state.json").read_text())
    assert any("rewards/outcome_bonus/mean" in h for h in state["log_history"])


def test_a_resume_without_the_saved_counts_is_one_line(grpo_run, work, env):
    run = work / "grpo_lost"
    shutil.copytree(grpo_run, run, symlinks=True)
    shutil.rmtree(run / "checkpoints" / "checkpoint-4")
    (run / "training_done").unlink()
    (run / "checkpoints" / "checkpoint-2" / "outcome_counts.json").unlink()
    p = cli([f"resume={run}"], work, env)
    assert p.returncode != 0
    assert "outcome_counts.json is missing" in p.stderr
    assert "Traceback" not in p.stderr


def test_dapo_refills_draw_gated_problems_too(tmp_path):
    from onpolicy_build import build_trainer, train_cfg  # tests/integration, shared

    from boundlab.training.gate import Gate

    cfg = train_cfg("algo=dapo", "debug=smoke", "data.gate=zero_success")
    t = build_trainer(cfg, tmp_path)
    gate = Gate(cfg, t.train_dataset.to_list(), score=None, run_dir=tmp_path)
    gate.bind(t)
    assert t._draw_prompts(3)[1]["problem_id"] != ["p3"] * 3  # no gate yet: the refill stream as it was
    gate.active = ["p3"]
    prompts, extras = t._draw_prompts(6)
    assert extras["problem_id"] == ["p3"] * 6 and prompts == ["Q:3-3*4;"] * 6
