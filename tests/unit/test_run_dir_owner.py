"""A run dir belongs to one run, and no command writes over its own inputs: a fresh run pointed at
another run's dir, a report or probe written into a training run's dir, and an export onto the task
file are each refused in one line, exit 2, before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from boundlab.config import ProbeMain, TrainMain, register_configs
from boundlab.rundir.owner import ForeignRunDir, check_fresh_run_dir, foreign_dir_message, kind_of
from boundlab.report.schema import ReportMain

ROOT = Path(__file__).resolve().parents[2]
register_configs()


def _saved(run: Path, schema) -> Path:
    (run / ".hydra").mkdir(parents=True, exist_ok=True)
    OmegaConf.save(OmegaConf.structured(schema), run / ".hydra" / "config.yaml")
    return run


def _training_run(run: Path, finished: bool) -> Path:
    _saved(run, TrainMain)
    (run / "run_info.json").write_text('{"wandb_run_id": "abc123"}')
    (run / "probes.jsonl").write_text(json.dumps({"step": 0, "pass@1": 0.5}) + "\n")
    if finished:
        (run / "training_done").write_text("ok\n")
    return run


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _cli(script, args, cwd, **env_extra):
    env = dict(os.environ, BOUNDLAB_STORE=str(cwd / "store.sqlite"), WANDB_MODE="offline", **env_extra)
    return subprocess.run([sys.executable, str(ROOT / script), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _one_line(proc) -> str:
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("finished", [True, False])
def test_a_fresh_run_in_another_runs_dir_is_refused_before_anything_is_written(tmp_path, finished):
    run = _training_run(tmp_path / "run", finished)
    before = _snapshot(run)
    # model.path that does not exist: on a build without the check, Hydra has already saved its own
    # config over the run's by the time this fails, so the snapshot tells.
    proc = _cli("train.py", [f"hydra.run.dir={run}", "debug=smoke", f"model.path={tmp_path / 'none'}"],
                tmp_path)
    line = _one_line(proc)
    assert line.startswith(f"error: hydra.run.dir={run} is the run dir of another training run (it holds "
                           f".hydra/config.yaml, run_info.json, probes.jsonl")
    assert line.endswith(f"continue it with: python train.py resume={run}")
    assert _snapshot(run) == before


def test_training_refuses_a_dir_holding_a_run_it_was_not_told_to_resume(tmp_path):
    # The run dir may come from an experiment file, not argv: training's own check, before its lock.
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=["debug=smoke"])
    run = _training_run(tmp_path / "run", finished=False)
    before = _snapshot(run)
    from boundlab.training.app import run as train

    with pytest.raises(ForeignRunDir, match=r"already holds a training run \(run_info.json, probes.jsonl\)"):
        train(cfg, run)
    assert _snapshot(run) == before  # not even train.lock


def test_check_fresh_run_dir_accepts_a_dir_with_only_hydras_own_files(tmp_path):
    run = _saved(tmp_path / "new", TrainMain)  # what Hydra wrote for this very run
    check_fresh_run_dir(run)
    check_fresh_run_dir(tmp_path / "missing")


def test_a_report_written_into_a_run_dir_is_refused_and_the_config_kept(tmp_path):
    run = _training_run(tmp_path / "run", finished=True)
    before = _snapshot(run)
    proc = _cli("report.py", [f"base={run}", f"runs=[{run}]", f"out={run}"], tmp_path)
    line = _one_line(proc)
    assert line.startswith(f"error: out={run} is the run dir of another training run")
    assert _snapshot(run) == before


def test_a_probe_into_a_training_run_dir_is_refused(tmp_path):
    run = _training_run(tmp_path / "run", finished=False)
    before = _snapshot(run)
    proc = _cli("probe.py", [f"hydra.run.dir={run}", "model=toy", "probe.limit=1", "probe.n=1"], tmp_path)
    assert _one_line(proc).startswith(f"error: hydra.run.dir={run} is the run dir of another training run")
    assert _snapshot(run) == before


def test_which_dirs_each_command_may_write(tmp_path, monkeypatch):
    report = _saved(tmp_path / "report", ReportMain)
    probe = _saved(tmp_path / "probe", ProbeMain)
    assert (kind_of(report), kind_of(probe), kind_of(tmp_path / "nothing")) == ("report", "probe", None)
    # A rerun of the same command into its own dir writes its own files again.
    assert foreign_dir_message([f"out={report}"], "report") is None
    assert foreign_dir_message([f"hydra.run.dir={probe}"], "probe") is None
    # Another command's dir, or any run's dir for a fresh training run, is not.
    assert "another probe run" in foreign_dir_message([f"out={probe}"], "report")
    assert "another report run" in foreign_dir_message([f"hydra.run.dir={report}"], "train")
    # No dir named: Hydra's own fresh default.
    assert foreign_dir_message(["algo=grpo"], "train") is None
    # A sweep dir that already holds a sweep.
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "multirun.yaml").write_text("{}")
    assert "holds another sweep" in foreign_dir_message(["-m", f"hydra.sweep.dir={tmp_path / 'sweep'}"], "train")
    # Another rank of a multi-process launch sees rank 0's own .hydra/config.yaml: not refused there.
    fresh = _saved(tmp_path / "fresh", TrainMain)
    assert foreign_dir_message([f"hydra.run.dir={fresh}"], "train") is not None
    monkeypatch.setenv("RANK", "3")
    assert foreign_dir_message([f"hydra.run.dir={fresh}"], "train") is None


def test_an_export_onto_the_task_file_is_refused_and_the_file_kept(tmp_path):
    task = tmp_path / "task.jsonl"
    task.write_text("".join(json.dumps({"problem_id": f"p{i}", "question": f"{i}+1", "answer": str(i + 1)})
                            + "\n" for i in range(3)))
    before = task.read_bytes()
    proc = _cli("probe.py", ["task=jsonl", f"task.path={task}", f"export={task}",
                             f"hydra.run.dir={tmp_path / 'out'}"], tmp_path)
    assert _one_line(proc) == (f"error: export={task} is this command's own input (task.path); writing "
                               f"there would destroy it: pick another file")
    assert task.read_bytes() == before
