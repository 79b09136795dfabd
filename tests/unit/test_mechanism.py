"""The mechanism per problem (boundlab.report.mechanism) on a small constructed toy2 store whose
every number is counted by hand below."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from boundlab.probe import failures as F
from boundlab.probe.store import SampleRow, Store
from boundlab.report import mechanism as M
from boundlab.worlds.toyworld2.task import toy2_problems
from boundlab.worlds.toyworld2.verifier import judge

PROBLEMS = {p.problem_id: p for p in toy2_problems("test")[:5]}
# tw2-test-0000 H2 9+6*1*5 = 39; 0001 E 1*3+5+5 = 13; 0002 H1 3+3+1+5*4 = 27; 0004 B3 2*(2+7) = 18
T = {
    "0000": {"strict": "6*1=6>9+6*5,6*5=30>9+30,9+30=39;A:39",
             "wrong": "9+6=15>15*1*5,15*1=15>15*5,15*5=75;A:75"},                 # 0/1 decisions
    "0001": {"strict": "1*3=3>3+5+5,3+5=8>8+5,8+5=13;A:13"},
    "0002": {"strict": "3+3=6>6+1+5*4,6+1=7>7+5*4,5*4=20>7+20,7+20=27;A:27",          # 1/1
             "slip": "3+3=6>6+1+5*4,6+1=7>7+5*4,5*4=20>7+20,7+20=28;A:28",            # 1/1
             "early_slip": "3+3=7>7+1+5*4,7+1=8>8+5*4,5*4=20>8+20,8+20=28;A:28",      # 0/0
             "bad_state": "3+3=6>6+1+5*4,6+1=7>7+5*4,5*4=20>7+21,7+21=28;A:28",       # 1/1
             "wrong": "3+3=6>6+1+5*4,6+1=7>7+5*4,7+5=12>12*4,12*4=48;A:48",           # 0/1
             "lucky": "A:27"},                                                         # 0/0
    "0004": {"strict": "2+7=9>2*9,2*9=18;A:18",                                       # 1/1
             "wrong": "2*2=4>4+7,4+7=11;A:11",                                         # 0/1
             "slip": "2+7=9>2*9,2*9=19;A:19"},                                         # 1/1
}
BASE = {"0000": ["wrong"] * 4, "0001": ["strict"] * 4,
        "0002": ["strict", "slip", "wrong", "strict"], "0004": ["strict", "strict", "wrong", "wrong"]}
ARM = {"0000": ["strict", "wrong", "strict", "strict"], "0001": ["strict"] * 4,
       "0002": ["slip", "early_slip", "bad_state", "lucky"], "0004": ["wrong", "wrong", "wrong", "slip"]}
EXPECTED_LABEL = {"strict": F.STRICT_CORRECT, "wrong": F.WRONG_DECISION, "slip": F.SLIP,
                  "early_slip": F.SLIP, "bad_state": F.BAD_STATE, "lucky": F.LUCKY}


def make_store(path: Path, meta: dict | None = None) -> None:
    store = Store(path)
    for key, plan in (("base", BASE), ("arm", ARM)):
        store.ensure_probe(key, f"fp-{key}", "task-fp", {"seed": 0}, key, "toy2", meta)
        rows = []
        for short, kinds in plan.items():
            p = PROBLEMS[f"tw2-test-{short}"]
            for i, kind in enumerate(kinds):
                v = judge(p, T[short][kind])
                assert F.classify_verdict(v.correct, v.strict, v.info) == EXPECTED_LABEL[kind]
                rows.append(SampleRow(p.problem_id, i, T[short][kind], v.extracted, v.correct, v.strict,
                                      v.outcome, len(T[short][kind]), v.info))
        store.add_samples(key, rows)
    store.close()


def test_lost_and_gained_problems_by_hand(tmp_path):
    make_store(tmp_path / "s.sqlite")
    store = Store(tmp_path / "s.sqlite", writable=False)
    arm = M.arm_mechanism(store, "arm", "base", "arm", ["tw2-test-0002", "tw2-test-0004"],
                          ["tw2-test-0000"], None, {"tw2-test-0002": "H1"})
    by = {p.problem_id: p for p in arm.problems}
    lost2 = by["tw2-test-0002"]
    assert (lost2.direction, lost2.tag, lost2.cause) == ("lost", "H1", "execution")
    assert lost2.base.mix == {**dict.fromkeys(F.LABELS, 0), F.STRICT_CORRECT: 2, F.SLIP: 1,
                              F.WRONG_DECISION: 1}
    assert lost2.arm.mix == {**dict.fromkeys(F.LABELS, 0), F.SLIP: 2, F.BAD_STATE: 1, F.LUCKY: 1}
    assert (lost2.base.c_strict, lost2.arm.c_strict) == (2, 0)
    assert (lost2.base.decisions_right, lost2.base.decisions_met) == (3, 4)
    assert (lost2.arm.decisions_right, lost2.arm.decisions_met) == (2, 2)
    assert by["tw2-test-0004"].cause == "strategy"      # 3 of its 4 failing samples
    assert by["tw2-test-0000"].cause == "strategy"      # gained: the base's 4 wrong decisions
    s = arm.summary()
    assert (s["lost"], s["gained"]) == (2, 1)
    # lost: the arm's wrong decisions 0 + 3, execution 3 (slip, slip, bad state) + 1 (slip), 1 lucky
    assert (s["lost_strategy_samples"], s["lost_execution_samples"], s["lost_lucky_samples"]) == (3, 4, 1)
    assert s["lost_strategy_share"] == pytest.approx(3 / 7)
    assert s["lost_execution_share"] == pytest.approx(4 / 7)
    assert (s["lost_strategy_problems"], s["lost_execution_problems"]) == (1, 1)
    # right decisions among those met: base 3/4 + 2/4, arm 2/2 + 1/4
    assert s["lost_base_decision_rate"] == pytest.approx(5 / 8)
    assert s["lost_arm_decision_rate"] == pytest.approx(3 / 6)
    # gained: the base's samples, 4 wrong decisions; the arm takes 2+0+2+2 of 2+1+2+2
    assert (s["gained_strategy_share"], s["gained_execution_share"]) == (1.0, 0.0)
    assert s["gained_base_decision_rate"] == 0.0
    assert s["gained_arm_decision_rate"] == pytest.approx(6 / 7)
    # each problem's first n samples only
    cut = M.arm_mechanism(store, "arm", "base", "arm", ["tw2-test-0002"], [], 2)
    assert cut.problems[0].base.n == 2 and cut.problems[0].arm.mix[F.LUCKY] == 0
    assert cut.problems[0].arm.mix[F.SLIP] == 2
    store.close()


def test_luck_check_by_hand(tmp_path):
    make_store(tmp_path / "s.sqlite")
    store = Store(tmp_path / "s.sqlite", writable=False)
    ids = [f"tw2-test-{s}" for s in ("0000", "0001", "0002", "0004")]
    b = M.luck(store, "base", "base", ids, None)
    assert (b.answer_pass1, b.strict_pass1, b.lucky_pass1, b.n) == (0.5, 0.5, 0.0, 4)
    a = M.luck(store, "arm", "arm", ids, None)
    # answer: 3/4 + 1 + 1/4 (the bare A:27) + 0; strict: 3/4 + 1 + 0 + 0
    assert a.answer_pass1 == pytest.approx(2 / 4)
    assert a.strict_pass1 == pytest.approx(1.75 / 4)
    assert a.lucky_pass1 == pytest.approx(0.25 / 4)
    assert M.luck(store, "arm", "arm", ids + ["tw2-test-9999"], None) is None  # not probed there
    store.close()


def test_the_report_section_on_a_toy2_store(tmp_path):
    from omegaconf import OmegaConf

    from boundlab.config import register_configs
    from boundlab.report.build import run
    from boundlab.report.schema import ReportMain

    make_store(tmp_path / "store.sqlite")
    register_configs()
    cfg = OmegaConf.structured(ReportMain)
    cfg.out = str(tmp_path / "report")
    cfg.store.path = str(tmp_path / "store.sqlite")
    cfg.logger.name = "none"
    cfg.bootstrap_iters = 50
    cfg.base = "base"
    cfg.models = ["arm"]
    cfg.perplexity.enabled = False
    md = run(cfg).read_text()
    assert "Mechanism per problem and luck" in md
    with (tmp_path / "report" / "mechanism_summary.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    assert (row["arm"], row["lost"], row["gained"]) == ("arm", "2", "1")
    assert math.isclose(float(row["lost_strategy_share"]), 3 / 7)
    with (tmp_path / "report" / "mechanism_problems.csv").open() as f:
        probs = {r["problem_id"]: r for r in csv.DictReader(f)}
    assert set(probs) == {"tw2-test-0000", "tw2-test-0002", "tw2-test-0004"}
    assert (probs["tw2-test-0002"]["tier"], probs["tw2-test-0002"]["arm_slip"]) == ("H1", "2")
    p2, p0 = probs["tw2-test-0002"], probs["tw2-test-0000"]
    assert (p2["side"], p2["side_strategy"], p2["side_execution"], p2["side_lucky"]) == \
        ("arm", "0", "3", "1")
    assert (p0["side"], p0["side_strategy"], p0["side_execution"], p0["cause"]) == \
        ("base", "4", "0", "strategy")
    with (tmp_path / "report" / "luck.csv").open() as f:
        luck = {r["model"]: r for r in csv.DictReader(f)}
    assert math.isclose(float(luck["arm"]["lucky_pass@1"]), 0.0625)
    assert float(luck["base"]["lucky_pass@1"]) == 0.0


def test_fig6_per_tier_on_a_toy2_store(tmp_path):
    """Fig. 6 per tier, scored by the shipped toy2 base: the same canonical text has the same
    perplexity whichever model wrote it (the tautology the caption states)."""
    from omegaconf import OmegaConf

    from boundlab.config import register_configs
    from boundlab.report.build import run
    from boundlab.report.schema import ReportMain
    from boundlab.worlds.toyworld2.paths import base_model_dir

    make_store(tmp_path / "store.sqlite", {"path": str(base_model_dir())})
    register_configs()
    cfg = OmegaConf.structured(ReportMain)
    cfg.out = str(tmp_path / "report")
    cfg.store.path = str(tmp_path / "store.sqlite")
    cfg.logger.name = "none"
    cfg.bootstrap_iters = 50
    cfg.base = "base"
    cfg.models = ["arm"]
    cfg.perplexity.samples = 3
    cfg.perplexity.torch_threads = 1
    cfg.perplexity.device = "cpu"
    md = run(cfg).read_text()
    assert "only reflects the tier mix" in md
    with (tmp_path / "report" / "perplexity_by_tier.csv").open() as f:
        got = {(r["tier"], r["group"]): r for r in csv.DictReader(f)}
    # correct responses: base E 4, H1 2, B3 2; arm E 4, H1 1 (the bare A:27), H2 3; at most 3 drawn
    scored = {k: int(v["scored"]) for k, v in got.items()}
    assert scored == {("B3", "base"): 2, ("B3", "arm"): 0, ("E", "base"): 3, ("E", "arm"): 3,
                      ("H1", "base"): 2, ("H1", "arm"): 1, ("H2", "base"): 0, ("H2", "arm"): 3}
    # every E response is the one canonical trace of tw2-test-0001: equal under the base
    assert float(got[("E", "base")]["median"]) == float(got[("E", "arm")]["median"]) > 1.0
    assert (tmp_path / "report" / "perplexity_by_tier.png").stat().st_size > 5000


def test_luck_of_an_adaptive_probe_reads_its_first_round_only(tmp_path):
    """Later rounds are drawn only for open problems: the luck check counts each problem's first n0."""
    store = Store(tmp_path / "a.sqlite")
    store.ensure_probe("adp", "fp", "task-fp", {"seed": 0, "adaptive": {"n0": 2, "cap": 4}}, "adp", "toy2")
    p = PROBLEMS["tw2-test-0002"]
    kinds = ["strict", "slip", "lucky", "lucky"]  # rounds: [strict, slip] then [lucky, lucky]
    rows = []
    for i, kind in enumerate(kinds):
        v = judge(p, T["0002"][kind])
        rows.append(SampleRow(p.problem_id, i, T["0002"][kind], v.extracted, v.correct, v.strict,
                              v.outcome, 5, v.info))
    store.add_samples("adp", rows)
    lk = M.luck(store, "adp", "adp", [p.problem_id], None)
    assert (lk.n, lk.answer_pass1, lk.strict_pass1, lk.lucky_pass1) == (2, 0.5, 0.5, 0.0)
    assert M.luck(store, "adp", "adp", [p.problem_id], 1).n == 1  # report.n below n0 cuts further
    store.close()


