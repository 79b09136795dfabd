"""Comparisons across unlike probes are named: the report, the dashboard's lost/gained and the
tracker's W&B delta check, through one module (boundlab.probe.alike), that two probes share their
task and sampling settings, and say which differ."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import OmegaConf

from boundlab.probe.alike import differences, store_differences
from boundlab.probe.store import SampleRow, Store

IDS = [f"toy-test-{i:04d}" for i in range(5)]
VERIFIER = {"name": "math", "version": 3}
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 64, "stop": [], "seed": 0,
            "prompt": "plain", "verifier": VERIFIER}
PROBES = {  # key -> (settings, per problem the 0/1 verdicts of samples 0..3)
    "base": (SAMPLING, [[1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]]),
    # Same settings but the seed: alike (the null and checkpoints may use their own seed).
    "ck2": ({**SAMPLING, "seed": 7}, [[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]]),
    # Probed colder and shorter: unlike.
    "ck4": ({**SAMPLING, "temperature": 0.6, "max_new_tokens": 32},
            [[1, 1, 1, 1], [0, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]]),
}


def test_differences_name_each_setting_but_the_seed():
    assert differences(SAMPLING, {**SAMPLING, "seed": 5}) == []
    assert differences(SAMPLING, {**SAMPLING, "top_p": 0.95, "verifier": {"name": "math", "version": 4}}) == [
        "top_p 1.0 vs 0.95", "verifier math v3 vs math v4"]
    assert differences(SAMPLING, SAMPLING, "t1", "t2") == ["task fingerprint t1 vs t2"]
    assert differences(SAMPLING, {k: v for k, v in SAMPLING.items() if k != "stop"}) == ["stop [] vs (unset)"]


def _store(path: Path) -> Path:
    store = Store(path)
    for key, (settings, per) in PROBES.items():
        store.ensure_probe(key, f"fp-{key}", "task-fp", settings, key, "toy_arith")
        store.add_samples(key, [SampleRow(pid, i, f"{key} {pid} #{i}", None, bool(v), None, "ok", 3)
                                for pid, vs in zip(IDS, per) for i, v in enumerate(vs)])
    store.close()
    return path


def _run(path: Path, store: Path) -> Path:
    path.mkdir(parents=True)
    rows = [{"kind": "base", "step": 0, "probe_key": "base", "n": 4, "metric": "answer"},
            {"kind": "checkpoint", "step": 2, "probe_key": "ck2", "n": 4, "metric": "answer"},
            {"kind": "checkpoint", "step": 4, "probe_key": "ck4", "n": 4, "metric": "answer"}]
    (path / "probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "run_info.json").write_text(json.dumps({"algo": "grpo"}))
    return path


def test_store_differences(tmp_path):
    store = Store(_store(tmp_path / "store.sqlite"), writable=False)
    try:
        assert store_differences(store, "base", "ck2") == []
        assert store_differences(store, "base", "ck4") == ["max_new_tokens 64 vs 32", "temperature 1.0 vs 0.6"]
    finally:
        store.close()


def test_the_report_names_an_unlike_model_under_its_models_table(tmp_path):
    from boundlab.config import register_configs
    from boundlab.report.build import run
    from boundlab.report.schema import ReportMain

    store = _store(tmp_path / "store.sqlite")
    run_dir = _run(tmp_path / "0_grpo", store)
    register_configs()
    cfg = OmegaConf.structured(ReportMain)
    cfg.out, cfg.store.path, cfg.logger.name = str(tmp_path / "report"), str(store), "none"
    cfg.bootstrap_iters, cfg.perplexity.enabled = 50, False
    cfg.base, cfg.models = str(run_dir), ["ck2", "ck4"]
    md = run(cfg).read_text()
    notes = md[md.index("Notes:"):md.index("Contents: ")]
    assert ("- ck4 was probed unlike the base (max_new_tokens 64 vs 32; temperature 1.0 vs 0.6): its "
            "differences from the base mix the training's effect with these settings") in notes
    assert "ck2 was probed unlike" not in md


def test_the_dashboard_names_it_on_the_lost_gained_column(tmp_path):
    from boundlab.dashboard.data import problem_map
    from boundlab.dashboard.index import Index

    store = _store(tmp_path / "store.sqlite")
    index = Index([_run(tmp_path / "0_grpo", store)], store=str(store))
    cols = problem_map(index, index.runs[0])["columns"]
    assert [c.get("unlike_base") for c in cols] == [
        None, [], ["max_new_tokens 64 vs 32", "temperature 1.0 vs 0.6"]]


def test_the_tracker_names_a_checkpoint_probed_unlike_its_base(tmp_path, capsys):
    """The W&B delta: a checkpoint probed at another temperature than the base it is compared with
    (here the tracker's settings change between the two) carries `unlike_base` on its row, a
    warning line, and `probe/unlike_base` in W&B; a like checkpoint carries none."""
    from test_boundary_controls import SCRIPTS, Recorder, ScriptedSampler, toy_task

    from boundlab.boundary.tracker import build_tracker
    from boundlab.probe.context import ProbeContext
    from boundlab.probe.spec import ProbeSpec
    from boundlab.sampling.base import GenSettings
    from boundlab.verify import build_verifier

    task = toy_task()
    for d in ("base", "ck1", "ck2"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "config.json").write_text('{"which": "%s"}' % d)
    store, verifier, logger = Store(tmp_path / "s.sqlite"), build_verifier("toy"), Recorder()
    try:
        tr = build_tracker(tmp_path / "run",
                           ProbeContext(task, store, verifier,
                                        lambda d: (ScriptedSampler(SCRIPTS["base" if d.endswith("base") else "ckpt"],
                                                                   task), None),
                                        logger, progress=False),
                           ProbeSpec(n=4, gen=GenSettings(max_new_tokens=32), seed=0, bootstrap_iters=50))
        (tmp_path / "run").mkdir()
        tr.probe_base(str(tmp_path / "base"))
        tr.probe_checkpoint(1, str(tmp_path / "ck1"))
        tr.gen = GenSettings(max_new_tokens=32, temperature=0.5)
        tr.probe_checkpoint(2, str(tmp_path / "ck2"))
    finally:
        verifier.close()
        store.close()
    rows = {r["step"]: r for r in tr.rows if r["kind"] == "checkpoint"}
    assert "unlike_base" not in rows[1]
    assert rows[2]["unlike_base"] == ["temperature 1.0 vs 0.5"]
    logged = {int(m["probe/step"]): m for m in logger.logged if "probe/step" in m and "probe/pass@1" in m}
    assert "probe/unlike_base" not in logged[1] and logged[2]["probe/unlike_base"] == 1
    assert "warning: step 2 was probed unlike the base (temperature 1.0 vs 0.5)" in capsys.readouterr().out
