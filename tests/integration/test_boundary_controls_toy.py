"""The boundary controls end to end on the shipped toy world: the real base model, the real toy
verifier (strict traces), the real store and a real offline W&B run, read back from its file.

The tracker probes 8 toy test problems (4 hard, 4 easy) at n = 8: the base, the base-vs-base null
(another sampling seed) and a "checkpoint" (the shipped teacher, a different model), with a
synthetic `group_by` tag (tier E or H1 from the problem's `hard` flag). Then report.py reads the
same store and run dir. Nothing is trained, so it takes seconds.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from boundlab.boundary.tracker import build_tracker
from boundlab.config import register_configs, with_updates
from boundlab.probe.context import ProbeContext
from boundlab.probe.spec import ProbeSpec, load_task
from boundlab.probe.store import Store
from boundlab.sampling.checkpoint import sampler_factory
from boundlab.tasks.base import Problem
from boundlab.worlds.toyworld.paths import base_model_dir, teacher_model_dir
from boundlab.tracking import build_logger
from boundlab.tracking.reader import read_offline_run
from boundlab.verify import build_verifier

ROOT = Path(__file__).resolve().parents[2]


def compose_cfg(name, *overrides):
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name=name, overrides=list(overrides))


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def toy_task_with_tiers(cfg):
    task = load_task(cfg)
    hard = [p for p in task.problems if p.meta["hard"]][:4]
    easy = [p for p in task.problems if not p.meta["hard"]][:4]
    tagged = [Problem(p.problem_id, p.question, p.answer, {**p.meta, "tier": "H1" if p.meta["hard"] else "E"})
              for p in hard + easy]
    sub = task.with_problems(tagged)
    sub.group_by = "tier"
    return sub


@pytest.mark.slow
def test_tracker_on_the_toy_world_writes_strict_groups_null_and_crossing(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    # The first edition (experiment=toy1), tagged with synthetic tiers from its `hard` flag.
    cfg = compose_cfg("train", "experiment=toy1", "probe.n=8", "probe.bootstrap_iters=200", "probe.limit=null",
                      "sampler.torch_threads=1", "sampler.batch_size=64")
    assert cfg.probe.null_seed_offset == 1  # on by default in the toy world
    task = toy_task_with_tiers(cfg)
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
        tr.probe_checkpoint(5, str(teacher_model_dir()))
        run_id = logger.run_id
    finally:
        logger.finish()
        verifier.close()
        store.close()

    table = rows(run_dir / "boundary.csv")
    assert [(r["kind"], r["step"], r["seed"]) for r in table] == [("base", "0", "0"), ("null", "0", "1"),
                                                                  ("checkpoint", "5", "0")]
    assert {r["metric"] for r in table} == {"strict"}
    by = {r["kind"]: r for r in table}
    jl = {r["kind"]: r for r in tr.rows}
    assert len({jl[k]["probe_key"] for k in jl}) == 3  # the null has its own key: the seed is in it
    for k in ("base", "null", "checkpoint"):
        r = by[k]
        # strict never exceeds answer-only; the gap is their difference.
        assert float(r["pass@1"]) <= float(r["answer_pass@1"]) + 1e-9
        assert float(r["gap@1"]) == pytest.approx(float(r["answer_pass@1"]) - float(r["pass@1"]), abs=2e-6)
        assert r["saturated"] in ("true", "false")
        assert (r["rule_of_three"] == "") == (r["saturated"] == "false")
    for k in ("null", "checkpoint"):
        r = by[k]
        assert float(r["delta_pass@1"]) == pytest.approx(float(r["pass@1"]) - float(by["base"]["pass@1"]),
                                                         abs=2e-6)
        assert float(r["delta_pass@1_ci_low"]) <= float(r["delta_pass@1"]) <= float(r["delta_pass@1_ci_high"])
        assert 0.0 <= float(r["crossing_share"]) <= 1.0
        assert r["crossing_k_ci_low"] != "" and r["crossing_k_ci_high"] != ""

    groups = rows(run_dir / "boundary_groups.csv")
    assert sorted((g["kind"], g["group"]) for g in groups) == sorted(
        (k, t) for k in ("base", "null", "checkpoint") for t in ("H1", "E"))
    for g in groups:
        assert g["group_by"] == "tier" and g["problems"] == "4" and g["metric"] == "strict"
    # The groups partition the problems: their pass@1 average to the whole set's (4 + 4 problems).
    for k in ("base", "null", "checkpoint"):
        gp = [float(g["pass@1"]) for g in groups if g["kind"] == k]
        assert sum(gp) / 2 == pytest.approx(float(by[k]["pass@1"]), abs=2e-6)
    assert (run_dir / "boundary.png").stat().st_size > 20_000

    hist = read_offline_run(run_dir, run_id=run_id).history
    at0 = [h for h in hist if h.get("probe/step") == 0]
    base_h = next(h for h in at0 if "probe/pass@1" in h)
    null_h = next(h for h in at0 if "probe/null/delta/pass@1" in h)
    ck_h = next(h for h in hist if h.get("probe/step") == 5 and "probe/pass@1" in h)
    assert base_h["probe/pass@1"] == pytest.approx(jl["base"]["pass@1"], abs=1e-9)
    assert base_h["probe/strict/pass@1"] == pytest.approx(jl["base"]["pass@1"], abs=1e-9)
    assert base_h["probe/answer/pass@1"] == pytest.approx(jl["base"]["answer_pass@1"], abs=1e-9)
    assert "probe/pass@1" not in null_h  # the null never overwrites the base's own step-0 values
    assert null_h["probe/null/delta/pass@1"] == pytest.approx(jl["null"]["delta_pass@1"], abs=1e-9)
    assert null_h["probe/null/lost"] == jl["null"]["lost"]
    assert null_h["probe/null/gained"] == jl["null"]["gained"]
    g_h1 = jl["checkpoint"]["groups"]["H1"]
    assert ck_h["probe_tier/H1/strict/pass@1"] == pytest.approx(g_h1["curve"][0], abs=1e-9)
    assert ck_h["probe_tier/H1/strict/delta/pass@n"] == pytest.approx(g_h1["delta_pass@n"], abs=1e-9)
    assert ck_h["probe/crossing_share"] == pytest.approx(jl["checkpoint"]["crossing_share"], abs=1e-9)
    if jl["checkpoint"]["crossing_k"] is not None:
        assert ck_h["probe/crossing_k"] == pytest.approx(jl["checkpoint"]["crossing_k"], abs=1e-9)
    if math.isfinite(jl["checkpoint"]["crossing_k_ci_high"]):
        assert ck_h["probe/crossing_k_ci_high"] == pytest.approx(jl["checkpoint"]["crossing_k_ci_high"])
    else:
        assert "probe/crossing_k_ci_high" not in ck_h

    # The report reads the same store and run dir: strict headline, the null in the progression.
    from boundlab.report.build import run as report_run

    rcfg = compose_cfg("report", f"base={run_dir}", f"runs=[{run_dir}]", f"out={tmp_path / 'report'}",
                       f"store.path={tmp_path / 'store.sqlite'}", "perplexity.enabled=false",
                       "logger=none", "bootstrap_iters=200")
    md = report_run(rcfg).read_text()
    assert "Headline metric: strict pass@k" in md
    prog = rows(tmp_path / "report" / "progression.csv")
    null_row = next(r for r in prog if r["step"] == "null (seed 1)")
    assert float(null_row["delta_pass@1"]) == pytest.approx(jl["null"]["delta_pass@1"], abs=1e-6)
    assert int(null_row["lost"]) == jl["null"]["lost"] and int(null_row["gained"]) == jl["null"]["gained"]
    final = next(r for r in prog if r["step"] == "5")
    assert float(final["pass@1"]) == pytest.approx(jl["checkpoint"]["pass@1"], abs=1e-6)
    sv = rows(tmp_path / "report" / "strict_vs_answer.csv")
    assert float(sv[0]["answer pass@1"]) == pytest.approx(jl["base"]["answer_pass@1"], abs=1e-6)
