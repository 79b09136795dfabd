"""Run archives of runs stopped midway (boundlab.probe.run_archive, `pack --allow-unfinished`): what
an unfinished run carries (its run dir whole but the checkpoints and locks, its latest complete
checkpoint with the trainer's state, an unprobed checkpoint's model and the samples its stopped probe
had stored), the round trip, the rule that a later packing replaces an unfinished one only when it
continues it, and what restore does where the same run is already on disk. On hand-made run dirs;
the real resume after a restore: tests/integration/test_run_archive_smoke.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from boundlab.models import model_fingerprint
from boundlab.probe.run_archive import MANIFEST, RunArchiveError, pack, restore_one
from boundlab.probe.store import SampleRow, Store
from boundlab.rundir import lock

from test_run_archive import MODEL, TRAINER_STATE, _ckpt, _run, _tree  # tests/unit, the finished case


def _stopped(tmp_path: Path, in_flight: int = 3) -> tuple[Path, Path]:
    """A run stopped midway: checkpoint 2 probed, checkpoint 4 saved and its probe stopped after
    `in_flight` samples; locks and W&B records left behind as a killed run leaves them."""
    run, store = _run(tmp_path, probed=(2,))
    (run / "training_done").unlink()
    (run / "train.lock").write_text('{"pid": 1}\n')
    (run / "wandb_segments").mkdir()
    (run / "wandb_segments" / "offline-run-x.json").write_text('{"closed": false}\n')
    s = Store(store)
    try:
        fp = model_fingerprint(str(run / "checkpoints" / "checkpoint-4"))
        s.ensure_probe("ck4-key", fp, "task", {"seed": 0}, model_name="step 4", task_name="toy2")
        s.add_samples("ck4-key", [SampleRow("p1", i, f"t{i}", str(i), False, False, "wrong", 3, None)
                                  for i in range(in_flight)])
    finally:
        s.close()
    return run, store


def _add_samples(store: Path, key: str, start: int, n: int) -> None:
    s = Store(store)
    try:
        s.add_samples(key, [SampleRow("p1", i, f"t{i}", str(i), False, False, "wrong", 3, None)
                            for i in range(start, start + n)])
    finally:
        s.close()


def test_an_unfinished_run_carries_its_run_dir_its_latest_checkpoint_whole_and_its_stopped_probe(tmp_path):
    run, store = _stopped(tmp_path)
    with pytest.raises(RunArchiveError, match="has not finished training .*--allow-unfinished"):
        pack(run, tmp_path / "arms" / "grpo_s0", store)
    report = pack(run, tmp_path / "arms" / "grpo_s0", store, allow_unfinished=True)
    assert (report["finished"], report["step"], report["replaced_step"]) == (False, 4, None)
    man = json.loads((tmp_path / "arms" / "grpo_s0" / MANIFEST).read_text())
    assert man["finished"] is False and man["final_step"] == 4
    assert sorted(man["files"]) == sorted(
        [".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml", "boundary.csv", "boundary.png",
         "probes.jsonl", "run_info.json", "train.log", "wandb/run.wandb", "wandb_segments/offline-run-x.json"]
        + [f"checkpoints/checkpoint-4/{m}" for m in MODEL + TRAINER_STATE])  # no lock, no checkpoint-2
    assert [(p["kind"], p["step"], p["key"]) for p in man["probes"]] == [
        ("base", 0, "grpo_s0-base-0-key"), ("checkpoint", 2, "grpo_s0-checkpoint-2-key"), ("in_flight", 4, "ck4-key")]
    assert man["samples"] == {"grpo_s0-base-0-key": 4, "grpo_s0-checkpoint-2-key": 4, "ck4-key": 3}
    # Restored on a fresh machine: the run dir as it was (to be resumed), every sample in the store.
    clone = tmp_path / "clone"
    got = restore_one(tmp_path / "arms" / "grpo_s0", clone / "sweep", clone / "store.sqlite")
    assert got["restored"] is True and got["finished"] is False
    carried = {k: v for k, v in _tree(run).items()
               if not k.startswith("checkpoints/checkpoint-2") and k != "train.lock"}
    assert _tree(clone / "sweep" / "grpo_s0") == carried
    s = Store(clone / "store.sqlite", writable=False)
    try:
        assert {p["key"]: sum(s.counts_done(p["key"]).values()) for p in s.list_probes()} == man["samples"]
    finally:
        s.close()


def test_a_checkpoint_saved_but_not_probed_goes_along_as_a_model(tmp_path):
    run, store = _stopped(tmp_path)
    _ckpt(run, 6)  # the latest: carried whole; 4 (unprobed) as a model, 2 (probed) not at all
    man = json.loads((Path(pack(run, tmp_path / "a", store, allow_unfinished=True)["archive"]) / MANIFEST).read_text())
    ck = sorted(f for f in man["files"] if f.startswith("checkpoints/"))
    assert ck == sorted([f"checkpoints/checkpoint-4/{m}" for m in MODEL]
                        + [f"checkpoints/checkpoint-6/{m}" for m in MODEL + TRAINER_STATE])
    assert man["final_step"] == 6 and ("in_flight", 4) in [(p["kind"], p["step"]) for p in man["probes"]]


def test_a_later_packing_replaces_an_unfinished_one_only_when_it_continues_it(tmp_path):
    run, store = _stopped(tmp_path)
    out = tmp_path / "arms" / "grpo_s0"
    pack(run, out, store, allow_unfinished=True)
    before = _tree(out)
    assert pack(run, out, store, allow_unfinished=True)["packed_already"] is True and _tree(out) == before
    # The stopped probe stored more samples (resumed, stopped again): packed again, the old replaced.
    _add_samples(store, "ck4-key", 3, 2)
    again = pack(run, out, store, allow_unfinished=True)
    assert (again["packed_already"], again["replaced_step"]) == (False, 4)
    assert json.loads((out / MANIFEST).read_text())["samples"]["ck4-key"] == 5
    assert sorted(p.name for p in out.parent.iterdir()) == ["grpo_s0"]  # no staging or old folder left
    # A store that lost samples the archive holds (another machine's, emptier): refused, kept.
    other = tmp_path / "other.sqlite"
    shutil.copy(store, other)
    s = Store(other)
    s.db.execute("DELETE FROM samples WHERE key='ck4-key' AND idx >= 3")
    s.db.commit()
    s.close()
    kept = _tree(out)
    with pytest.raises(RunArchiveError, match="does not continue .*fewer samples of probe ck4-key"):
        pack(run, out, other, allow_unfinished=True)
    # Another run's config: refused, kept.
    (run / ".hydra" / "config.yaml").write_text("# another run\n")
    with pytest.raises(RunArchiveError, match=r"does not continue .*its .hydra/config.yaml differs"):
        pack(run, out, store, allow_unfinished=True)
    assert _tree(out) == kept
    (run / ".hydra" / "config.yaml").write_text("# config.yaml\n")
    # The run finishes (checkpoint 6 trained and probed): the finished packing replaces it, and is
    # never replaced by an unfinished one.
    _ckpt(run, 6)
    s = Store(store)
    fp = model_fingerprint(str(run / "checkpoints" / "checkpoint-6"))
    s.ensure_probe("ck6-key", fp, "task", {"seed": 0}, model_name="step 6", task_name="toy2")
    s.add_samples("ck6-key", [SampleRow("p1", 0, "t", "0", True, True, "correct", 3, None)])
    s.close()
    with open(run / "probes.jsonl", "a") as f:  # the resume finished checkpoint 4's probe, then 6's
        for step, key in ((4, "ck4-key"), (6, "ck6-key")):
            f.write(json.dumps({"kind": "checkpoint", "step": step, "probe_key": key}) + "\n")
    (run / "training_done").write_text("ok\n")
    done = pack(run, out, store, allow_unfinished=True)
    assert (done["finished"], done["step"], done["replaced_step"]) == (True, 6, 4)
    (run / "training_done").unlink()
    with pytest.raises(RunArchiveError, match="already holds another packing"):
        pack(run, out, store, allow_unfinished=True)


def test_restore_keeps_the_same_run_where_it_is_as_far_along_and_refuses_any_other(tmp_path):
    run, store = _stopped(tmp_path)
    out = tmp_path / "arms" / run.name
    pack(run, out, store, allow_unfinished=True)
    sweep = run.parent
    # This machine's run dir of the same run, as far along (here: the packed state itself): kept.
    got = restore_one(out, sweep, store)
    assert got["restored"] is False and got["kept"] == "it is at step 4, the packing at 4"
    # Further along (a checkpoint saved since): kept, untouched.
    _ckpt(run, 6)
    before = _tree(run)
    assert restore_one(out, sweep, store)["kept"] == "it is at step 6, the packing at 4"
    assert _tree(run) == before
    # Behind the packing (no complete checkpoint left): refused, untouched.
    for ck in ("checkpoint-4", "checkpoint-6"):
        (run / "checkpoints" / ck / "boundlab_complete").unlink()
    with pytest.raises(RunArchiveError, match="exists and is not the packed run"):
        restore_one(out, sweep, store)
    # Another run's config: refused.
    (run / "checkpoints" / "checkpoint-6" / "boundlab_complete").write_text("ok\n")
    (run / ".hydra" / "config.yaml").write_text("# another run\n")
    with pytest.raises(RunArchiveError, match="exists and is not the packed run"):
        restore_one(out, sweep, store)


def test_a_run_dir_in_use_is_not_packed(tmp_path):
    run, store = _stopped(tmp_path)
    assert lock.acquire(run, "train.lock", "test trainer")
    try:
        with pytest.raises(RunArchiveError, match="is in use .*train.lock is held by pid"):
            pack(run, tmp_path / "a", store, allow_unfinished=True)
    finally:
        lock.release(run, "train.lock")
    assert not (tmp_path / "a").exists()
    assert pack(run, tmp_path / "a", store, allow_unfinished=True)["finished"] is False


def test_a_run_with_no_complete_checkpoint_has_nothing_to_resume_from(tmp_path):
    run, store = _stopped(tmp_path)
    shutil.rmtree(run / "checkpoints")
    with pytest.raises(RunArchiveError, match="no complete checkpoint to carry yet: nothing to resume from"):
        pack(run, tmp_path / "a", store, allow_unfinished=True)
