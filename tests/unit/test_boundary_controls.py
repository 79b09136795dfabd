"""Boundary controls on hand-made probes (real toy verifier, scripted samples): strict pass@k as the
headline with answer-only beside it, the per-group breakdown, the base-vs-base null, the saturation
flag with the rule of three, and the crossing k with its interval from the one implementation.

Four toy problems, n = 4, tagged tier E (p0, p1) and H (p2, p3). Per problem: s strict traces, g
lucky guesses (right answer, no trace), the rest wrong.

    probe        p0      p1      p2      p3       strict c    answer c
    base         4s      2s      1g      1s       4 2 0 1     4 2 1 1
    null         3s      2s      1s      1g       3 2 1 0     3 2 1 1
    checkpoint   4s      4s      -       -        4 4 0 0     4 4 0 0
"""

import csv
import math

import numpy as np
import pytest

from boundlab.boundary import rows as R
from boundlab.boundary.tracker import build_tracker
from boundlab.config import ConfigError
from boundlab.probe.compare import compare, crossing_with_ci, saturation
from boundlab.probe.context import ProbeContext
from boundlab.probe.curves import compute_curve
from boundlab.probe.spec import ProbeSpec
from boundlab.probe.store import Store
from boundlab.sampling.base import Completion, GenSettings
from boundlab.tasks.base import Problem, Task
from boundlab.worlds.toyworld.world import Expr, trace
from boundlab.verify import build_verifier

QS = [("1*3+9", "12", "E"), ("2-6+4", "0", "E"), ("6+3*9", "33", "H"), ("4+8*7", "60", "H")]
SCRIPTS = {  # per probe, per problem: (strict traces, lucky guesses); the rest are wrong
    "base": [(4, 0), (2, 0), (0, 1), (1, 0)],
    "null": [(3, 0), (2, 0), (1, 0), (0, 1)],
    "ckpt": [(4, 0), (4, 0), (0, 0), (0, 0)],
}


def toy_task(group_by="tier"):
    return Task("toy_synth", [Problem(f"p{i}", q, a, {"tier": t}) for i, (q, a, t) in enumerate(QS)],
                template="Q:{question};", verifier="toy", group_by=group_by)


class ScriptedSampler:
    def __init__(self, script, task):
        self.script, self.task, self.rows_per_call = script, task, 64

    def generate(self, requests, settings, seed):
        out = []
        for prompt, count in requests:
            i = next(j for j, p in enumerate(self.task.problems) if self.task.render(p) == prompt)
            q, a, _ = QS[i]
            s, g = self.script[i]
            texts = [trace(Expr.parse(q))] * s + [f"A:{a}"] * g + ["A:999"] * (4 - s - g)
            out.append([Completion(t, 5, "eos") for t in texts[:count]])
        return out

    def close(self):
        pass


class Recorder:
    def __init__(self):
        self.logged, self.tables, self.plots, self.step_metrics = [], {}, {}, []

    def define_step_metric(self, *a):
        self.step_metrics.append(a)

    def log(self, m):
        self.logged.append(m)

    def log_line_plot(self, key, xs, series, **k):
        self.plots[key] = (list(xs), dict(series), k)

    def log_table(self, key, columns, rows, extra=None):
        self.tables[key] = (list(columns), [list(r) for r in rows])

    def log_image(self, *a, **k):
        pass


def run_tracker(tmp_path, null_seed=7, task=None):
    """base, null (when null_seed is set) and one checkpoint; each make_sampler call hands out the
    next script, so a null read back from the base's probe would show the base's counts."""
    task = task or toy_task()
    order = iter(["base", "null", "ckpt"] if null_seed is not None else ["base", "ckpt"])
    for d in ("base", "ckpt"):
        (tmp_path / d).mkdir(exist_ok=True)
        (tmp_path / d / "config.json").write_text('{"which": "%s"}' % d)
    store = Store(tmp_path / "s.sqlite")
    verifier = build_verifier("toy")
    logger = Recorder()
    try:
        tr = build_tracker(tmp_path / "run",
                           ProbeContext(task, store, verifier,
                                        lambda d: (ScriptedSampler(SCRIPTS[next(order)], task), None),
                                        logger, progress=False),
                           ProbeSpec(n=4, gen=GenSettings(max_new_tokens=32), seed=0,
                                     bootstrap_iters=200, null_seed=null_seed))
        (tmp_path / "run").mkdir(exist_ok=True)
        tr.probe_base(str(tmp_path / "base"))
        tr.probe_checkpoint(10, str(tmp_path / "ckpt"))
    finally:
        verifier.close()
        store.close()
    return tr, logger


