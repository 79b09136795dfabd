"""A SLURM job requeued into the run dir it made resumes it (boundlab.rundir.slurm, boundlab.resume):
through its batch script's command line (`hydra.run.dir=`) and through a Hydra job run again (as
submitit requeues). Anything it cannot prove it made is left to the usual refusal.

The run dirs here are written as Hydra writes them, without training anything; the end-to-end case
(a smoke run preempted after its first checkpoint, then requeued) is
tests/integration/test_slurm_requeue.py."""

from __future__ import annotations

import json

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from boundlab.resume import record, requeue_argv, requeued_job
from boundlab.rundir import slurm
from boundlab.rundir.owner import ForeignRunDir

from test_resume_rundir import CONF, make_run

ARGV = ["debug=smoke", "backend.torch_threads=1"]


@pytest.fixture
def no_slurm(monkeypatch):
    for key in ("SLURM_JOB_ID", "SLURM_RESTART_COUNT", "SLURM_CLUSTER_NAME"):
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


def _as_job(mp, job_id, restart, cluster=None):
    mp.setenv("SLURM_JOB_ID", str(job_id))
    mp.setenv("SLURM_RESTART_COUNT", str(restart))
    if cluster is None:
        mp.delenv("SLURM_CLUSTER_NAME", raising=False)
    else:
        mp.setenv("SLURM_CLUSTER_NAME", cluster)


def _composed():
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=ARGV)


@pytest.fixture
def made_by_4242(tmp_path, no_slurm):
    """A run dir made by SLURM job 4242 on its first start (what training records before any model work)."""
    run = make_run(tmp_path / "run", ARGV)
    _as_job(no_slurm, 4242, 0)
    slurm.record_job(run, OmegaConf.to_yaml(_composed(), resolve=False))
    (run / "probes.jsonl").write_text(json.dumps({"kind": "base", "step": 0}) + "\n")
    return run


def test_a_fresh_run_records_its_job_in_its_own_file(tmp_path, no_slurm):
    run = tmp_path / "run"
    run.mkdir()
    slurm.record_job(run, "a: 1\n")
    assert list(run.iterdir()) == []  # outside SLURM: nothing recorded
    _as_job(no_slurm, 77, 0, cluster="big")
    slurm.record_job(run, "a: 1\n")
    # Not run_info.json: a watcher reads its appearance as "training opened its W&B run".
    assert sorted(p.name for p in run.iterdir()) == ["slurm_job.json"]
    assert json.loads((run / "slurm_job.json").read_text()) == {
        "job_id": "77", "cluster": "big", "config": slurm.config_digest("a: 1\n")}


def test_the_record_claims_the_dir_for_that_job(tmp_path, no_slurm):
    from boundlab.rundir.owner import check_fresh_run_dir

    run = make_run(tmp_path / "run", ARGV)
    _as_job(no_slurm, 77, 0)
    slurm.record_job(run, "a: 1\n")  # preempted right after, before any training file
    _as_job(no_slurm, 78, 0)  # another job, pointed at it by an experiment file
    with pytest.raises(ForeignRunDir, match=r"already holds a training run \(slurm_job.json\)"):
        check_fresh_run_dir(run)


def test_the_batch_scripts_command_line_becomes_the_runs_resume(made_by_4242, no_slurm, capsys):
    _as_job(no_slurm, 4242, 1)
    argv = [*ARGV, f"hydra.run.dir={made_by_4242}", "hydra.job.chdir=false"]
    assert requeue_argv(argv) == [f"resume={made_by_4242}", *ARGV]
    assert capsys.readouterr().out == (f"[boundlab] SLURM job 4242 (restart 1) restarted in the run dir it "
                                       f"made: resuming it (train.py resume={made_by_4242})\n")


@pytest.mark.parametrize("job_id,restart,cluster", [
    (4242, 0, None),     # the job's first start, run twice: not a requeue
    (4243, 1, None),     # another job
    (4242, 1, "other"),  # the same number on another cluster
])
def test_anything_but_the_same_job_restarted_is_left_to_the_usual_refusal(made_by_4242, no_slurm,
                                                                          job_id, restart, cluster):
    _as_job(no_slurm, job_id, restart, cluster)
    argv = [*ARGV, f"hydra.run.dir={made_by_4242}"]
    assert requeue_argv(argv) == argv
    assert not slurm.is_requeue_of(made_by_4242)


def test_no_record_no_slurm_or_an_explicit_resume_is_left_alone(tmp_path, made_by_4242, no_slurm):
    plain = make_run(tmp_path / "plain", ARGV)  # made outside SLURM
    _as_job(no_slurm, 4242, 1)
    argv = [*ARGV, f"hydra.run.dir={plain}"]
    assert requeue_argv(argv) == argv
    assert requeue_argv([f"resume={made_by_4242}"]) == [f"resume={made_by_4242}"]
    assert requeue_argv(["-m", *ARGV, f"hydra.run.dir={made_by_4242}"])[0] == "-m"
    (made_by_4242 / "slurm_job.json").write_text("{torn")  # an unreadable record proves nothing
    assert not slurm.is_requeue_of(made_by_4242)
    no_slurm.delenv("SLURM_JOB_ID")
    assert requeue_argv([*ARGV, f"hydra.run.dir={made_by_4242}"])[0] == ARGV[0]


def test_a_hydra_job_run_again_by_its_requeue_is_the_runs_resume(made_by_4242, no_slurm):
    # submitit requeues a job by running it through Hydra again: same config, same run dir.
    _as_job(no_slurm, 4242, 2)
    cfg = requeued_job(_composed(), made_by_4242)
    assert cfg.resume == str(made_by_4242.resolve())
    line = json.loads((made_by_4242 / ".hydra" / "resumes.jsonl").read_text())
    assert line["slurm"] == {"job_id": "4242", "cluster": "", "restart": 2}
    assert line["changed"] == {}


def test_a_hydra_job_whose_config_changed_is_refused_in_one_line(made_by_4242, no_slurm):
    _as_job(no_slurm, 4242, 1)
    cfg = _composed()
    cfg.train.max_steps = 8  # a config file edited while the job waited in the queue
    with pytest.raises(ForeignRunDir) as e:
        requeued_job(cfg, made_by_4242)
    assert str(e.value) == (
        f"SLURM job 4242 (restart 1) restarted in the run dir it made ({made_by_4242.resolve()}), but its "
        f"config no longer composes to the one it started with (a config file changed?): resume it "
        f"explicitly with python train.py resume={made_by_4242.resolve()}")
    assert not (made_by_4242 / ".hydra" / "resumes.jsonl").exists()


def test_a_hydra_job_that_is_not_a_requeue_is_untouched(made_by_4242, no_slurm):
    _as_job(no_slurm, 4242, 0)
    assert requeued_job(_composed(), made_by_4242).resume is None
    _as_job(no_slurm, 999, 1)
    assert requeued_job(_composed(), made_by_4242).resume is None


def test_every_resume_under_slurm_records_the_job(tmp_path, no_slurm):
    run = make_run(tmp_path / "run", ARGV)
    record(run, ["train.py", f"resume={run}"], {})
    _as_job(no_slurm, 5, 3, cluster="c")
    record(run, ["train.py", f"resume={run}"], {})
    first, second = [json.loads(x) for x in (run / ".hydra" / "resumes.jsonl").read_text().splitlines()]
    assert "slurm" not in first
    assert second["slurm"] == {"job_id": "5", "cluster": "c", "restart": 3}
