"""resume=RUN_DIR reads the run's own config and refuses what would change it; the run dir lock.

The run dirs here are written as Hydra writes them (.hydra/config.yaml + hydra.yaml), from a real
composition, without training anything."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf, open_dict, read_write

from boundlab.config import register_configs
from boundlab.rundir import lock
from boundlab.resume import ResumeError, allowed_text, finished_line, prepare, requested

CONF = Path(__file__).resolve().parents[2] / "conf"
register_configs()


def make_run(run_dir: Path, overrides=(), *, job_num=None) -> Path:
    """A run dir's .hydra files, saved as Hydra saves them for a job."""
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="train", overrides=list(overrides), return_hydra_config=True)
    with read_write(cfg.hydra), open_dict(cfg.hydra):
        cfg.hydra.runtime.output_dir = str(run_dir)
        if job_num is not None:
            cfg.hydra.job.num = job_num
    hydra = OmegaConf.create({"hydra": cfg.hydra})
    task = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    with open_dict(task):
        del task["hydra"]
    (run_dir / ".hydra").mkdir(parents=True)
    OmegaConf.save(task, run_dir / ".hydra" / "config.yaml")
    OmegaConf.save(hydra, run_dir / ".hydra" / "hydra.yaml")
    OmegaConf.save(OmegaConf.create(list(overrides)), run_dir / ".hydra" / "overrides.yaml")
    return run_dir


@pytest.fixture
def smoke_run(tmp_path):
    return make_run(tmp_path / "run", ["debug=smoke", "backend.torch_threads=1"])


def keep(run):
    return (f"a resumed run keeps its own config ({run}/.hydra/config.yaml); only these may change: "
            f"{allowed_text()}")


# ---- which argv is a resume ----

@pytest.mark.parametrize("argv,expected", [
    (["resume=/x"], True), (["+resume=/x"], True), (["algo=grpo", "++resume=/x"], True),
    (["resume=null"], False), (["algo=grpo"], False), (["train.resume_thing=1"], False),
])
def test_requested(argv, expected):
    assert requested(argv) is expected


# ---- the path ----

def test_missing_run_dir_is_one_line_and_creates_nothing(tmp_path):
    typo = tmp_path / "outputs" / "trian" / "run"
    with pytest.raises(ResumeError) as e:
        prepare([f"resume={typo}"])
    assert str(e.value) == f"resume={typo}: no such run dir (nothing was created)"
    assert not (tmp_path / "outputs").exists()


def test_a_dir_that_is_not_a_run_is_refused(tmp_path):
    with pytest.raises(ResumeError) as e:
        prepare([f"resume={tmp_path}"])
    assert str(e.value) == f"resume={tmp_path}: not a training run dir (no .hydra/config.yaml in it)"


def test_a_probe_run_dir_is_not_a_train_config(tmp_path):
    run = tmp_path / "probe_run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("watch: null\nexport: null\n")
    with pytest.raises(ResumeError) as e:
        prepare([f"resume={run}"])
    assert str(e.value).startswith(f"resume={run}: {run}/.hydra/config.yaml is not a train.py config (")


# ---- the run's own config ----

def test_the_runs_own_config_is_used_not_the_default(smoke_run):
    cfg, run_dir, changes = prepare([f"resume={smoke_run}"])
    assert run_dir == smoke_run.resolve() and changes == {}
    # The default config trains 300 steps and probes n=128 on 200 problems; the run did not.
    assert (cfg.train.max_steps, cfg.train.save_steps, cfg.probe.n, cfg.probe.limit) == (4, 2, 4, 8)
    assert cfg.backend.torch_threads == 1
    assert cfg.resume == str(smoke_run.resolve())


def test_restating_the_original_command_line_is_accepted(smoke_run):
    # A requeued job repeats its command line with resume= added.
    cfg, _, changes = prepare(["debug=smoke", "backend.torch_threads=1", "algo=grpo", "train.max_steps=4",
                               "probe.temperature=1", f"resume={smoke_run}"])
    assert changes == {} and cfg.train.max_steps == 4


def test_allowed_changes_apply_to_this_process_only(smoke_run):
    before = {f.name: f.read_bytes() for f in (smoke_run / ".hydra").iterdir()}
    cfg, _, changes = prepare([f"resume={smoke_run}", "backend.torch_threads=2", "sampler.torch_threads=2",
                               "verify.workers=1", "logger.mode=offline"])
    assert changes == {"backend.torch_threads": 2, "sampler.torch_threads": 2, "verify.workers": 1,
                       "logger.mode": "offline"}
    assert (cfg.backend.torch_threads, cfg.sampler.torch_threads, cfg.verify.workers, cfg.logger.mode) == \
        (2, 2, 1, "offline")
    assert {f.name: f.read_bytes() for f in (smoke_run / ".hydra").iterdir()} == before