def read_csv(path):
    with path.open() as f:
        return list(csv.DictReader(f))


def test_strict_is_the_headline_with_answer_only_beside_it(tmp_path):
    tr, logger = run_tracker(tmp_path, null_seed=None)
    rows = {r["kind"]: r for r in read_csv(tmp_path / "run" / "boundary.csv")}
    b, ck = rows["base"], rows["checkpoint"]
    assert b["metric"] == ck["metric"] == "strict"
    # strict base pass@1 = (4/4 + 2/4 + 0 + 1/4) / 4; answer-only adds p2's lucky guess.
    assert float(b["pass@1"]) == pytest.approx(1.75 / 4, abs=1e-6)
    assert float(b["answer_pass@1"]) == pytest.approx(2.0 / 4, abs=1e-6)
    assert float(b["gap@1"]) == pytest.approx(0.25 / 4, abs=1e-6)
    assert float(b["pass@n"]) == pytest.approx(0.75, abs=1e-6)  # p2 has no valid trace
    assert float(b["answer_pass@n"]) == pytest.approx(1.0, abs=1e-6)
    # Checkpoint: strict pass@1 (1 + 1 + 0 + 0) / 4; it loses p3 (strict) and p2 (answer-only).
    assert float(ck["delta_pass@1"]) == pytest.approx(0.5 - 1.75 / 4, abs=1e-6)
    assert float(ck["delta_pass@n"]) == pytest.approx(0.5 - 0.75, abs=1e-6)
    assert (ck["lost"], ck["gained"]) == ("1", "0")
    assert (ck["answer_lost"], ck["answer_gained"]) == ("2", "0")
    assert float(ck["answer_delta_pass@1"]) == pytest.approx(0.5 - 0.5, abs=1e-6)
    # W&B: the headline at probe/pass@k, each metric under its own name.
    base_m = next(m for m in logger.logged if m["probe/step"] == 0)
    assert base_m["probe/pass@1"] == pytest.approx(1.75 / 4)
    assert base_m["probe/strict/pass@1"] == pytest.approx(1.75 / 4)
    assert base_m["probe/answer/pass@1"] == pytest.approx(0.5)
    assert base_m["probe/gap/pass@4"] == pytest.approx(0.25)
    assert base_m["probe/strict_is_headline"] == 1


def test_groups_break_every_probe_down_by_tag(tmp_path):
    tr, logger = run_tracker(tmp_path, null_seed=None)
    g = {(r["kind"], r["group"]): r for r in read_csv(tmp_path / "run" / "boundary_groups.csv")}
    assert set(g) == {("base", "E"), ("base", "H"), ("checkpoint", "E"), ("checkpoint", "H")}
    assert g[("base", "E")]["group_by"] == "tier" and g[("base", "E")]["problems"] == "2"
    assert float(g[("base", "E")]["pass@1"]) == pytest.approx(0.75, abs=1e-6)
    assert float(g[("base", "H")]["pass@1"]) == pytest.approx(0.125, abs=1e-6)
    assert float(g[("base", "H")]["pass@n"]) == pytest.approx(0.5, abs=1e-6)
    assert float(g[("base", "H")]["answer_pass@n"]) == pytest.approx(1.0, abs=1e-6)
    assert float(g[("checkpoint", "E")]["delta_pass@1"]) == pytest.approx(0.25, abs=1e-6)
    assert float(g[("checkpoint", "H")]["delta_pass@1"]) == pytest.approx(-0.125, abs=1e-6)
    assert float(g[("checkpoint", "H")]["delta_pass@n"]) == pytest.approx(-0.5, abs=1e-6)
    assert (g[("checkpoint", "H")]["lost"], g[("checkpoint", "H")]["gained"]) == ("1", "0")
    lo, hi = float(g[("base", "H")]["pass@1_ci_low"]), float(g[("base", "H")]["pass@1_ci_high"])
    assert 0.0 <= lo <= 0.125 <= hi <= 0.25  # two problems: a resample is 0, 0.125 or 0.25
    ck_m = next(m for m in logger.logged if m["probe/step"] == 10)
    assert ck_m["probe_tier/E/strict/pass@1"] == pytest.approx(1.0)
    assert ck_m["probe_tier/H/strict/delta/pass@n"] == pytest.approx(-0.5)
    assert ck_m["probe_tier/H/strict/lost"] == 1
    assert ck_m["probe_tier/H/answer/pass@1"] == pytest.approx(0.0)
    # A tag every problem must carry: one clear error naming the problem.
    bad = Task("t", [Problem("a", "1*3+9", "12", {"tier": "E"}), Problem("b", "2-6+4", "0", {})],
               verifier="toy", group_by="tier")
    with pytest.raises(ConfigError, match=r"^task.group_by=tier: problem 'b' of task 't' has no meta\['tier'\]"):
        bad.groups()


