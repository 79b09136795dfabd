"""bench/peer_lmeval.py's pure parts, without lm-eval: the task YAML it writes for lm-eval, and the
reading of lm-eval's logged samples into our per-problem completions (then scored by our verifier)."""

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
spec = importlib.util.spec_from_file_location("peer_lmeval", ROOT / "bench" / "peer_lmeval.py")
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)

PROMPTS = {"tw2-test-0000": "Q:9+6*1*5;", "tw2-test-0002": "Q:3+3+1+5*4;"}


def record(pid, resps, ctx=None, doc_id=0):
    """One line as lm-eval 0.4.13 logs it for a generate_until task with repeats (shape copied from
    a real run: `resps` is one list of n strings, `arguments` keyed gen_args_0)."""
    return {"doc_id": doc_id, "doc": {"problem_id": pid, "prompt": PROMPTS.get(pid, "?"), "answer": "1"},
            "target": "1",
            "arguments": {"gen_args_0": {"arg_0": PROMPTS.get(pid, "?") if ctx is None else ctx,
                                         "arg_1": {"until": ["<eos>"]}}},
            "resps": [resps], "filtered_resps": [resps[0]], "filter": "answer-first"}


def test_task_yaml_carries_our_settings(tmp_path):
    text = peer.task_yaml(tmp_path / "p.jsonl", 64, 1.0, 0.95, 108, "<eos>")
    cfg = yaml.safe_load(text)
    assert cfg["repeats"] == 64 and cfg["output_type"] == "generate_until"
    assert cfg["doc_to_text"] == "prompt" and cfg["num_fewshot"] == 0
    assert cfg["dataset_path"] == "json"
    assert cfg["dataset_kwargs"]["data_files"]["test"] == str((tmp_path / "p.jsonl").resolve())
    assert cfg["generation_kwargs"] == {"until": ["<eos>"], "do_sample": True, "temperature": 1.0,
                                       "top_p": 0.95, "top_k": 0, "max_gen_toks": 108}


@pytest.mark.parametrize("bad", [dict(n=0), dict(max_new_tokens=0), dict(temperature=0.0)])
def test_task_yaml_refuses_settings_that_cannot_be_compared(bad, tmp_path):
    kw = dict(n=4, temperature=1.0, top_p=1.0, max_new_tokens=108) | bad
    with pytest.raises(ValueError):
        peer.task_yaml(tmp_path / "p.jsonl", kw["n"], kw["temperature"], kw["top_p"],
                       kw["max_new_tokens"], "<eos>")


def test_completions_keep_every_repeat_in_order():
    recs = [record("tw2-test-0002", ["a", "b", "c"], doc_id=1), record("tw2-test-0000", ["x", "y", "z"])]
    per = peer.lmeval_completions(recs, PROMPTS, 3)
    assert per == {"tw2-test-0002": ["a", "b", "c"], "tw2-test-0000": ["x", "y", "z"]}


@pytest.mark.parametrize("recs,msg", [
    ([record("tw2-test-0000", ["x", "y"]), record("tw2-test-0002", ["a", "b", "c"])], "expected 3"),
    ([record("tw2-test-0000", ["x", "y", "z"], ctx="Q:9+6*1*5; "),
      record("tw2-test-0002", ["a", "b", "c"])], "not our prompt"),
    ([record("tw2-test-0000", ["x", "y", "z"])], "no samples for 1"),
    ([record("tw2-test-0000", ["x", "y", "z"]), record("tw2-test-0000", ["x", "y", "z"])], "twice"),
    ([record("tw2-test-9999", ["x", "y", "z"])], "unknown problem"),
])
def test_completions_refuse_what_would_make_the_comparison_wrong(recs, msg):
    with pytest.raises(ValueError, match=msg):
        peer.lmeval_completions(recs, PROMPTS, 3)


def test_completions_are_scored_by_our_verifier(tmp_path):
    """The whole main-env half: lm-eval's lines -> our file -> score_samples_file with toy2's judge."""
    import boundlab.builtins  # noqa: F401
    from types import SimpleNamespace

    from boundlab.probe.runner import score_samples_file
    from boundlab.probe.store import Store
    from boundlab.tasks import build_task
    from boundlab.worlds.toyworld2.world import canonical_trace
    from boundlab.verify import build_verifier

    task = build_task(SimpleNamespace(name="toy2", split="test", template=None, chat=False,
                                      system=None, verifier=None, path=None,
                                      toy2={"tiers": ["H1"], "per_tier": 2}))
    prompts = {p.problem_id: task.render(p) for p in task.problems}
    p0, p1 = task.problems
    good = canonical_trace(p0.question)
    recs = [{"doc": {"problem_id": p.problem_id}, "arguments": {"g": {"arg_0": prompts[p.problem_id]}},
             "resps": [texts]}
            for p, texts in ((p0, [good, "garbage", good]), (p1, ["x;A:0", "", "nope"]))]
    per = peer.lmeval_completions(recs, prompts, 3)
    f = tmp_path / "c.jsonl"
    f.write_text("".join(json.dumps({"problem_id": pid, "completion": t}) + "\n"
                         for pid in prompts for t in per[pid]))
    res, _ = score_samples_file(task, f, build_verifier("toy2"), Store(tmp_path / "s.sqlite"),
                                bootstrap_iters=50, progress=False)
    assert res.c_strict.tolist() == [2, 0] and res.n.tolist() == [3, 3]
    assert res.curve_strict.at(1) == pytest.approx((2 / 3 + 0) / 2)


def test_ci_overlap():
    assert peer.ci_overlap((0.1, 0.3), (0.3, 0.5)) and peer.ci_overlap((0.1, 0.5), (0.2, 0.3))
    assert not peer.ci_overlap((0.1, 0.2), (0.25, 0.3))


@pytest.mark.parametrize("a,b,p", [(0, 0, 1.0), (4, 0, 0.125), (0, 4, 0.125), (3, 3, 1.0),
                                   (6, 1, 2 * 8 / 128), (10, 0, 2 / 1024)])
def test_sign_test_by_hand(a, b, p):
    assert peer.sign_test(a, b) == pytest.approx(p)


def test_compare_pairs_the_same_problems_and_counts_the_solved_split():
    import numpy as np
    from types import SimpleNamespace

    from boundlab.probe.curves import compute_curve

    def side(c, ids=("a", "b", "c", "d")):
        n, c = np.array([4, 4, 4, 4]), np.array(c)
        cur = compute_curve(n, c, bootstrap_iters=200)
        return SimpleNamespace(problem_ids=list(ids), curve=cur, curve_strict=cur, c=c, c_strict=c)

    out = peer.compare(side([4, 1, 0, 0]), side([4, 0, 2, 0]), [1, 4], 200, 0.95)
    # pass@1: (1 + .25) / 4 against (1 + .5) / 4; pass@4: 2/4 each, solved {a, b} against {a, c}.
    assert out["strict_pass@1"]["boundlab_minus_lmeval"] == pytest.approx(-0.0625)
    assert out["strict_pass@4"]["boundlab_minus_lmeval"] == 0.0
    assert out["strict_solved"] == {"boundlab_only": 1, "lmeval_only": 1, "both": 1, "sign_test_p": 1.0,
                                    "discordant_c": {"b": [1, 0], "c": [0, 2]}}
    assert out["answer_correct_samples"] == [5, 6]
    with pytest.raises(ValueError, match="different problems"):
        peer.compare(side([1, 1, 1, 1]), side([1, 1, 1, 1], ids=("a", "b", "d", "c")), [1], 10, 0.95)