def test_a_changed_setting_is_refused_naming_it_and_the_allow_list(smoke_run):
    run = smoke_run.resolve()
    with pytest.raises(ResumeError) as e:
        prepare([f"resume={smoke_run}", "train.max_steps=8"])
    assert str(e.value) == (f"resume={run}: cannot change train.max_steps on resume (the run has 4, "
                            f"given 8); {keep(run)}")
    assert "backend.torch_threads, sampler.torch_threads, verify.workers, logger.mode (online|offline)" \
        in str(e.value)


def test_a_changed_group_is_refused_naming_the_runs_choice(smoke_run):
    run = smoke_run.resolve()
    with pytest.raises(ResumeError) as e:
        prepare([f"resume={smoke_run}", "algo=dapo"])
    assert str(e.value) == (f"resume={run}: cannot change algo on resume (the run used algo=grpo, "
                            f"given dapo); {keep(run)}")


@pytest.mark.parametrize("override,message", [
    ("sampler.batch_size=8", "cannot change sampler.batch_size on resume (the run has 256, given 8)"),
    ("train.probe_mode=detached", "cannot change train.probe_mode on resume (the run has 'inline', given 'detached')"),
    ("train.probe_base=1", "cannot change train.probe_base on resume (the run has True, given 1)"),
    ("debug=null", "cannot change debug on resume (the run used debug=smoke, given None)"),
    ("model@teacher=toy", "cannot change model@teacher on resume (the run used model@teacher=toy2_teacher, given toy)"),
    ("logger.mode=disabled", "logger.mode=disabled is not allowed on resume (one of online, offline)"),
    ("hydra.run.dir=/elsewhere", "hydra.run.dir=/elsewhere: Hydra settings cannot be given on resume"),
    ("hydra/launcher=joblib", "hydra/launcher=joblib: Hydra settings cannot be given on resume"),
    ("kl.coef=0,0.001", "kl.coef=0,0.001: a sweep cannot resume one run"),
    ("~probe.limit", "~probe.limit: nothing can be removed on resume"),
    ("probe.nn=3", "unknown config key 'probe.nn'"),
    ("backend.torch_threads=many", "backend.torch_threads='many': Value 'many' of type 'str' could not be converted to Integer"),
    ("--cfg", "takes no Hydra flags (got --cfg)"),
    ("-m", "cannot be combined with -m/--multirun"),
])
def test_refusals(smoke_run, override, message):
    before = {f.name: f.read_bytes() for f in (smoke_run / ".hydra").iterdir()}
    with pytest.raises(ResumeError) as e:
        prepare([f"resume={smoke_run}", override])
    assert message in str(e.value) and "\n" not in str(e.value)
    assert {f.name: f.read_bytes() for f in (smoke_run / ".hydra").iterdir()} == before


def test_a_sweep_job_keeps_its_sweep_dir_and_wandb_group(tmp_path):
    # hydra.yaml keeps sweep.dir as `...-${now:...}`: resolved again it would name a new sweep (and
    # a new W&B group). The job's own output dir says which sweep it ran in.
    sweep = tmp_path / "sweeps" / "kl_ablation-20260101-000000"
    run = make_run(sweep / "1_kl0.001", ["experiment=kl_ablation", "kl.coef=0.001"], job_num=1)
    saved = OmegaConf.to_container(OmegaConf.load(run / ".hydra" / "hydra.yaml"), resolve=False)
    assert "${now:" in saved["hydra"]["sweep"]["dir"]  # as Hydra saves it (checked on a real -m run)
    cfg, _, _ = prepare([f"resume={run}"])
    assert cfg.logger.group == "kl_ablation-20260101-000000"
    assert cfg.kl.coef == 0.001


def test_finished_line(smoke_run):
    ck = smoke_run / "checkpoints" / "checkpoint-4"
    ck.mkdir(parents=True)
    (ck / "boundlab_complete").write_text("ok\n")
    cfg, run, _ = prepare([f"resume={smoke_run}"])
    assert finished_line(run, cfg.train.max_steps) == (f"[boundlab] {run} already finished training (max_steps=4; its "
                                       f"latest checkpoint is step 4): nothing to train")


