"""The report's numbers on hand-made probe data: coverage sets, dSE, the crossing k and its CI,
perplexity against a manual log-prob sum, breakdowns, case studies; and a whole report built from
a hand-made store (no training, no sampling)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from boundlab.probe.estimator import pass_at_k_matrix
from boundlab.probe.store import SampleRow, Store
from boundlab.report import analysis as A
from boundlab.report.perplexity import (encode_pair, perplexity, response_logprobs,
                                        sample_responses)

torch.set_num_threads(1)

IDS = ["p0", "p1", "p2", "p3", "p4"]


def make_store(path: Path, probes: dict[str, dict[str, list[int]]], task_name: str = "t",
               names: dict[str, str] | None = None, meta: dict | None = None) -> Store:
    """probes: key -> problem id -> list of 0/1 verdicts (sample idx = position)."""
    store = Store(path)
    for key, per in probes.items():
        store.ensure_probe(key, f"fp-{key}", "task-fp", {"seed": 0}, (names or {}).get(key, key),
                           task_name, meta)
        rows = [SampleRow(pid, i, f"{pid} sample {i} " + ("right" if v else "wrong"), None, bool(v),
                          None, "ok", 3) for pid, vs in per.items() for i, v in enumerate(vs)]
        store.add_samples(key, rows)
    return store


# base solves p0, p2, p3; model solves p0, p1, p3; nobody solves p4
BASE = {"p0": [1, 0, 0, 0], "p1": [0, 0, 0, 0], "p2": [1, 1, 0, 0], "p3": [1, 1, 1, 1], "p4": [0, 0, 0, 0]}
MODEL = {"p0": [1, 1, 1, 1], "p1": [0, 1, 0, 0], "p2": [0, 0, 0, 0], "p3": [1, 1, 1, 1], "p4": [0, 0, 0, 0]}


def counts_of(store: Store, key: str):
    return A.aligned({pc.problem_id: (pc.n, pc.c) for pc in store.counts(key)}, IDS)


# -- coverage -----------------------------------------------------------------------------------
def test_coverage_sets_from_a_hand_made_store(tmp_path):
    store = make_store(tmp_path / "s.sqlite", {"base": BASE, "model": MODEL})
    _, bc = counts_of(store, "base")
    _, mc = counts_of(store, "model")
    cov = A.coverage(IDS, bc, mc)
    assert cov.base_only == ["p2"]
    assert cov.model_only == ["p1"]
    assert cov.both == ["p0", "p3"]
    assert cov.neither == ["p4"]
    assert cov.counts() == {"base_only": 1, "model_only": 1, "both": 2, "neither": 1}
    assert not cov.is_subset and cov.outside_base == 1
    # A model that only sharpens: its solvable set lies inside the base's.
    sharp = A.coverage(IDS, bc, [4, 0, 0, 4, 0])
    assert sharp.is_subset and sharp.outside_base == 0 and sharp.base_only == ["p2"]


def test_coverage_and_common_problems_edge_cases():
    with pytest.raises(ValueError):
        A.coverage(["a"], [1, 2], [1])
    assert A.common_problems([{"a": 4, "b": 4, "c": 0}, {"a": 4, "c": 4, "b": 2}]) == ["a", "b"]
    assert A.common_problems([]) == []
    # Natural order: x-2 before x-10 (and in the coverage cells too).
    assert A.common_problems([{"x-10": 1, "x-2": 1, "x-1a": 1}]) == ["x-1a", "x-2", "x-10"]
    assert A.coverage(["x-10", "x-2"], [1, 1], [0, 0]).base_only == ["x-2", "x-10"]


# -- dSE ----------------------------------------------------------------------------------------
def test_delta_se_at_n_when_n_is_below_256(tmp_path):
    store = make_store(tmp_path / "s.sqlite", {"base": BASE, "model": MODEL})
    bn, bc = counts_of(store, "base")
    mn, mc = counts_of(store, "model")
    base_pp, model_pp = pass_at_k_matrix(bn, bc, 4), pass_at_k_matrix(mn, mc, 4)
    d = A.delta_se(base_pp, model_pp, k=256, iters=300)
    # model pass@1 = mean(c/n) = (4+1+0+4+0)/20 = 9/20; base pass@4 = solved share = 3/5
    assert d.model_pass1 == pytest.approx(9 / 20)
    assert d.base_passk == pytest.approx(3 / 5)
    assert d.value == pytest.approx(9 / 20 - 3 / 5)
    assert d.k == 4 and d.at_n and d.k_label() == "k = n = 4 (n < 256)"
    assert d.ci_low <= d.value <= d.ci_high


def test_delta_se_at_a_k_below_n():
    bn, bc = np.array([4, 4, 4, 4]), np.array([1, 0, 2, 4])
    base_pp = pass_at_k_matrix(bn, bc, 4)
    model_pp = pass_at_k_matrix(bn, np.array([4, 1, 0, 4]), 4)
    d = A.delta_se(base_pp, model_pp, k=2, iters=200)
    # base pass@2 per problem: 1 - C(3,2)/C(4,2) = 1/2, 0, 1 - C(2,2)/C(4,2) = 5/6, 1
    assert d.base_passk == pytest.approx((0.5 + 0 + 5 / 6 + 1) / 4)
    assert d.value == pytest.approx(9 / 16 - (0.5 + 5 / 6 + 1) / 4)
    assert d.k == 2 and not d.at_n and d.k_label() == "k = 2"
    with pytest.raises(ValueError):
        A.delta_se(base_pp, model_pp[:3])


# -- crossing k ---------------------------------------------------------------------------------
def test_crossing_interpolates_and_its_ci_collapses_when_problems_are_identical():
    # Every problem has the same curves, so every resample has the same crossing.
    base = np.tile([0.2, 0.4, 0.6, 0.8], (6, 1))
    model = np.tile([0.5, 0.5, 0.5, 0.5], (6, 1))
    cr = A.crossing_with_ci(base, model, iters=200)
    # d = [0.3, 0.1, -0.1, -0.3]: halfway between k=2 and k=3 in log2 k -> sqrt(6)
    assert cr.status == A.CROSSES and cr.k == pytest.approx(math.sqrt(6))
    assert cr.ci_low == pytest.approx(math.sqrt(6)) and cr.ci_high == pytest.approx(math.sqrt(6))
    assert cr.p_cross == 1.0 and cr.n == 4
    assert cr.describe() == "k ≈ 2.4 (95% CI 2.4 to 2.4)"


def test_crossing_ci_from_counts_brackets_the_point_and_can_reach_beyond_n():
    # Two kinds of problems: on "a" the model is sharper but never better at large k, on "b" it is
    # better at every k. The mix crosses; resamples heavy in "b" do not cross by n.
    n = 8
    c_base = np.array([2] * 6 + [1] * 4)
    c_model = np.array([5] * 6 + [2] * 4)
    c_model[:3] = 0  # the model lost three of the base's problems
    nn = np.full(10, n)
    base_pp, model_pp = pass_at_k_matrix(nn, c_base, n), pass_at_k_matrix(nn, c_model, n)
    cr = A.crossing_with_ci(base_pp, model_pp, iters=500, seed=1)
    from boundlab.probe.compare import crossing_k

    assert cr.status == A.CROSSES
    assert cr.k == pytest.approx(crossing_k(base_pp.mean(0), model_pp.mean(0)))
    assert 1 <= cr.ci_low <= cr.k <= cr.ci_high
    assert 0 < cr.p_cross <= 1
    if math.isinf(cr.ci_high):
        assert "to > 8" in cr.describe()


def test_no_crossing_and_not_above_at_k1():
    base = np.tile([0.1, 0.2, 0.3], (4, 1))
    above = np.tile([0.5, 0.6, 0.7], (4, 1))
    cr = A.crossing_with_ci(base, above, iters=100)
    assert cr.status == A.NO_CROSSING and cr.k is None
    assert math.isinf(cr.ci_low) and math.isinf(cr.ci_high) and cr.p_cross == 0.0
    assert cr.describe().startswith("no crossing up to n = 3")
    below = np.tile([0.05, 0.1, 0.2], (4, 1))
    cr = A.crossing_with_ci(base, below, iters=100)
    assert cr.status == A.NOT_ABOVE_AT_1 and cr.k is None and not cr.above_later
    assert cr.ci_low == cr.ci_high == 1.0
    assert cr.describe() == "no crossing: the model is at or below the base at every k up to n = 3"
    # Level at k = 1, above later: the reverse of sharpening, and said so.
    rises = np.tile([0.1, 0.3, 0.5], (4, 1))
    cr = A.crossing_with_ci(base, rises, iters=100)
    assert cr.status == A.NOT_ABOVE_AT_1 and cr.above_later
    assert "rises above it by k = 3" in cr.describe()


def test_crossing_uses_the_smaller_n():
    base = np.tile([0.2, 0.4, 0.6, 0.8, 0.9, 0.95], (3, 1))
    model = np.tile([0.5, 0.55, 0.58, 0.6], (3, 1))
    cr = A.crossing_with_ci(base, model, iters=50)
    assert cr.n == 4 and cr.status == A.CROSSES


# -- summaries, checkpoints ---------------------------------------------------------------------
def test_summarize_and_checkpoint_row(tmp_path):
    store = make_store(tmp_path / "s.sqlite", {"base": BASE, "model": MODEL})
    bn, bc = counts_of(store, "base")
    mn, mc = counts_of(store, "model")
    b = A.summarize(bn, bc, iters=200)
    m = A.summarize(mn, mc, iters=200)
    assert b.n == 4 and b.problems == 5 and b.solvable == 3
    assert b.pass1 == pytest.approx(7 / 20) and b.passn == pytest.approx(3 / 5)
    assert b.pass1_ci[0] <= b.pass1 <= b.pass1_ci[1]
    assert A.passk_points(b.curve) == {1: pytest.approx(0.35), 2: pytest.approx(b.curve[1]),
                                       4: pytest.approx(0.6)}
    row = A.checkpoint_row(b, m, bc, mc, IDS)
    assert row["pass@1"] == pytest.approx(9 / 20)
    assert row["delta_pass@1"] == pytest.approx(2 / 20)
    assert row["delta_pass@n"] == pytest.approx(0.0)
    assert (row["lost"], row["gained"], row["solvable"], row["n"]) == (1, 1, 3, 4)


# -- case studies -------------------------------------------------------------------------------
def test_case_studies_rank_problems_no_model_solves_first(tmp_path):
    ids = ["a", "b", "c", "d"]
    n = np.array([4, 4, 4, 4])
    base_c = np.array([1, 4, 2, 0])
    models = {"m1": (n, np.array([0, 0, 3, 1])), "m2": (n, np.array([2, 0, 0, 0]))}
    cases = A.case_studies(ids, n, base_c, models)
    # b: missed by both; then a (missed by m1, base 1/4) and c (missed by m2, base 2/4): c first
    assert [c.problem_id for c in cases] == ["b", "c", "a"]
    assert cases[0].missed_by == ["m1", "m2"] and cases[0].models == {"m1": (0, 4), "m2": (0, 4)}
    assert (cases[1].base_c, cases[1].base_n) == (2, 4)

    rows = [SampleRow("b", 3, "t3", None, True, True, "ok", 1),
            SampleRow("b", 1, "t1", None, True, False, "ok", 1),
            SampleRow("b", 0, "t0", None, False, None, "ok", 1)]
    assert A.pick_trace(rows).idx == 3  # a valid chain of thought wins over an earlier lucky one
    rows[0].strict = None
    assert A.pick_trace(rows).idx == 1
    assert A.pick_trace([rows[2]]) is None


# -- breakdown ----------------------------------------------------------------------------------
def test_problem_tags_and_breakdown():
    metas = {"a": {"hard": True, "level": 1}, "b": {"hard": False, "level": 1},
             "c": {"hard": True, "level": 3}, "d": {"hard": False}}
    tags = A.problem_tags(metas)
    assert tags == {"hard": {"a": "true", "b": "false", "c": "true", "d": "false"}}  # level misses d
    with pytest.raises(ValueError, match="level"):
        A.problem_tags(metas, ["level"])
    assert A.problem_tags({"a": {"hard": True}, "b": {"hard": True}}) == {}  # one value: no split
    pp = pass_at_k_matrix(np.array([4, 4, 4, 4]), np.array([1, 0, 4, 2]), 4)
    rows = A.breakdown(["a", "b", "c", "d"], tags["hard"], pp, [1, 0, 4, 2])
    assert [r["tag"] for r in rows] == ["false", "true"]
    false, true = rows
    assert false["problems"] == 2 and false["solvable"] == 1
    assert false["pass@1"] == pytest.approx((0 + 2 / 4) / 2) and false["pass@n"] == pytest.approx(0.5)
    assert true["pass@1"] == pytest.approx((1 / 4 + 1) / 2) and true["pass@n"] == pytest.approx(1.0)
    # "true" solves both its problems at k = n: saturated, 3/P = 1.5 capped at 1; "false" is not.
    assert (true["saturated"], true["rule_of_three"]) == (True, 1.0)
    assert (false["saturated"], false["rule_of_three"]) == (False, None)
    levels = A.breakdown(["a", "b", "c"], {"a": "10", "b": "2", "c": "x"}, pp[:3])
    assert [r["tag"] for r in levels] == ["2", "10", "x"]  # numeric tags in numeric order


def test_box_stats():
    st = A.box_stats([1.0, 2.0, 3.0, 4.0])
    assert st == {"count": 4, "mean": 2.5, "median": 2.5, "q1": 1.75, "q3": 3.25, "min": 1.0, "max": 4.0}
    assert A.box_stats([])["count"] == 0 and math.isnan(A.box_stats([])["median"])


# -- perplexity ---------------------------------------------------------------------------------
def _manual_logprob_sum(model, tok, prompt: str, response: str) -> tuple[float, int]:
    p, r = encode_pair(tok, prompt, response)
    ids = torch.tensor([p + r])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), dim=-1)
    total = 0.0
    for t in range(len(p), len(p) + len(r)):
        total += float(logp[t - 1, ids[0, t]])
    return total, len(r)


@pytest.mark.parametrize("batch_tokens", [4096, 1])
def test_perplexity_matches_a_manual_log_prob_sum(tiny_lm, batch_tokens):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_lm)
    model = AutoModelForCausalLM.from_pretrained(tiny_lm, dtype=torch.float32).eval()
    pairs = [("Find the number 12 + 3 =", " 15. The answer is \\boxed{15}"),
             ("The answer is", " 42"),
             ("( 1 + 2 ) * 3 = ", "9 so \\boxed{9} and the minutes are 0123456789")]
    got = response_logprobs(model, tok, pairs, batch_tokens=batch_tokens)
    for (prompt, response), lp in zip(pairs, got):
        total, count = _manual_logprob_sum(model, tok, prompt, response)
        assert len(lp) == count > 0
        assert lp.sum() == pytest.approx(total, abs=1e-4)
        assert perplexity(lp) == pytest.approx(math.exp(-total / count), rel=1e-4)
    assert math.isnan(perplexity([]))
    assert perplexity([math.log(0.5)] * 3) == pytest.approx(2.0)


def test_sample_responses_is_seeded_and_bounded():
    rows = [SimpleNamespace(problem_id=f"p{i % 7}", idx=i) for i in range(50)]
    a = sample_responses(rows, 10, seed=3)
    assert len(a) == 10 and len({(r.problem_id, r.idx) for r in a}) == 10
    again = sample_responses(rows[::-1], 10, seed=3)  # input order does not matter
    assert [(r.problem_id, r.idx) for r in a] == [(r.problem_id, r.idx) for r in again]
    assert [r.idx for r in a] != [r.idx for r in sample_responses(rows, 10, seed=4)]
    assert len(sample_responses(rows[:5], 10)) == 5


# -- a whole report from a hand-made store ------------------------------------------------------
def _report_cfg(tmp_path, **kw):
    from omegaconf import OmegaConf

    from boundlab.config import register_configs
    from boundlab.report.schema import ReportMain

    register_configs()
    cfg = OmegaConf.structured(ReportMain)
    cfg.out = str(tmp_path / "report")
    cfg.store.path = str(tmp_path / "store.sqlite")
    cfg.logger.name = "none"
    cfg.bootstrap_iters = 100
    for k, v in kw.items():
        OmegaConf.update(cfg, k, v, merge=False)
    return cfg


def test_report_from_a_hand_made_store_and_run_dir(tmp_path, tiny_lm):
    from boundlab.config import TaskConfig
    from boundlab.report.build import SECTIONS, run

    ids = [f"aime24-{i}" for i in range(5)]
    pat = {"base": [[1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]],
           "ck2": [[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]],
           "ck4": [[1, 1, 1, 1], [0, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]],
           "other": [[1, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]],
           "dr4": [[1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]]}
    store = make_store(tmp_path / "store.sqlite",
                       {k: dict(zip(ids, v)) for k, v in pat.items()}, task_name="aime24",
                       names={"base": "base", "ck2": "step 2", "ck4": "step 4", "other": "other-model",
                              "dr4": "step 4"},
                       meta={"path": str(tiny_lm)})
    store.close()
    run_dir = tmp_path / "runs" / "0_grpo"
    run_dir.mkdir(parents=True)
    rows = [{"kind": "base", "step": 0, "probe_key": "base"},
            {"kind": "checkpoint", "step": 2, "probe_key": "ck2"},
            {"kind": "checkpoint", "step": 4, "probe_key": "ck4"}]
    (run_dir / "probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "run_info.json").write_text(json.dumps({"algo": "grpo"}))
    run2 = tmp_path / "runs" / "1_dr_grpo"  # a second job of the sweep, from the same base
    run2.mkdir()
    (run2 / "probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        rows[0], {"kind": "checkpoint", "step": 4, "probe_key": "dr4"})))
    (run2 / "run_info.json").write_text(json.dumps({"algo": "dr_grpo"}))

    cfg = _report_cfg(tmp_path, base=str(run_dir), models=["other-model"],
                      sweeps=[str(tmp_path / "runs")], teacher="other",
                      task=TaskConfig(name="aime24", chat=False),
                      **{"perplexity.samples": 4, "perplexity.torch_threads": 1, "perplexity.device": "cpu"})
    md_path = run(cfg)
    out = md_path.parent
    md = md_path.read_text()
    for s in SECTIONS:
        assert f"## {s}" in md
    with (out / "coverage.csv").open() as f:
        cov = {r["model"]: r for r in csv.DictReader(f)}
    assert set(cov) == {"other-model", "0_grpo", "1_dr_grpo"}
    g = cov["0_grpo"]  # final checkpoint ck4 against the base
    assert (g["both"], g["base_only"], g["model_only"], g["neither"]) == ("2", "1", "1", "1")
    assert g["subset_of_base"] == "False" and g["outside_base"] == "1"
    assert cov["other-model"]["subset_of_base"] == "True"
    with (out / "delta_se.csv").open() as f:
        dse = {r["model"]: float(r["dSE"]) for r in csv.DictReader(f)}
    assert dse["0_grpo"] == pytest.approx(9 / 20 - 3 / 5)
    assert "k = n = 4 (n < 256)" in md
    with (out / "progression.csv").open() as f:
        prog = list(csv.DictReader(f))
    assert [(r["run"], r["step"]) for r in prog] == [("base", "0"), ("0_grpo", "2"), ("0_grpo", "4"),
                                                     ("1_dr_grpo", "4")]
    with (out / "algorithms.csv").open() as f:
        algos = {r["run"]: r for r in csv.DictReader(f)}
    assert list(algos) == ["base", "0_grpo", "1_dr_grpo"]
    assert algos["1_dr_grpo"]["algo"] == "dr_grpo"
    # dr4: c = 2, 0, 1, 3, 1 -> pass@1 = 7/20; dSE against base pass@4 = 3/5
    assert float(algos["1_dr_grpo"]["pass@1"]) == pytest.approx(7 / 20)
    assert float(algos["1_dr_grpo"]["dSE"]) == pytest.approx(7 / 20 - 3 / 5)
    assert float(algos["1_dr_grpo"]["pass@n"]) == pytest.approx(4 / 5)
    assert float(prog[1]["pass@1"]) == pytest.approx(7 / 20)
    with (out / "case_studies.csv").open() as f:
        cases = list(csv.DictReader(f))
    assert cases[0]["problem_id"] == "aime24-2"  # solved by the base only, missed by both models
    assert cases[0]["base c/n"] == "2/4" and cases[0]["base_trace"].endswith("right")
    with (out / "perplexity.csv").open() as f:
        ppl = {r["group"]: r for r in csv.DictReader(f)}
    assert list(ppl) == ["base", "other-model", "0_grpo", "1_dr_grpo", "teacher"]
    assert int(ppl["base"]["scored"]) == 4 and float(ppl["base"]["median"]) > 1
    # The teacher group draws from the same probe as other-model here: the same seeded draw.
    assert ppl["teacher"]["median"] == ppl["other-model"]["median"]
    for name in ("passk", "coverage", "perplexity", "progression", "algorithms"):
        assert (out / f"{name}.png").stat().st_size > 5000
    # aime24's problems carry no level/subject tags: the breakdown says so instead of inventing one.
    assert "The task tags no problems" in md
