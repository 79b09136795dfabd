"""The boundary alarm's rule, on hand-built probe rows (boundlab.boundary.alarm), and the training
callback's stop: a checkpoint's pass@n below the base's with the paired interval excluding 0, beyond
the base-vs-base null's interval on the same scope, fires; anything short of that stays silent."""

from __future__ import annotations

from types import SimpleNamespace

from boundlab.boundary.alarm import best_boundary, best_boundary_path, describe, shrinkage, stop_requested
from boundlab.boundary.callback import ProbeCallback
from boundlab.rundir.io import append_jsonl


def delta(d, lo, hi):
    return {"delta_pass@n": d, "delta_pass@n_ci_low": lo, "delta_pass@n_ci_high": hi}


def row(all_, groups=None, step=75):
    return {"step": step, "kind": "checkpoint", "metric": "strict", "n": 256, "group_by": "tier",
            **all_, "groups": groups or {}}


NULL = {"kind": "null", **delta(0.02, -0.04, 0.08),
        "groups": {"B4": delta(-0.03, -0.10, 0.05), "H2": delta(0.0, -0.02, 0.02)}}


def test_fires_only_below_zero_and_beyond_the_null_on_that_scope():
    r = row(delta(-0.05, -0.09, -0.01),                    # all: below 0 and below the null's -0.04
            {"B4": delta(-0.08, -0.15, -0.02),             # below 0 but inside the null's -0.10: silent
             "H2": delta(-0.06, -0.11, -0.01),             # below 0, beyond the null's -0.02: fires
             "B3": delta(-0.20, -0.30, 0.01)})             # its interval reaches 0: silent
    fired = shrinkage(r, NULL)
    assert [f["scope"] for f in fired] == ["all", "H2"]
    h2 = fired[1]
    assert (h2["delta_pass@n"], h2["ci_low"], h2["ci_high"], h2["null_ci_low"]) == (-0.06, -0.11, -0.01, -0.02)
    line = describe(r, h2)
    assert "step 75" in line and "strict pass@256 on tier H2" in line and "-0.060 [-0.110, -0.010]" in line
    assert "null's -0.020" in line


def test_without_a_null_the_interval_alone_decides_and_says_so():
    r = row(delta(-0.03, -0.05, -0.001), {"B4": delta(0.1, 0.0, 0.2)})
    fired = shrinkage(r, None)
    assert [f["scope"] for f in fired] == ["all"] and fired[0]["null_ci_low"] is None
    assert "no base-vs-base null" in describe(r, fired[0])
    assert shrinkage(row(delta(-0.03, -0.05, 0.0)), None) == []  # touching 0 is not excluding it
    assert shrinkage(row(delta(0.05, 0.01, 0.09)), None) == []    # a rise never fires
    assert shrinkage({"kind": "checkpoint", "step": 1, "n": 8}, None) == []  # no comparison: silent


def test_best_boundary_is_the_widest_then_the_sharpest_then_the_earliest(tmp_path):
    rows = [{"kind": "base", "step": 0, "pass@n": 0.9, "pass@1": 0.1},
            {"kind": "checkpoint", "step": 75, "pass@n": 0.8, "pass@1": 0.3},
            {"kind": "checkpoint", "step": 150, "pass@n": 0.8, "pass@1": 0.4},
            {"kind": "checkpoint", "step": 225, "pass@n": 0.8, "pass@1": 0.4},
            {"kind": "checkpoint", "step": 300, "pass@n": 0.7, "pass@1": 0.6}]
    assert best_boundary(rows)["step"] == 150
    assert best_boundary_path(tmp_path, rows) == {tmp_path / "checkpoints" / "checkpoint-150"}
    assert best_boundary(rows[:1]) is None and best_boundary_path(tmp_path, rows[:1]) == set()


def test_the_callback_stops_training_once_an_alarm_is_on_disk(tmp_path, capsys):
    tracker = SimpleNamespace(run_dir=tmp_path)
    state = SimpleNamespace(global_step=10, max_steps=100)
    for stop in (False, True):
        cb = ProbeCallback(tracker, "detached", stop_on_shrink=stop)
        control = SimpleNamespace(should_save=False, should_training_stop=False)
        assert not cb.on_step_end(None, state, control).should_training_stop  # no alarm yet
    assert not stop_requested(tmp_path)
    append_jsonl(tmp_path / "probes.jsonl", {"kind": "checkpoint", "step": 5, "pass@n": 0.5, "pass@1": 0.2})
    append_jsonl(tmp_path / "alarms.jsonl", {"step": 5, "scopes": [{"scope": "all"}]})
    assert stop_requested(tmp_path)
    off = ProbeCallback(tracker, "detached", stop_on_shrink=False)
    control = SimpleNamespace(should_save=False, should_training_stop=False)
    assert not off.on_step_end(None, state, control).should_training_stop  # the alarm alone never stops
    on = ProbeCallback(tracker, "detached", stop_on_shrink=True)
    assert on.on_step_end(None, state, control).should_training_stop
    out = capsys.readouterr().out
    assert "stopping at step 10 after the boundary alarm" in out and "checkpoint-5" in out


def test_rotation_keeps_the_best_boundary_only_when_the_run_may_stop_on_a_shrink(tmp_path):
    from boundlab.rundir.checkpoints import mark_complete

    ckdir = tmp_path / "checkpoints"
    for step, pn in ((2, 0.9), (4, 0.5), (6, 0.4)):
        (ckdir / f"checkpoint-{step}").mkdir(parents=True)
        mark_complete(ckdir / f"checkpoint-{step}")
        append_jsonl(tmp_path / "probes.jsonl", {"kind": "checkpoint", "step": step, "pass@n": pn, "pass@1": 0.1})
    tracker = SimpleNamespace(run_dir=tmp_path)
    args = SimpleNamespace(output_dir=str(ckdir))
    state = SimpleNamespace(is_world_process_zero=True, global_step=6, best_model_checkpoint=None)
    control = SimpleNamespace(should_training_stop=False)
    ProbeCallback(tracker, "detached", save_total_limit=1, stop_on_shrink=True).on_save(args, state, control)
    assert sorted(p.name for p in ckdir.iterdir()) == ["checkpoint-2", "checkpoint-6"]
    ProbeCallback(tracker, "detached", save_total_limit=1).on_save(args, state, control)
    assert sorted(p.name for p in ckdir.iterdir()) == ["checkpoint-6"]