def test_null_is_the_base_again_with_its_own_key_and_hand_computed_deltas(tmp_path):
    tr, logger = run_tracker(tmp_path, null_seed=7)
    rows = {r["kind"]: r for r in read_csv(tmp_path / "run" / "boundary.csv")}
    assert [r["kind"] for r in read_csv(tmp_path / "run" / "boundary.csv")] == ["base", "null", "checkpoint"]
    null = rows["null"]
    assert (null["step"], null["seed"], rows["base"]["seed"]) == ("0", "7", "0")
    jl = {r["kind"]: r for r in tr.rows}
    assert jl["null"]["probe_key"] != jl["base"]["probe_key"]  # the seed is in the store's key
    # strict: null pass@1 (3/4 + 2/4 + 1/4 + 0) / 4 = 0.375 vs base 0.4375; pass@4 3/4 both.
    assert float(null["pass@1"]) == pytest.approx(0.375, abs=1e-6)
    assert float(null["delta_pass@1"]) == pytest.approx(-0.0625, abs=1e-6)
    assert float(null["delta_pass@n"]) == pytest.approx(0.0, abs=1e-6)
    assert (null["lost"], null["gained"]) == ("1", "1")  # p3 lost, p2 gained (valid traces)
    assert (null["answer_lost"], null["answer_gained"]) == ("0", "0")
    g = {(r["kind"], r["group"]): r for r in read_csv(tmp_path / "run" / "boundary_groups.csv")}
    assert float(g[("null", "E")]["delta_pass@1"]) == pytest.approx(-0.125, abs=1e-6)
    assert float(g[("null", "H")]["delta_pass@1"]) == pytest.approx(0.0, abs=1e-6)
    assert (g[("null", "H")]["lost"], g[("null", "H")]["gained"]) == ("1", "1")
    # W&B: under probe/null/..., never over the base's own probe/pass@k at step 0.
    null_m = next(m for m in logger.logged if "probe/null/lost" in m)
    assert null_m["probe/null/delta/pass@1"] == pytest.approx(-0.0625)
    assert (null_m["probe/null/lost"], null_m["probe/null/gained"]) == (1, 1)
    assert "probe/pass@1" not in null_m
    # Probed once: a second probe_base (a resumed run) reads the base back and adds no null row.
    tr.ctx.store = Store(tmp_path / "s.sqlite")
    tr.ctx.make_sampler = lambda d: (ScriptedSampler(None, task=None), None)  # generate() would fail
    tr.probe_base(str(tmp_path / "base"))
    assert [r["kind"] for r in tr.rows] == ["base", "null", "checkpoint"]
    tr.store.close()


def test_saturation_flag_and_rule_of_three():
    n = np.array([4] * 100)
    assert saturation(compute_curve(n, np.ones(100, int), bootstrap_iters=20)) == \
        {"saturated": True, "rule_of_three": pytest.approx(0.03)}
    c = np.ones(100, int)
    c[7] = 0
    assert saturation(compute_curve(n, c, bootstrap_iters=20)) == {"saturated": False, "rule_of_three": None}
    # A subset (a group) that is saturated while the whole set is not; 3/P capped at 1.
    cur = compute_curve(n, c, bootstrap_iters=20)
    assert saturation(cur, np.arange(10, 20)) == {"saturated": True, "rule_of_three": pytest.approx(0.3)}
    assert saturation(cur, np.array([1, 2]))["rule_of_three"] == 1.0


