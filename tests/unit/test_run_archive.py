"""Run archives (boundlab.probe.run_archive): a finished training run dir carried in git. On a
hand-made run dir: what is carried and what is not, a round trip into a new store and another
folder, and every refusal (an unfinished run, an unprobed final checkpoint, a run dir that exists
and differs, a damaged archive) is one line that writes nothing. The real run: tests/integration/
test_run_archive_smoke.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.errors import StoreError
from boundlab.models import model_fingerprint
from boundlab.probe.run_archive import (FILES_ARCHIVE, MANIFEST, PROBES_ARCHIVE, RunArchiveError, pack,
                                        restore_one)
from boundlab.probe.store import SampleRow, Store

ROOT = Path(__file__).resolve().parents[2]
MODEL = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
         "generation_config.json", "trainer_state.json", "boundlab_complete")
TRAINER_STATE = ("optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin")


def _ckpt(run: Path, step: int) -> Path:
    ck = run / "checkpoints" / f"checkpoint-{step}"
    ck.mkdir(parents=True)
    for name in MODEL + TRAINER_STATE:
        (ck / name).write_bytes(f"{name} of step {step}".encode() * 50)
    (ck / "config.json").write_text(json.dumps({"model_type": "llama", "step": step}))
    return ck


def _run(tmp_path: Path, name: str = "grpo_s0", probed: tuple[int, ...] = (2, 4)) -> tuple[Path, Path]:
    """A finished run dir (checkpoints 2 and 4, both complete) and the store its probes are in."""
    run = tmp_path / "sweep" / name
    (run / ".hydra").mkdir(parents=True)
    for f in ("config.yaml", "hydra.yaml", "overrides.yaml"):
        (run / ".hydra" / f).write_text(f"# {f}\n")
    for f in ("run_info.json", "train.log", "boundary.csv", "boundary.png"):
        (run / f).write_text(f"{f}\n")
    (run / "training_done").write_text("ok\n")
    (run / "wandb").mkdir()
    (run / "wandb" / "run.wandb").write_bytes(b"wandb")
    store = Store(tmp_path / "store.sqlite")
    rows = []
    for kind, step, model_dir in [("base", 0, None), ("checkpoint", 2, _ckpt(run, 2)),
                                  ("checkpoint", 4, _ckpt(run, 4))]:
        if kind == "checkpoint" and step not in probed:
            continue
        key = f"{name}-{kind}-{step}-key"
        fp = model_fingerprint(str(model_dir)) if model_dir else "base-fp"
        store.ensure_probe(key, fp, "task", {"seed": 0}, model_name="base" if step == 0 else f"step {step}",
                           task_name="toy2")
        store.add_samples(key, [SampleRow("p1", i, f"text {i}", str(i), i == 0, i == 0, "correct", 3, None)
                                for i in range(4)])
        rows.append({"kind": kind, "step": step, "probe_key": key, "pass@1": 0.25})
    store.close()
    (run / "probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run, tmp_path / "store.sqlite"


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}


def test_pack_carries_the_records_and_the_final_models_files_only(tmp_path):
    run, store = _run(tmp_path)
    report = pack(run, tmp_path / "arms" / "grpo_s0", store)
    out = tmp_path / "arms" / "grpo_s0"
    assert sorted(p.name for p in out.iterdir()) == sorted([FILES_ARCHIVE, MANIFEST, PROBES_ARCHIVE])
    man = json.loads((out / MANIFEST).read_text())
    assert sorted(man["files"]) == sorted(
        [".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml", "boundary.csv", "probes.jsonl",
         "run_info.json", "train.log", "training_done"] + [f"checkpoints/checkpoint-4/{m}" for m in MODEL])
    assert man["final_step"] == 4
    assert man["model_fingerprint"] == model_fingerprint(str(run / "checkpoints/checkpoint-4"))
    assert [p["key"] for p in man["probes"]] == ["grpo_s0-base-0-key", "grpo_s0-checkpoint-2-key",
                                                 "grpo_s0-checkpoint-4-key"]
    assert report["packed_already"] is False and report["bytes"][FILES_ARCHIVE] > 0
    # Packing the same run again writes nothing; a leftover staging folder never remains.
    before = _tree(out)
    assert pack(run, out, store)["packed_already"] is True
    assert _tree(out) == before and sorted(p.name for p in (tmp_path / "arms").iterdir()) == ["grpo_s0"]
    # So is an archive packed before manifests counted each probe's samples.
    man.pop("samples")
    (out / MANIFEST).write_text(json.dumps(man, indent=1) + "\n")
    assert pack(run, out, store)["packed_already"] is True


def test_restore_into_a_new_store_and_folder_gives_the_run_dir_and_probes_back(tmp_path):
    run, store = _run(tmp_path)
    pack(run, tmp_path / "arms" / "grpo_s0", store)
    clone = tmp_path / "clone"
    report = restore_one(tmp_path / "arms" / "grpo_s0", clone / "sweep", clone / "store.sqlite")
    got = clone / "sweep" / "grpo_s0"
    assert report["restored"] is True and Path(report["run_dir"]) == got
    carried = {k: v for k, v in _tree(run).items() if not k.startswith(("wandb", "boundary.png"))
               and not k.startswith("checkpoints/checkpoint-2") and Path(k).name not in TRAINER_STATE}
    assert _tree(got) == carried
    assert model_fingerprint(str(got / "checkpoints/checkpoint-4")) == report["model_fingerprint"]
    s = Store(clone / "store.sqlite")
    try:
        assert {p["key"] for p in s.list_probes()} == {"grpo_s0-base-0-key", "grpo_s0-checkpoint-2-key",
                                                      "grpo_s0-checkpoint-4-key"}
        assert s.probe_info("grpo_s0-checkpoint-4-key")["model_fp"] == report["model_fingerprint"]
    finally:
        s.close()
    # Again: the identical run dir is left as it is (restored False), the store merge changes nothing.
    again = restore_one(tmp_path / "arms" / "grpo_s0", clone / "sweep", clone / "store.sqlite")
    assert again["restored"] is False and _tree(got) == carried


def test_an_existing_run_dir_that_differs_is_refused_and_left_as_it_is(tmp_path):
    run, store = _run(tmp_path)
    pack(run, tmp_path / "arms" / "grpo_s0", store)
    rows = (run / "probes.jsonl").read_text()
    (run / "probes.jsonl").write_text(rows + json.dumps({"kind": "x"}) + "\n")
    before = _tree(run)
    with pytest.raises(RunArchiveError, match=r"exists and is not the packed run .*its probes.jsonl differs"):
        restore_one(tmp_path / "arms" / "grpo_s0", tmp_path / "sweep", tmp_path / "new.sqlite")
    assert _tree(run) == before and not (tmp_path / "new.sqlite").exists()
    # A run dir killed midway (no training_done) is refused the same way.
    (run / "probes.jsonl").write_text(rows)
    (run / "training_done").unlink()
    with pytest.raises(RunArchiveError, match="it has no training_done"):
        restore_one(tmp_path / "arms" / "grpo_s0", tmp_path / "sweep", tmp_path / "new.sqlite")


def test_pack_refuses_unfinished_unprobed_and_differing_runs(tmp_path):
    run, store = _run(tmp_path, probed=(2,))
    with pytest.raises(RunArchiveError, match=r"final checkpoint \(step 4\) is not probed yet"):
        pack(run, tmp_path / "arms" / "a", store)
    (run / "training_done").unlink()
    with pytest.raises(RunArchiveError, match="has not finished training"):
        pack(run, tmp_path / "arms" / "a", store)
    assert not (tmp_path / "arms" / "a").exists()
    run2, store2 = _run(tmp_path / "other")
    pack(run2, tmp_path / "arms" / "b", store2)
    (run2 / "train.log").write_text("more lines\n")
    with pytest.raises(RunArchiveError, match="already holds another packing .*train.log differs"):
        pack(run2, tmp_path / "arms" / "b", store2)
    # Weights changed after their probe: the probe key would not be the one the report reads.
    (run2 / "checkpoints/checkpoint-4/model.safetensors").write_bytes(b"other weights")
    with pytest.raises(RunArchiveError, match="checkpoint changed after it was probed"):
        pack(run2, tmp_path / "arms" / "c", store2)


def test_a_damaged_or_tampered_archive_restores_nothing(tmp_path):
    run, store = _run(tmp_path)
    out = tmp_path / "arms" / "grpo_s0"
    pack(run, out, store)
    good = {f: (out / f).read_bytes() for f in (MANIFEST, PROBES_ARCHIVE, FILES_ARCHIVE)}
    man = json.loads(good[MANIFEST])
    man["files"]["train.log"]["sha256"] = "0" * 64
    (out / MANIFEST).write_text(json.dumps(man))
    with pytest.raises(RunArchiveError, match="does not match its manifest.json .*train.log differs"):
        restore_one(out, tmp_path / "clone", tmp_path / "clone.sqlite")
    (out / MANIFEST).write_bytes(good[MANIFEST])
    (out / PROBES_ARCHIVE).write_bytes(good[PROBES_ARCHIVE][:100])
    with pytest.raises(StoreError, match="damaged"):  # the probes: no run dir without them
        restore_one(out, tmp_path / "clone", tmp_path / "clone.sqlite")
    (out / PROBES_ARCHIVE).write_bytes(good[PROBES_ARCHIVE])
    (out / FILES_ARCHIVE).write_bytes(good[FILES_ARCHIVE][: len(good[FILES_ARCHIVE]) // 2])
    with pytest.raises(RunArchiveError, match="is damaged"):
        restore_one(out, tmp_path / "clone", tmp_path / "clone.sqlite")
    assert [p.name for p in (tmp_path / "clone").iterdir()] == []  # no run dir, no staging left
    assert not (tmp_path / "clone.sqlite").exists()  # and no probe went into the store


def test_cli_restores_the_others_when_one_is_refused(tmp_path):
    env_path = {"PYTHONPATH": str(ROOT / "src")}
    for name in ("a", "b"):
        run, store = _run(tmp_path / name, name=name)
        pack(run, tmp_path / "arms" / name, store)
    (tmp_path / "sweep" / "a").mkdir(parents=True)  # an unrelated run dir where a would go
    proc = subprocess.run([sys.executable, "-m", "boundlab.probe.run_archive", "restore", str(tmp_path / "arms" / "a"),
                           str(tmp_path / "arms" / "b"), "--sweep-dir", str(tmp_path / "sweep"),
                           "--store", str(tmp_path / "s.sqlite")], capture_output=True, text=True,
                          env={**os.environ, **env_path}, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"error: {tmp_path / 'sweep' / 'a'} exists")
    assert json.loads(proc.stdout)[str(tmp_path / "arms" / "b")]["restored"] is True
    assert (tmp_path / "sweep" / "b" / "training_done").is_file()
    assert [p.name for p in (tmp_path / "sweep" / "a").iterdir()] == []