# ---- the lock ----

HOLDER = """
import sys, time
from boundlab.rundir import lock
lock.acquire(sys.argv[1], sys.argv[2], "holder.py")
print("held", flush=True)
time.sleep(600)
"""


def _holder(run_dir: Path, name: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir), name], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_holder_fails_naming_the_first(tmp_path):
    proc = _holder(tmp_path, lock.TRAIN_LOCK)
    try:
        with pytest.raises(lock.RunDirBusy) as e:
            lock.acquire(tmp_path, lock.TRAIN_LOCK, "train.py")
        msg = str(e.value)
        assert msg.startswith(f"{tmp_path} is in use: train.lock is held by pid {proc.pid} on "
                              f"{socket.gethostname()} (holder.py, since ")
        assert msg.endswith("wait for it to end or stop it (the lock frees itself when it exits)")
        # Another lock of the same dir is free: a detached watcher beside a trainer is fine.
        assert lock.acquire(tmp_path, lock.PROBE_LOCK, "probe.py")
        lock.release(tmp_path, lock.PROBE_LOCK)
    finally:
        proc.kill()
        proc.wait()


def test_a_dead_holder_never_blocks(tmp_path):
    proc = _holder(tmp_path, lock.TRAIN_LOCK)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # Its name is still in the file; the kernel dropped the flock with the process.
    assert json.loads((tmp_path / lock.TRAIN_LOCK).read_text())["pid"] == proc.pid
    assert lock.acquire(tmp_path, lock.TRAIN_LOCK, "train.py")
    assert json.loads((tmp_path / lock.TRAIN_LOCK).read_text())["pid"] == os.getpid()
    lock.release(tmp_path, lock.TRAIN_LOCK)


def test_reentrant_in_one_process_and_released_at_the_end(tmp_path):
    with lock.hold(tmp_path, (lock.TRAIN_LOCK,), "resume"):
        with lock.hold(tmp_path, (lock.TRAIN_LOCK, lock.PROBE_LOCK), "train"):
            pass
        still = subprocess.run([sys.executable, "-c", HOLDER, str(tmp_path), lock.TRAIN_LOCK],
                               capture_output=True, text=True, timeout=60)
        assert still.returncode != 0 and "train.lock is held by pid" in still.stderr
    proc = _holder(tmp_path, lock.TRAIN_LOCK)  # free again once the outer block ends
    proc.kill()
    proc.wait()


def test_only_rank_zero_locks(tmp_path, monkeypatch):
    proc = _holder(tmp_path, lock.TRAIN_LOCK)
    try:
        monkeypatch.setenv("RANK", "1")  # another rank of the same job shares the run dir
        with lock.hold(tmp_path, (lock.TRAIN_LOCK,), "train.py"):
            pass
        monkeypatch.setenv("RANK", "0")
        with pytest.raises(lock.RunDirBusy):
            with lock.hold(tmp_path, (lock.TRAIN_LOCK,), "train.py"):
                pass
    finally:
        proc.kill()
        proc.wait()


def test_holder_gone_but_a_forked_child_keeps_the_lock_is_named(tmp_path):
    # The only way a flock outlives its taker: a child forked after the lock still holds the fd.
    script = HOLDER.replace('print("held", flush=True)',
                            'import os\nchild = os.fork()\nif child:\n    print("held", child, flush=True)\n'
                            '    os._exit(0)')
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path), lock.TRAIN_LOCK],
                              stdout=subprocess.PIPE, text=True)
    word, child = parent.stdout.readline().split()
    assert word == "held"
    parent.wait()
    try:
        with pytest.raises(lock.RunDirBusy) as e:
            lock.acquire(tmp_path, lock.TRAIN_LOCK, "train.py")
        assert f"pid {parent.pid} on " in str(e.value)
        assert "that pid is gone, a process forked from it still holds train.lock" in str(e.value)
    finally:
        os.kill(int(child), signal.SIGKILL)


def test_a_run_dir_that_cannot_hold_a_lock_file_warns_and_goes_on(tmp_path, capsys):
    missing = tmp_path / "gone"  # stands in for a read-only dir: the lock file cannot be opened
    assert lock.acquire(missing, lock.TRAIN_LOCK, "train.py") is False
    assert capsys.readouterr().err == (f"[boundlab] warning: cannot lock {missing}/train.lock (No such file "
                                       f"or directory); nothing stops a second process on this run dir\n")