def test_saturated_group_is_flagged_in_csv_and_console(tmp_path):
    tr, _ = run_tracker(tmp_path, null_seed=7)
    g = {(r["kind"], r["group"]): r for r in read_csv(tmp_path / "run" / "boundary_groups.csv")}
    # Tier E: the base solves both problems with a valid trace (pass@4 = 1): saturated, 3/2 -> 1.
    assert (g[("base", "E")]["saturated"], g[("base", "E")]["rule_of_three"]) == ("true", "1.000000")
    assert (g[("base", "H")]["saturated"], g[("base", "H")]["rule_of_three"]) == ("false", "")
    rows = {r["kind"]: r for r in read_csv(tmp_path / "run" / "boundary.csv")}
    assert rows["base"]["saturated"] == "false"  # strict: p2 never has a valid trace
    text = "\n".join(R.summary_lines(tr.rows))
    assert "headline: strict (right answer, valid trace) pass@k; answer-only beside it" in text
    assert "SATURATED (3/P = 1.000)" in text
    assert "null: the base probed again (seed 7)" in text


def test_crossing_fields_come_from_the_shared_bootstrap(tmp_path):
    tr, logger = run_tracker(tmp_path, null_seed=None)
    ck = next(r for r in tr.rows if r["kind"] == "checkpoint")
    # strict means: base (0.4375, 0.58333, 0.6875, 0.75), checkpoint 0.5 flat; d = +0.0625 at k = 1,
    # -0.08333 at k = 2: crossing at 2 ** (0.0625 / (0.0625 + 0.08333)) in log2 k.
    want = 2 ** (0.0625 / (0.0625 + 1 / 12))
    assert ck["crossing_k"] == pytest.approx(want)
    base_res, ck_res = tr.base, tr.results[10]
    cr = crossing_with_ci(base_res.curve_strict.per_problem, ck_res.curve_strict.per_problem, 200)
    assert (ck["crossing_k_ci_low"], ck["crossing_k_ci_high"], ck["crossing_share"]) == \
        (cr.ci_low, cr.ci_high, cr.p_cross)
    m = next(m for m in logger.logged if m["probe/step"] == 10)
    assert m["probe/crossing_k"] == pytest.approx(want)
    assert m["probe/crossing_share"] == cr.p_cross
    row = read_csv(tmp_path / "run" / "boundary.csv")[1]
    assert float(row["crossing_k"]) == pytest.approx(want, abs=1e-6)


def test_crossing_ci_on_constructed_curves():
    # Identical problems: every resample has the same curves, so the interval is the point and
    # every resample crosses (d = 0.3, 0.1, -0.1, -0.3: k = sqrt(6), halfway in log2 k).
    base = np.tile([0.2, 0.4, 0.6, 0.8], (5, 1))
    model = np.tile([0.5, 0.5, 0.5, 0.5], (5, 1))
    cr = crossing_with_ci(base, model, iters=100)
    assert (cr.k, cr.ci_low, cr.ci_high, cr.p_cross) == pytest.approx((math.sqrt(6),) * 3 + (1.0,))
    # Two problems: A as above, B with the model above the base everywhere (d = 0.7, 0.5, 0.3,
    # 0.1). The mean d = (0.5, 0.3, 0.1, -0.1) crosses halfway (in log2 k) between 3 and 4:
    # sqrt(12). Resamples: {A, A} (1/4) cross at sqrt(6), {A, B} (1/2) at sqrt(12), {B, B} (1/4)
    # never: share 3/4, the 2.5% quantile sqrt(6), the 97.5% one beyond n.
    above = np.array([[0.9, 0.9, 0.9, 0.9]])
    cr2 = crossing_with_ci(np.vstack([base[:1], base[:1]]), np.vstack([model[:1], above]), iters=400)
    assert cr2.k == pytest.approx(math.sqrt(12))
    assert cr2.ci_low == pytest.approx(math.sqrt(6)) and math.isinf(cr2.ci_high)
    assert cr2.p_cross == pytest.approx(0.75, abs=0.07)  # 3 sd of a 400-draw share
    assert cr2.fields()["crossing_share"] == cr2.p_cross


