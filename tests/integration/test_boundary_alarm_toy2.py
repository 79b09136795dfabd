"""The boundary alarm end to end on the second-edition toy world: the real base, the real strict
verifier, the real store and a real offline W&B run, read back from its file.

The "checkpoint" is built to shrink: the base with its final norm scaled by 4, which multiplies every
logit by 4, i.e. the base sampled at temperature 1/4. That is sharpening in its purest form: the
base's dominant strategy gains (tier E, where it is right, stays solved), the rare decisions the H2
and B4 tiers need are cut, so strict pass@n must fall. The alarm must fire on it, and stay silent on the base-vs-base null. Nothing is trained.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from transformers import AutoModelForCausalLM, AutoTokenizer

from boundlab.boundary import rows as R
from boundlab.boundary.alarm import shrinkage
from boundlab.boundary.tracker import build_tracker
from boundlab.config import register_configs, with_updates
from boundlab.probe.context import ProbeContext
from boundlab.probe.spec import ProbeSpec, load_task
from boundlab.probe.store import Store
from boundlab.rundir.io import read_jsonl
from boundlab.sampling.checkpoint import sampler_factory
from boundlab.worlds.toyworld2.paths import base_model_dir
from boundlab.tracking import build_logger
from boundlab.tracking.reader import read_offline_run
from boundlab.verify import build_verifier

ROOT = Path(__file__).resolve().parents[2]


def compose_cfg(*overrides):
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def sharpened(out: Path, factor: float = 4.0) -> Path:
    model = AutoModelForCausalLM.from_pretrained(base_model_dir())
    with torch.no_grad():
        model.model.norm.weight.mul_(factor)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base_model_dir()).save_pretrained(out)
    return out


@pytest.mark.slow
def test_the_alarm_fires_on_a_sharpened_checkpoint_and_not_on_the_null(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = compose_cfg("probe.n=32", "probe.bootstrap_iters=400", "task.toy2.tiers=[E,H2,B4]", "task.toy2.per_tier=12",
                      "sampler.torch_threads=1", "sampler.batch_size=256")
    assert cfg.probe.null_seed_offset == 1
    task = load_task(cfg)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    store = Store(tmp_path / "store.sqlite")
    verifier = build_verifier(task.verifier)
    logger = build_logger(with_updates(cfg.logger, mode="offline"), run_dir, {"test": True})
    try:
        tr = build_tracker(run_dir, ProbeContext(task, store, verifier, sampler_factory(cfg.model, cfg.sampler),
                                                 logger, progress=False),
                           ProbeSpec.from_config(cfg.probe))
        tr.probe_base(str(base_model_dir()))
        null = next(r for r in tr.rows if r["kind"] == "null")
        # A second base-vs-base comparison (a third seed), judged as a checkpoint would be: silent.
        # (Judged on its own interval it may well "fire": the paired bootstrap resamples problems,
        # not the samples within one, which is why the rule asks for a drop beyond the null.)
        seed2 = tr.seed + 2
        res2 = tr._probe(str(base_model_dir()), "base (seed + 2)", seed=seed2)
        null2 = R.add_comparison(R.probe_row(5, "checkpoint", res2, seed2, 0.0, tr.groups, task.group_by,
                                             tr.ci, tr.bootstrap_iters), tr.base, res2, tr.groups,
                                 tr.bootstrap_iters, tr.ci)
        assert shrinkage(null2, null) == [], "base against base must not raise the alarm"
        assert not (run_dir / "alarms.jsonl").exists()
        tr.probe_checkpoint(10, str(sharpened(tmp_path / "sharp")))
        run_id = logger.run_id
    finally:
        logger.finish()
        verifier.close()
        store.close()

    row = next(r for r in tr.rows if r["kind"] == "checkpoint")
    assert row["delta_pass@n"] < 0
    assert row["groups"]["E"]["pass@1"] > 0.9  # sharpened, not broken: no decision needed, still solved
    scopes = [a["scope"] for a in row["alarm"]]
    assert scopes and set(scopes) <= {"all", "H2", "B4"}, row["alarm"]  # never E: it did not shrink
    for a in row["alarm"]:
        assert a["ci_high"] < 0 and a["null_ci_low"] is not None and a["delta_pass@n"] < a["null_ci_low"]
    alarms = read_jsonl(run_dir / "alarms.jsonl")
    assert [a["step"] for a in alarms] == [10] and [s["scope"] for s in alarms[0]["scopes"]] == scopes
    assert "boundary alarm at step 10: strict pass@32 on " in capsys.readouterr().out
    # Written where resume and the report read it, and logged to W&B (offline: the metric and the summary).
    assert read_jsonl(run_dir / "probes.jsonl")[-1]["alarm"] == row["alarm"]
    run = read_offline_run(run_dir, run_id=run_id)
    logged = [h["probe/alarm"] for h in run.history if "probe/alarm" in h]
    assert logged == [len(scopes)]
    assert "shrank at step 10" in run.summary["alert/title"] and "step 10" in run.summary["alert/text"]
