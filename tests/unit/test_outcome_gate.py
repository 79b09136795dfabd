"""reward.outcome_bonus and data.gate (issue 39): the bonus, the penalty and the gated sets against
hand-computed values, the remap of a step's rows, and the refusals (one line each)."""

import math

import pytest

from boundlab.config import ConfigError
from boundlab.training.gate import remap_ids, select
from boundlab.training.outcome import OutcomeBonus, answer_key, outcome_bonuses


def test_bonus_and_penalty_by_hand():
    # p: G = 4, answers 4, 4, 5 and none; ucb_coef 1, repeat_penalty 0.5, nothing seen before.
    out, counts = outcome_bonuses(["p"] * 4, ["4", "4", "5", None], {}, 1.0, 0.5)
    assert out == pytest.approx([1 - 0.5 / 3, 1 - 0.5 / 3, 1.0, 0.0])
    assert counts == {"p": {"4": 2, "5": 1}}
    # Next call: 4 was seen twice (1/sqrt(3)), 6 never; q's group of one gets no penalty.
    out2, counts2 = outcome_bonuses(["p", "p", "q"], ["4", "6", "4"], counts, 1.0, 0.5)
    assert out2 == pytest.approx([1 / math.sqrt(3), 1.0, 1.0])
    assert counts2 == {"p": {"4": 3, "5": 1, "6": 1}, "q": {"4": 1}}
    assert counts == {"p": {"4": 2, "5": 1}}  # the input is not changed


def test_each_knob_alone_and_off():
    assert outcome_bonuses(["p"] * 3, ["1", "1", "1"], {"p": {"1": 8}}, 0.3, 0.0)[0] == pytest.approx([0.1] * 3)
    assert outcome_bonuses(["p"] * 3, ["1", "1", "2"], {}, 0.0, 0.6)[0] == pytest.approx([-0.3, -0.3, 0.0])
    assert outcome_bonuses(["p"] * 2, ["1", "1"], {}, 0.0, 0.0)[0] == [0.0, 0.0]


def test_answer_key_strips_and_drops_empty():
    assert answer_key(" 12 ") == "12" and answer_key("") is None and answer_key(None) is None


def test_reward_function_reads_the_task_rewards_answers():
    from boundlab.tasks import build_task
    from boundlab.training.rewards import make_reward_fn
    from boundlab.verify import build_verifier

    from boundlab.worlds.toyworld2.world import canonical_trace

    task = build_task(_toy_task())
    task = task.with_problems(task.problems[:4])
    p = task.problems[0]  # 2+1+3+5*4+2 = 28
    good = canonical_trace(p.question)
    bonus = OutcomeBonus(1.0, 0.5)
    reward = make_reward_fn(task, build_verifier(task.verifier), observe=bonus.observe)
    comps, pid = [good, good, good.replace("A:28", "A:27"), "no answer"], [p.problem_id] * 4
    assert reward(["q"] * 4, comps, pid) == [1.0, 1.0, 0.0, 0.0]
    # G = 4: 28 twice (1 - 0.5 * 1/3), 27 once (1), no answer (0).
    assert bonus(["q"] * 4, comps, pid) == pytest.approx([1 - 0.5 / 3, 1 - 0.5 / 3, 1.0, 0.0])
    assert bonus.counts == {p.problem_id: {"28": 2, "27": 1}}
    two = comps[:2]  # TRL hands every reward function the same list
    reward(["q"] * 2, two, pid[:2])
    # 28 seen twice before: 1/sqrt(3); both share it, G = 2: - 0.5 * 1/1.
    assert bonus(["q"] * 2, two, pid[:2]) == pytest.approx([1 / math.sqrt(3) - 0.5] * 2)
    with pytest.raises(RuntimeError, match="did not score"):
        bonus(["q"] * 2, list(two), pid[:2])  # no task reward ran on these first


def _toy_task():
    from boundlab.config import with_updates
    from test_smoke_combos import _start_up_checks

    return with_updates(_start_up_checks("debug=smoke").task, split="train")


RESULTS = {"a": (4, 0), "b": (4, 3), "c": (4, 1), "d": (4, 0), "e": (4, 2)}
ORDER = ["a", "b", "c", "d", "e"]