def test_old_rows_read_as_answer_only():
    old = {"step": 0, "kind": "base", "n": 4, "problems": 2, "pass@1": 0.5, "pass@n": 1.0,
           "curve": [0.5, 0.8, 0.9, 1.0], "strict_pass@1": 0.25}
    new = R.normalize(old)
    assert new["metric"] == "answer" and new["answer_pass@1"] == 0.5
    assert new["answer_curve"] == old["curve"] and "metric" not in old
    assert R.normalize(new) is new


def test_compare_falls_back_to_answer_when_strict_is_unknown():
    n, c = np.array([4, 4]), np.array([1, 4])
    from boundlab.probe.runner import ProbeResult

    cur = compute_curve(n, c, bootstrap_iters=20)
    a = ProbeResult("a", "", "", ["x", "y"], n, c, None, cur, None)
    out = compare(a, a, iters=20)
    assert out["metric"] == "answer" and "answer_lost" not in out and out["delta_pass@1"] == 0.0


def test_null_seed_offset_is_a_probe_setting_that_must_not_be_zero():
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from boundlab.config import register_configs
    from boundlab.validate import validate
    from pathlib import Path

    register_configs()
    conf = Path(__file__).resolve().parents[2] / "conf"

    def cfg(*overrides):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
            return compose(config_name="train", overrides=list(overrides))

    # On for the toy world's default probe, off for the seconds-long smoke run.
    assert cfg().probe.null_seed_offset == 1 and ProbeSpec.from_config(cfg().probe).null_seed == 1
    assert ProbeSpec.from_config(cfg("probe.seed=5").probe).null_seed == 6
    assert cfg("debug=smoke").probe.null_seed_offset is None
    assert ProbeSpec.from_config(cfg("debug=smoke").probe).null_seed is None
    validate(cfg("probe.seed=1"))  # any seed works with the default offset
    with pytest.raises(ConfigError, match=r"^probe.null_seed_offset=0: must not be 0"):
        validate(cfg("probe.null_seed_offset=0"))


def test_a_null_lost_from_wandb_is_relogged_on_its_own(tmp_path):
    tr, logger = run_tracker(tmp_path, null_seed=7)
    logger.logged.clear()
    # W&B holds the base (step 0) and the checkpoint, not the null: only the null is re-logged.
    held = {("base", 0), ("checkpoint", 10)}
    assert tr.relog_missing(lambda kind, step: (kind, step) not in held) == [0]
    assert [("probe/null/lost" in m) for m in logger.logged] == [True]
    logger.logged.clear()
    held.add(("null", 0))
    assert tr.relog_missing(lambda kind, step: (kind, step) not in held) == []


def test_probe_py_summary_and_metrics_lead_with_strict(tmp_path, capsys):
    from boundlab.probe.app import _groups, passk_metrics, print_summary

    tr, _ = run_tracker(tmp_path, null_seed=None)
    capsys.readouterr()
    task = toy_task()
    print_summary(tr.base, tmp_path / "s.sqlite", None, task)
    out = capsys.readouterr().out.splitlines()
    assert "  headline: strict pass@k (right answer and a valid trace); answer-only beside it, with " \
           "the gap (answer-only - strict)" in out
    # pass@1: strict 0.4375 with its CI, answer-only 0.5, gap +0.0625.
    line = next(x for x in out if x.strip().startswith("pass@1 "))
    assert line.split()[1] == "0.4375" and line.split()[-2:] == ["0.5000", "+0.0625"]
    assert "  solvable (c > 0): 3 of 4 with a valid trace, 4 answer-only" in out
    e = next(x for x in out if x.strip().startswith("E ("))
    assert "0.7500" in e and "SATURATED (3/P = 1.000)" in e
    m = passk_metrics(tr.base, groups=_groups(tr.base, task, 0.95))
    assert m["probe/pass@1"] == pytest.approx(0.4375) and m["probe/answer/pass@1"] == pytest.approx(0.5)
    assert m["probe_tier/H/strict/pass@4"] == pytest.approx(0.5) and m["probe_tier/E/strict/saturated"] == 1
    assert m["probe/solvable"] == 3 and m["probe/strict_is_headline"] == 1


