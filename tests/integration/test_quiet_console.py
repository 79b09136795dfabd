"""The first-hour console end to end (issue 38): `train.py debug=smoke` prints one line per logging step,
no library FutureWarning, no W&B offline-URL warning, no metric dict and no weight-loading bars, and its train.log keeps every
probe's line and the end-of-run boundary table."""

import pytest


@pytest.mark.slow
def test_smoke_run_console_and_train_log(smoke_run):
    # The session's `train.py debug=smoke backend.torch_threads=1 task.toy2.train_mix={H1:0.5,B3:0.5}` run
    # (tests/integration/conftest.py), with W&B not silenced and no PYTHONWARNINGS: read only.
    run, _, p = smoke_run
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout + p.stderr
    steps = [ln for ln in out.replace("\r", "\n").splitlines() if ln.startswith("step ") and "/4  " in ln]
    assert len(steps) == 4 and all("reward" in ln for ln in steps), steps
    assert "FutureWarning" not in out and "DeprecationWarning" not in out
    assert "{'loss'" not in out and "'reward':" not in out
    assert "URL not available" not in out  # TRL's model card read wandb.run.url at each save
    assert "Loading weights" not in out and "Writing model shards" not in out
    log = (run / "train.log").read_text()
    assert log.count("[boundlab] probe base:") == 1 and log.count("[boundlab] probe step ") == 2
    assert "[boundlab] end of run: the boundary" in log and "boundary (n = 4" in log
