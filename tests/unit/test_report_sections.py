"""The report as a list of sections: headings and contents follow the registered list, one
registration line adds a section, every comparison against the base is computed once, the
progression rows share boundary tracking's comparison (`boundlab.probe.compare`), and the store's
named queries that replaced the report's raw SQL."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from boundlab.probe.store import SampleRow, Store
from boundlab.report import analysis as A
from boundlab.report import sections

# Toy-world problem ids (the task is rebuilt from its name in the store: fast, tagged hard/easy).
IDS = [f"toy-test-{i:04d}" for i in range(5)]
# key -> per problem the 0/1 verdicts of samples 0..3
PROBES = {
    "base": [[1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]],
    "ck2": [[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]],
    "ck4": [[1, 1, 1, 1], [0, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]],
    "other": [[1, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 1, 0]],
}
NAMES = {"base": "base", "ck2": "step 2", "ck4": "step 4", "other": "other-model"}


def make_store(path: Path) -> None:
    store = Store(path)
    for key, per in PROBES.items():
        store.ensure_probe(key, f"fp-{key}", "task-fp", {"seed": 0}, NAMES[key], "toy_arith")
        store.add_samples(key, [SampleRow(pid, i, f"{key} {pid} #{i}", None, bool(v), None, "ok", 3)
                                for pid, vs in zip(IDS, per) for i, v in enumerate(vs)])
    store.close()


def make_run(path: Path) -> Path:
    path.mkdir(parents=True)
    rows = [{"kind": "base", "step": 0, "probe_key": "base"},
            {"kind": "checkpoint", "step": 2, "probe_key": "ck2"},
            {"kind": "checkpoint", "step": 4, "probe_key": "ck4"}]
    (path / "probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "run_info.json").write_text(json.dumps({"algo": "grpo"}))
    return path


def report_cfg(tmp_path: Path):
    from omegaconf import OmegaConf

    from boundlab.config import register_configs
    from boundlab.report.schema import ReportMain

    make_store(tmp_path / "store.sqlite")
    run_dir = make_run(tmp_path / "0_grpo")
    register_configs()
    cfg = OmegaConf.structured(ReportMain)
    cfg.out = str(tmp_path / "report")
    cfg.store.path = str(tmp_path / "store.sqlite")
    cfg.logger.name = "none"
    cfg.bootstrap_iters = 50
    cfg.base = str(run_dir)
    cfg.runs = [str(run_dir)]
    cfg.models = ["other-model"]
    cfg.perplexity.enabled = False  # no model work: this file is about the document
    return cfg


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


# -- the registered list ------------------------------------------------------------------------
def test_headings_and_contents_follow_the_registered_list(tmp_path):
    from boundlab.report.build import SECTIONS, run

    assert SECTIONS == ("1. Verdict: the paper's findings", "2. pass@k curves", "3. Sampling-efficiency gap",
                        "4. Solvable-set coverage", "5. Perplexity under the base model",
                        "6. Checkpoint progression", "7. Algorithm comparison", "8. Case studies",
                        "9. Breakdown by problem tag", "10. Remedies: pass@1 against the boundary",
                        "11. Mechanism per problem and luck")
    md = run(report_cfg(tmp_path)).read_text()
    lines = md.splitlines()
    assert [ln[3:] for ln in lines if ln.startswith("## ")] == list(SECTIONS)
    contents = next(ln for ln in lines if ln.startswith("Contents: "))
    assert contents == ("Contents: [1. Verdict: the paper's findings](#1-verdict-the-papers-findings) · "
                        "[2. pass@k curves](#2-passk-curves) · [3. Sampling-efficiency gap]"
                        "(#3-sampling-efficiency-gap) · [4. Solvable-set coverage](#4-solvable-set-coverage)"
                        " · [5. Perplexity under the base model](#5-perplexity-under-the-base-model) · "
                        "[6. Checkpoint progression](#6-checkpoint-progression) · [7. Algorithm comparison]"
                        "(#7-algorithm-comparison) · [8. Case studies](#8-case-studies) · "
                        "[9. Breakdown by problem tag](#9-breakdown-by-problem-tag) · "
                        "[10. Remedies: pass@1 against the boundary](#10-remedies-pass1-against-the-boundary)"
                        " · [11. Mechanism per problem and luck](#11-mechanism-per-problem-and-luck)")
    # Each section's text sits under its own heading.
    at = {h: lines.index(f"## {h}") for h in SECTIONS}
    assert at["4. Solvable-set coverage"] < lines.index("| model | both | base_only | model_only | "
                                                        "neither | base_solvable | model_solvable | "
                                                        "subset_of_base | outside_base |") \
        < at["5. Perplexity under the base model"]
    assert lines[at["5. Perplexity under the base model"] + 2] == "Skipped (perplexity.enabled=false)."
    # The verdict comes first, its table under its own heading.
    assert at["1. Verdict: the paper's findings"] < lines.index("Table: [verdict.csv](verdict.csv).") \
        < at["2. pass@k curves"]


def test_one_registration_line_adds_a_section(tmp_path, monkeypatch):
    from boundlab.report.build import run
    from boundlab.report.document import Table

    def render(r, d):
        # Reads the comparisons computed once: the same dSE as the sampling-efficiency section.
        d.table(Table("extra", ["model", "dSE"], [[p.entry.label, vs.dse.value] for p, vs in r.pairs()]))

    k = len(sections.SECTIONS) + 1  # the new section's number
    monkeypatch.setattr(sections, "SECTIONS", [*sections.SECTIONS, sections.Section("Extra", render)])
    out = run(report_cfg(tmp_path)).parent
    md = (out / "report.md").read_text()
    assert f"\n## {k}. Extra\n" in md and f" · [{k}. Extra](#{k}-extra)\n" in md
    assert md.rstrip().endswith("Table: [extra.csv](extra.csv).")
    extra, dse = rows(out / "extra.csv"), rows(out / "delta_se.csv")
    assert [(r["model"], r["dSE"]) for r in extra] == [(r["model"], r["dSE"]) for r in dse]
    assert [r["model"] for r in extra] == ["other-model", "0_grpo"]


# -- computed once ------------------------------------------------------------------------------
def test_every_comparison_is_computed_once(tmp_path, monkeypatch):
    from boundlab.report.build import run

    calls: dict[str, int] = {}
    for name in ("summarize", "coverage", "crossing_with_ci", "delta_se", "checkpoint_row"):
        real = getattr(A, name)

        def counted(*a, _real=real, _name=name, **kw):
            calls[_name] = calls.get(_name, 0) + 1
            return _real(*a, **kw)

        monkeypatch.setattr(A, name, counted)
    run(report_cfg(tmp_path))
    # Probes: base, other, ck4 (the run's final checkpoint, also a model) and ck2: four
    # summaries, not five. Two models against the base, two checkpoints in the progression.
    assert calls == {"summarize": 4, "coverage": 2, "crossing_with_ci": 2, "delta_se": 2,
                     "checkpoint_row": 2}


# -- one checkpoint-vs-base comparison ----------------------------------------------------------
def test_boundary_tracking_and_the_report_share_one_comparison():
    from boundlab.boundary import tracker
    from boundlab.probe import compare

    assert tracker.compare is compare.compare
    assert A.crossing_k is compare.crossing_k


def test_progression_rows_take_n_lost_gained_from_compare(tmp_path):
    from boundlab.probe.compare import compare
    from boundlab.report.build import run

    out = run(report_cfg(tmp_path)).parent
    prog = rows(out / "progression.csv")
    assert [(r["run"], r["step"]) for r in prog] == [("base", "0"), ("0_grpo", "2"), ("0_grpo", "4")]
    n = np.full(len(IDS), 4)
    c = {k: np.array([sum(v) for v in per]) for k, per in PROBES.items()}
    base = A.summarize(n, c["base"], iters=50)
    for r in prog[1:]:
        key = r["probe key"]
        want = compare(A.probe_result(base, IDS, c["base"]),
                       A.probe_result(A.summarize(n, c[key], iters=50), IDS, c[key]), iters=50)
        assert (int(r["n"]), int(r["lost"]), int(r["gained"])) == (want["n"], want["lost"], want["gained"])
        # The change is exactly the difference of the pass@1 (pass@n) this table shows.
        assert float(r["delta_pass@1"]) == float(r["pass@1"]) - float(prog[0]["pass@1"])
        assert float(r["delta_pass@n"]) == float(r["pass@n"]) - float(prog[0]["pass@n"])
    # ck4 against the base: loses toy-test-0002, gains toy-test-0001.
    assert (prog[2]["lost"], prog[2]["gained"]) == ("1", "1")


def test_checkpoint_row_deltas_are_differences_of_the_shown_means():
    from boundlab.probe.compare import compare

    # pass@1 is 7/12 for both (the same float), but compare()'s mean of per-problem differences
    # rounds to -2.8e-17: the row keeps 0.0, the difference of the values it shows.
    ids = ["a", "b", "c", "d"]
    n = np.full(4, 3)
    bc, cc = np.array([2, 3, 0, 2]), np.array([1, 2, 3, 1])
    b, k = A.summarize(n, bc, iters=20), A.summarize(n, cc, iters=20)
    assert b.pass1 == k.pass1
    row = A.checkpoint_row(b, k, bc, cc, ids, iters=20)
    assert row["delta_pass@1"] == 0.0 and row["delta_pass@n"] == 1 - 3 / 4  # pass@3: d is gained
    assert (row["n"], row["lost"], row["gained"], row["solvable"]) == (3, 0, 1, 4)
    cmp = compare(A.probe_result(b, ids, bc), A.probe_result(k, ids, cc), iters=20)
    assert cmp["delta_pass@1"] != 0.0 and cmp["delta_pass@1"] == pytest.approx(0.0, abs=1e-16)
    assert (cmp["n"], cmp["lost"], cmp["gained"]) == (3, 0, 1)


def test_probe_result_needs_a_summary_from_summarize():
    s = A.summarize([2, 2], [1, 0], iters=10)
    bare = A.Summary(s.n, s.problems, s.solvable, s.pass1, s.pass1_ci, s.passn, s.passn_ci,
                     s.curve, s.ci_low, s.ci_high, s.per_problem)
    with pytest.raises(ValueError, match="this summary was not made by summarize"):
        A.probe_result(bare, ["a", "b"], [1, 0])
    res = A.probe_result(s, ["a", "b"], [1, 0], key="k1")
    assert res.key == "k1" and res.solvable == {"a"} and res.kmax == 2
    assert res.n.tolist() == [2, 2] and res.curve is s.source


# -- the store's named queries (the report's SQL) -------------------------------------------------
def test_store_sample_index_and_text(tmp_path):
    make_store(tmp_path / "store.sqlite")
    store = Store(tmp_path / "store.sqlite", writable=False)
    try:
        index = store.sample_index("ck2")
        assert sorted(index) == sorted((pid, i, bool(v)) for pid, vs in zip(IDS, PROBES["ck2"])
                                       for i, v in enumerate(vs))
        assert all(type(ok) is bool for _, _, ok in index)
        assert store.sample_text("ck2", "toy-test-0002", 1) == "ck2 toy-test-0002 #1"
        assert store.sample_index("no-such-probe") == []
        with pytest.raises(KeyError, match="no sample toy-test-0002#9 in probe ck2"):
            store.sample_text("ck2", "toy-test-0002", 9)
    finally:
        store.close()