def test_diversity_and_gpass_views_on_every_row(tmp_path):
    # Issue 39's views from the stored samples. Base answers: p0 12 x4; p1 3 x2 + 999 x2;
    # p2 33 + 999 x3; p3 60 + 999 x3. Strict c = 4, 2, 0, 1 of n = 4; G-Pass at tau 0.5.
    import math as _m

    tr, logger = run_tracker(tmp_path, null_seed=None)
    b = next(r for r in tr.rows if r["kind"] == "base")
    assert b["distinct_answers"] == pytest.approx(7 / 4)
    assert b["top_answer_share"] == pytest.approx(3 / 4)
    h = -(0.25 * _m.log(0.25) + 0.75 * _m.log(0.75))
    assert b["answer_entropy"] == pytest.approx((_m.log(2) + 2 * h) / 4, abs=1e-6)
    assert b["no_answer_share"] == 0
    # k = 1: pass@1 (1 + 1/2 + 0 + 1/4) / 4; k = 2 (one of two right): pass@2 (1 + 5/6 + 0 + 1/2) / 4;
    # k = 4 (two of four right): p0 and p1 only.
    assert b["gpass@1"] == pytest.approx(1.75 / 4, abs=1e-6)
    assert b["gpass@2"] == pytest.approx((1 + 5 / 6 + 0.5) / 4, abs=1e-6)
    assert b["gpass@4"] == b["gpass@n"] == pytest.approx(0.5, abs=1e-6)
    assert b["groups"]["H"]["gpass@n"] == 0 and b["groups"]["E"]["gpass@n"] == 1
    ck = next(r for r in tr.rows if r["kind"] == "checkpoint")
    # Checkpoint: p0, p1 all strict; p2, p3 all 999: one answer per problem.
    assert (ck["distinct_answers"], ck["answer_entropy"], ck["top_answer_share"]) == (1, 0, 1)
    rows = {r["kind"]: r for r in read_csv(tmp_path / "run" / "boundary.csv")}
    assert float(rows["base"]["gpass@n"]) == pytest.approx(0.5) and rows["base"]["gpass_tau"] == "0.500000"
    base_m = next(m for m in logger.logged if m["probe/step"] == 0)
    assert base_m["probe/diversity/distinct_answers"] == pytest.approx(7 / 4)
    assert base_m["probe_tier/H/gpass@n"] == 0


def test_wandb_has_the_base_beside_every_probe_curves_on_log_k_and_tiers_apart(tmp_path):
    import math as _m

    tr, logger = run_tracker(tmp_path, null_seed=None)
    ck_m = next(m for m in logger.logged if m.get("probe/step") == 10 and "probe/pass@1" in m)
    base_m = next(m for m in logger.logged if m.get("probe/step") == 0 and "probe/pass@1" in m)
    # The base as its own series, at the base's step and at the checkpoint's: strict 1.75/4 at k = 1.
    assert base_m["probe/base/pass@1"] == ck_m["probe/base/pass@1"] == pytest.approx(1.75 / 4)
    assert ck_m["probe/base/pass@n"] == pytest.approx(0.75)
    # Per-tier keys live under their own prefix (their own W&B panel section), with the probe step.
    assert not any(k.startswith("probe/E/") or k.startswith("probe/H/") for k in ck_m)
    assert ("probe_tier", "probe/step") in logger.step_metrics
    # Every curve to date against log2 k, as a table and a chart.
    cols, rows = logger.tables["probe/curves_table"]
    assert cols == ["model", "step", "k", "log2_k", "pass@k"]
    assert [(r[0], r[2]) for r in rows] == [("base", 1), ("base", 2), ("base", 4),
                                             ("step 10", 1), ("step 10", 2), ("step 10", 4)]
    assert rows[5][3] == 2.0 and rows[3][4] == pytest.approx(0.5)  # step 10: strict pass@1 (1+1+0+0)/4
    xs, series, _ = logger.plots["probe/curves_log_k"]
    assert xs == [0.0, 1.0, 2.0] and set(series) == {"base", "step 10"}
    assert series["base"][2] == pytest.approx(0.75) and _m.isclose(series["step 10"][0], 0.5)