def test_gates_by_hand():
    assert select(RESULTS, ORDER, "zero_success", 0.5) == ["a", "d"]
    # ceil(0.5 * 5) = 3 lowest success rates: a (0), d (0), c (1/4); returned in split order.
    assert select(RESULTS, ORDER, "low_likelihood", 0.5) == ["a", "c", "d"]
    assert select(RESULTS, ORDER, "low_likelihood", 0.2) == ["a"]  # tie a/d broken by split order
    assert select(RESULTS, ORDER, "none", 0.5) == ORDER
    assert select({k: (4, 1) for k in ORDER}, ORDER, "zero_success", 0.5) == []


def test_remap_keeps_gated_rows_and_spreads_the_rest():
    # Outside the gate {a, d}: b, c, e are the 0th, 1st, 2nd -> a, d, a.
    assert remap_ids(["b", "b", "c", "a", "e", "d"], ORDER, ["a", "d"]) == ["a", "a", "d", "a", "a", "d"]
    assert remap_ids(["b", "c"], ORDER, None) == ["b", "c"]


@pytest.mark.parametrize("over,needle", [
    (["reward.outcome_bonus.ucb_coef=-1"], ">= 0"),
    (["reward.outcome_bonus.ucb_coef=1", "algo=remax"], "remax"),
    (["reward.outcome_bonus.repeat_penalty=1", "algo=sft_distill"], "distils"),
    (["data.gate=hardest"], "must be one of"),
    (["data.gate=low_likelihood", "data.gate_fraction=0"], "(0, 1]"),
    (["data.gate=zero_success", "data.gate_samples=0"], ">= 1"),
    (["train.generation_chunk=0", "algo=grpo_onpolicy"], ">= 1"),
    (["train.generation_chunk=64"], "algo=grpo with rollout=hf samples each batch in one engine call"),
])
def test_refusals_are_one_line(over, needle):
    from test_smoke_combos import _start_up_checks

    with pytest.raises(ConfigError) as e:
        _start_up_checks("debug=smoke", *over)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_defaults_are_off():
    from test_smoke_combos import _start_up_checks

    cfg = _start_up_checks("debug=smoke")
    assert cfg.reward.outcome_bonus.ucb_coef == 0 and cfg.reward.outcome_bonus.repeat_penalty == 0
    assert cfg.data.gate == "none" and cfg.train.generation_chunk is None
    from boundlab.training.app import _outcome_bonus

    assert _outcome_bonus(cfg) is None  # train.py hands the trainer the task reward alone, as before


def _gate(tmp_path, gate, resume_from=None):
    from boundlab.training.gate import Gate
    from test_smoke_combos import _start_up_checks

    cfg = _start_up_checks("debug=smoke", f"data.gate={gate}")
    rows = [{"prompt": f"Q{p}", "problem_id": p} for p in ORDER]
    return Gate(cfg, rows, score=None, run_dir=tmp_path, resume_from=resume_from)


def test_an_empty_gate_trains_on_the_whole_split_and_says_so(tmp_path, capsys):
    import json

    g = _gate(tmp_path, "zero_success")
    g.probe = lambda step: {k: (4, 1) for k in ORDER}  # every problem solved once
    g.decide(2)
    assert g.active is None
    assert g.remap({"prompt": ["Qb"], "problem_id": ["b"]}) == {"prompt": ["Qb"], "problem_id": ["b"]}
    out = capsys.readouterr().out
    assert "no training problem qualifies at step 2; training on the whole split" in out
    row = json.loads((tmp_path / "data_gate.jsonl").read_text())
    assert row["fallback_whole_split"] and row["size"] == 5 and row["active"] is None


def test_the_gate_remaps_both_batch_shapes(tmp_path):
    g = _gate(tmp_path, "zero_success")
    g.probe = lambda step: RESULTS
    g.decide(0)
    assert g.active == ["a", "d"]
    assert g.remap({"prompt": ["Qb", "Qd"], "problem_id": ["b", "d"]}) == {"prompt": ["Qa", "Qd"],
                                                                           "problem_id": ["a", "d"]}
    assert g.remap([{"prompt": "Qc", "problem_id": "c"}]) == [{"prompt": "Qd", "problem_id": "d"}]


def test_a_resumed_gate_reads_its_checkpoint_and_refuses_a_missing_one(tmp_path):
    from boundlab.rundir.io import atomic_write_json

    ck = tmp_path / "checkpoint-2"
    ck.mkdir()
    with pytest.raises(ConfigError, match="data_gate.json is missing"):
        _gate(tmp_path, "zero_success", resume_from=ck)
    atomic_write_json(ck / "data_gate.json", {"step": 2, "gate": "zero_success", "active": ["e"]})
    g = _gate(tmp_path, "zero_success", resume_from=ck)
    assert g.active == ["e"] and g.restored