def test_a_strict_store_of_another_world_gets_the_luck_check_only(tmp_path):
    """The first toy world checks traces (strict counts) but has no toy2 replay: no failure types,
    said in one line, and the luck check still runs."""
    from omegaconf import OmegaConf

    from boundlab.config import register_configs
    from boundlab.report.build import run
    from boundlab.report.schema import ReportMain

    ids = [f"toy-test-{i:04d}" for i in range(3)]
    # (correct, strict) per sample: the arm loses toy-test-0000, and answers one sample luckily
    plan = {"base": [[(1, 1), (0, 0)], [(1, 1), (1, 1)], [(0, 0), (0, 0)]],
            "arm": [[(1, 0), (0, 0)], [(1, 1), (1, 1)], [(0, 0), (0, 0)]]}
    store = Store(tmp_path / "store.sqlite")
    for key, per in plan.items():
        store.ensure_probe(key, f"fp-{key}", "task-fp", {"seed": 0}, key, "toy_arith")
        store.add_samples(key, [SampleRow(pid, i, f"{key} {pid} #{i}", None, bool(c), bool(s), "ok", 3,
                                          {"note": "no replay"})
                                for pid, vs in zip(ids, per) for i, (c, s) in enumerate(vs)])
    store.close()
    register_configs()
    cfg = OmegaConf.structured(ReportMain)
    cfg.out = str(tmp_path / "report")
    cfg.store.path = str(tmp_path / "store.sqlite")
    cfg.logger.name = "none"
    cfg.bootstrap_iters = 50
    cfg.base = "base"
    cfg.models = ["arm"]
    cfg.perplexity.enabled = False
    md = run(cfg).read_text()
    assert "No failure types: the base's samples carry no toy2 replay" in md
    assert not (tmp_path / "report" / "mechanism_summary.csv").exists()
    with (tmp_path / "report" / "luck.csv").open() as f:
        luck = {r["model"]: r for r in csv.DictReader(f)}
    assert math.isclose(float(luck["arm"]["lucky_pass@1"]), (1 / 2) / 3)
