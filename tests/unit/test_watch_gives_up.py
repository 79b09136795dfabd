"""A watcher (`probe.py watch=DIR`) of a folder that is not, and does not become, a training run
gives up with one line; one that becomes a run in time goes on."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from boundlab.boundary.watch import NotATrainingRun, watch
from boundlab.config import ProbeMain, TrainMain
from boundlab.errors import UserError

ROOT = Path(__file__).resolve().parents[2]


def _train_config(run):
    (run / ".hydra").mkdir(parents=True, exist_ok=True)
    OmegaConf.save(OmegaConf.structured(TrainMain), run / ".hydra" / "config.yaml")
    return run


def test_a_folder_that_never_becomes_a_run_gives_up_after_the_start_timeout(tmp_path, capsys):
    empty = tmp_path / "not_a_run"
    empty.mkdir()
    with pytest.raises(NotATrainingRun) as e:
        watch(empty, poll_s=0.05, start_timeout_s=0.2)
    msg = str(e.value)
    assert "\n" not in msg and isinstance(e.value, UserError)
    assert msg.startswith(f"watch={empty}: not a training run dir (no .hydra/config.yaml) after 0.2 s")
    assert "waiting for" in capsys.readouterr().out


def test_a_train_config_whose_training_never_starts_gives_up_too(tmp_path):
    # Today's way to wait forever: the config is there, training never writes run_info.json.
    run = _train_config(tmp_path / "run")
    with pytest.raises(NotATrainingRun, match=r"training wrote no run_info.json within 0.2 s"):
        watch(run, poll_s=0.05, start_timeout_s=0.2)


def test_a_probe_dir_is_refused_at_once(tmp_path, monkeypatch):
    import boundlab.boundary.watch as W

    run = tmp_path / "probe_out"
    (run / ".hydra").mkdir(parents=True)
    OmegaConf.save(OmegaConf.structured(ProbeMain), run / ".hydra" / "config.yaml")
    (run / "run_info.json").write_text("{}")
    # Refused, not waited out: the mechanism (the watcher never sleeps a poll), not the wall clock.
    monkeypatch.setattr(W.time, "sleep", lambda s: pytest.fail(f"the watcher waited ({s} s) on a probe dir"))
    with pytest.raises(NotATrainingRun, match="is not a train.py config"):
        watch(run, poll_s=0.05, start_timeout_s=60)


def test_a_folder_that_becomes_a_run_in_time_is_watched(tmp_path, monkeypatch):
    import boundlab.probe.spec as spec

    class Stop(Exception):
        pass

    seen = []
    monkeypatch.setattr(spec, "load_task", lambda cfg: (seen.append(cfg), (_ for _ in ()).throw(Stop()))[1])
    run = tmp_path / "later"

    def start_training():
        time.sleep(0.3)
        _train_config(run)
        (run / "run_info.json").write_text('{"wandb_run_id": null}')

    t = threading.Thread(target=start_training)
    t.start()
    try:
        with pytest.raises(Stop):
            watch(run, poll_s=0.05, start_timeout_s=120)
    finally:
        t.join()
    assert len(seen) == 1 and "train" in seen[0]


def test_probe_py_watch_of_a_non_run_exits_2_with_one_line(tmp_path):
    run = _train_config(tmp_path / "stalled")
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline")
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), f"watch={run}", "watch_poll_s=0.05",
                           "watch_start_timeout_s=0.3", f"hydra.run.dir={tmp_path / 'worker'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: watch={run}: training wrote no run_info.json"), err
