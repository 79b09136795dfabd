"""Per-task blocks replace the flat task keys (issue 37 item 2): `task.toy2.*`, `task.toy_vision.*`,
`task.evalplus.*`, `task.livecodebench.*`, `task.visual.*`.

The probe keys do not move (the task fingerprints below were computed on f4d1d71, before the blocks,
from the flat keys), run dirs saved with the flat keys still resume, are watched and reported
(tests/data/flat_task_runs: real saved configs), and an old key on a command line is refused in one
line naming its new home."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

import boundlab.builtins  # noqa: F401 - registers the tasks (toy2, toy_vision, ...)
from boundlab.config import (MOVED_KEYS, ProbeMain, TaskConfig, TrainMain, as_typed, migrate_saved,
                             register_configs)
from boundlab.tasks import build_task

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
OLD_RUNS = ROOT / "tests" / "data" / "flat_task_runs"
register_configs()

# The flat keys, each with its block (the migration's table must say the same).
FLAT = {"tiers": "toy2", "per_tier": "toy2", "slice": "toy2", "train_mix": "toy2",
        "render_dir": "toy_vision", "distractors": "toy_vision", "tests": "evalplus",
        "date_from": "livecodebench", "date_to": "livecodebench",
        "image_dir": "visual", "question_type": "visual"}


def _compose(name: str, *overrides: str):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name=name, overrides=list(overrides))


def _fp(task_cfg, **changes) -> tuple[int, str]:
    task = build_task(dataclasses.replace(as_typed(task_cfg, TaskConfig), **changes))
    return len(task.problems), task.fingerprint()


# ---- probe keys: the same tasks, the same fingerprints --------------------------------------------

# (entry point, overrides in the new keys) -> (problems, fingerprint) of its probe task, computed on
# f4d1d71 with the flat keys (`task.slice=heldout task.tiers=[H1,H2,B3,B4]` for the settled slice).
PROBE_TASKS = [
    # The settled experiment's large-k slice: archive/toy2_settled's 2.5 M samples are under this key.
    (("probe", "task=toy2", "task.toy2.slice=heldout", "task.toy2.tiers=[H1,H2,B3,B4]"), (400, "6ccfe7ff547f8e71")),
    # The default runs: `python probe.py` and `python train.py`.
    (("probe",), (120, "ff8ab27961b3bab5")),
    (("train",), (120, "ff8ab27961b3bab5")),
    # Each arm of `train.py -m experiment=toy2_settled` probes every checkpoint on the whole slice.
    (("train", "experiment=toy2_settled", "+arm=grpo_s0"), (450, "12f5d97e6eba40c3")),
    (("train", "debug=demo"), (24, "3263278376d82e83")),
]


@pytest.mark.parametrize("overrides,expected", PROBE_TASKS, ids=[" ".join(o) for o, _ in PROBE_TASKS])
def test_probe_tasks_keep_their_fingerprints(overrides, expected):
    assert _fp(_compose(*overrides).task) == expected


@pytest.mark.parametrize("overrides,expected", [
    ((), (1334, "b5a2ece095f52c37")),  # the default training mix
    (("debug=demo",), (400, "f9cb592d956da81d")),  # task.toy2.train_mix: H1 (a tier's name)
    (("debug=demo", "task.toy2.train_mix={H1:0.5,B3:0.5}"), (None, "24368fdee54a6b1b")),
])
def test_training_tasks_keep_their_fingerprints(overrides, expected):
    cfg = _compose("train", *overrides)
    n, fp = _fp(cfg.task, split=cfg.train.train_split)
    assert (n if expected[0] is not None else None, fp) == expected


def test_toy_vision_reads_the_toy2_block_for_its_problems_and_its_own_for_the_pictures(tmp_path):
    # The fingerprint hashes the pictures' bytes, not where they are drawn.
    cfg = _compose("probe", "task=toy_vision", "task.toy2.per_tier=2", f"task.toy_vision.render_dir={tmp_path}")
    assert _fp(cfg.task) == (10, "0ec17c366afbdca3")
    assert len(list(tmp_path.glob("*.png"))) == 10
    with pytest.raises(ValueError, match="task.toy_vision.distractors must be >= 0"):
        _fp(cfg.task, toy_vision=dataclasses.replace(as_typed(cfg.task, TaskConfig).toy_vision, distractors=-1))


def test_the_slice_is_toy2s_alone():
    with pytest.raises(ValueError, match="task.toy2.slice=heldout: only task=toy2 has named slices"):
        build_task({"name": "toy_arith", "toy2": {"slice": "heldout"}})


# ---- the command line: an old key is one line naming the new one ------------------------------------

def test_the_table_moves_every_flat_task_key_into_its_block():
    assert {k: v for k, v in MOVED_KEYS.items() if k.startswith("task.")} == {
        "task.limit": "probe.limit", **{f"task.{k}": f"task.{b}.{k}" for k, b in FLAT.items()}}
    flat = {f.name for f in dataclasses.fields(TaskConfig)} & set(FLAT)
    assert not flat  # none is left flat


@pytest.mark.parametrize("schema", ["probe", "train", "report"])
@pytest.mark.parametrize("key", sorted(FLAT))
def test_an_old_flat_key_is_refused_naming_its_block(key, schema):
    from boundlab.cli import unknown_key
    from boundlab.report.schema import ReportMain

    schema = {"probe": ProbeMain, "train": TrainMain, "report": ReportMain}[schema]
    new = f"task.{FLAT[key]}.{key}"
    assert unknown_key([f"task.{key}=x"], CONF, schema) == f"config key 'task.{key}' moved to '{new}': write {new}=x"
    assert unknown_key([f"{new}=x"], CONF, schema) is None


def test_the_help_page_names_only_keys_that_exist():
    from boundlab.cli import unknown_key

    page = (CONF / "hydra" / "help" / "train.yaml").read_text()
    keys = re.findall(r"\b(task\.\w+\.\w+)=", page)
    assert {"task.toy2.slice", "task.toy2.train_mix", "task.evalplus.tests"} <= set(keys)
    assert unknown_key([f"{k}=1" for k in keys], CONF, TrainMain) is None


# ---- run dirs saved with the flat keys -------------------------------------------------------------

def _old_run(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(OLD_RUNS / name, tmp_path / name))


def test_a_saved_flat_config_migrates_and_says_which_keys_moved(capsys):
    f = OLD_RUNS / "toy2_settled_grpo_s0" / ".hydra" / "config.yaml"
    saved = OmegaConf.load(f)
    assert saved.task.slice == "heldout"  # the fixture is the old shape
    cfg = migrate_saved(saved, f)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(f) in err[0] and "task.slice -> task.toy2.slice" in err[0]
    assert "task.render_dir -> task.toy_vision.render_dir" in err[0]
    assert not set(FLAT) & set(cfg.task)
    assert OmegaConf.to_container(cfg.task.toy2) == {"tiers": ["H1", "H2", "B3", "B4", "X"], "per_tier": 24,
                                                     "slice": "heldout", "train_mix": None}
    # Today's shape goes through untouched and silently.
    assert migrate_saved(cfg, f) is cfg and capsys.readouterr().err == ""


@pytest.mark.parametrize("name,probe_fp,train_fp", [
    ("toy2_settled_grpo_s0", "12f5d97e6eba40c3", "b5a2ece095f52c37"),
    ("demo_train_mix", "3263278376d82e83", "24368fdee54a6b1b"),
])
def test_resume_accepts_an_old_run_dir_and_builds_the_same_tasks(tmp_path, name, probe_fp, train_fp):
    from boundlab.resume import ResumeError, prepare
    from boundlab.validate import validate

    run = _old_run(tmp_path, name)
    cfg, run_dir, changes = prepare([f"resume={run}"])
    assert run_dir == run.resolve() and changes == {}
    validate(cfg)
    typed = as_typed(cfg, TrainMain)  # as resume.main hands it to training
    assert _fp(typed.task)[1] == probe_fp
    assert _fp(typed.task, split=typed.train.train_split)[1] == train_fp
    # The run's config wins: an allowed override is taken, a change to the task refused, and an old
    # key is refused naming its block.
    cfg, _, changes = prepare([f"resume={run}", "backend.torch_threads=2"])
    assert changes == {"backend.torch_threads": 2} and cfg.task.toy2.tiers == typed.task.toy2.tiers
    with pytest.raises(ResumeError, match="cannot change task.toy2.tiers on resume|a resumed run keeps"):
        prepare([f"resume={run}", "task.toy2.tiers=[H2]"])
    with pytest.raises(ResumeError) as e:
        prepare([f"resume={run}", "task.tiers=[H2]"])
    assert str(e.value) == (f"resume={run.resolve()}: config key 'task.tiers' moved to 'task.toy2.tiers': "
                            f"write task.toy2.tiers=[H2]")
    # A requeued job restates its own command line, old keys and all (train.py's SLURM requeue):
    # the run's own values, read at their new keys, are restatements.
    argv = [str(a) for a in OmegaConf.load(run / ".hydra" / "overrides.yaml")]
    assert prepare([f"resume={run}", *argv])[2] == {}


def test_the_report_reads_an_old_run_dir_in_the_new_shape(tmp_path):
    from boundlab.report.inputs import read_run

    run = _old_run(tmp_path, "toy2_settled_grpo_s0")
    (run / "probes.jsonl").write_text("")
    config = read_run(run).config
    assert config.task.toy2.slice == "heldout" and "slice" not in config.task
    assert _fp(config.task)[1] == "12f5d97e6eba40c3"


def test_the_watcher_reads_an_old_run_dir_in_the_new_shape(tmp_path, monkeypatch):
    from test_typed_options import config_the_watcher_reads  # tests/unit, the other moved keys' case

    run = _old_run(tmp_path, "toy2_settled_grpo_s0")
    (run / "run_info.json").write_text('{"wandb_run_id": null}')  # training has started
    seen = config_the_watcher_reads(run, monkeypatch)
    assert seen.task.toy2.slice == "heldout" and _fp(seen.task)[1] == "12f5d97e6eba40c3"


def test_an_old_flat_key_on_a_command_line_is_one_line_exit_2(tmp_path):
    # One entry point end to end (train.py and report.py refuse through the same unknown_key, above).
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "probe.py", "task.slice=heldout", f"hydra.run.dir={tmp_path / 'run'}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (r.returncode, r.stderr.strip()) == (
        2, "error: config key 'task.slice' moved to 'task.toy2.slice': write task.toy2.slice=heldout")
    assert not (tmp_path / "run").exists()  # refused before Hydra composed anything
