"""KL(base || model) view (issue 39): the estimator against a closed form, the scorer against a
token-by-token loop on the real toy model, and the view end to end in the boundary tracker (0 for an
identical copy of the base, positive for a sharpened one)."""

from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from transformers import AutoModelForCausalLM, AutoTokenizer

from boundlab.probe.kl_view import kl_estimate, sequence_logprobs

ROOT = Path(__file__).resolve().parents[2]
torch.set_num_threads(1)


def test_estimator_against_the_closed_form_on_a_categorical():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    truth = float(np.sum(p * np.log(p / q)))  # 0.5 ln 2.5 + 0.2 ln 0.4 = 0.274887...
    assert truth == pytest.approx(0.5 * np.log(2.5) + 0.2 * np.log(0.4))
    rng = np.random.default_rng(0)
    y = rng.choice(3, size=200_000, p=p)
    est = kl_estimate(np.log(p[y]), np.log(q[y]), np.arange(len(y)) % 200)
    assert abs(est.value - truth) < 4 * est.se and est.se < 0.005
    # Identical models: exactly 0.
    same = kl_estimate(np.log(p[y]), np.log(p[y]), np.arange(len(y)) % 200)
    assert same.value == 0.0


def test_problem_means_are_averaged_over_problems_not_samples():
    # Problem a: diffs 1, 1, 1 (mean 1); problem b: diff 3 (mean 3) -> 2, not 6/4.
    est = kl_estimate(np.array([1.0, 1.0, 1.0, 3.0]), np.zeros(4), np.array(["a", "a", "a", "b"]))
    assert est.value == 2.0 and est.samples == 4


def test_scorer_matches_a_token_by_token_loop_on_the_toy_model():
    from boundlab.worlds.toyworld2.paths import base_model_dir

    model = AutoModelForCausalLM.from_pretrained(base_model_dir()).eval()
    tok = AutoTokenizer.from_pretrained(base_model_dir())
    prompts = [tok("Q:4+8*8;", add_special_tokens=False)["input_ids"],
               tok("Q:1*3+9*2-5;", add_special_tokens=False)["input_ids"]]
    comps = [tok("8*8=64", add_special_tokens=False)["input_ids"] + [tok.eos_token_id],
             tok("1*3=3", add_special_tokens=False)["input_ids"]]
    got = sequence_logprobs(model, prompts, comps, temperature=0.7, pad_id=tok.eos_token_id)
    for g, p, c in zip(got, prompts, comps):
        want = 0.0
        with torch.no_grad():
            for j, t in enumerate(c):
                logits = model(input_ids=torch.tensor([p + c[:j]])).logits[0, -1] / 0.7
                want += float(torch.log_softmax(logits.double(), -1)[t])
        assert g == pytest.approx(want, abs=1e-4)


def _cfg(*overrides):
    from boundlab.config import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_the_tracker_logs_kl_zero_for_a_copy_and_positive_for_a_sharpened_model(tmp_path):
    from boundlab.boundary.tracker import build_tracker
    from boundlab.probe.context import ProbeContext
    from boundlab.probe.spec import ProbeSpec, load_task
    from boundlab.probe.store import Store
    from boundlab.sampling.checkpoint import sampler_factory
    from boundlab.worlds.toyworld2.paths import base_model_dir
    from boundlab.verify import build_verifier

    cfg = _cfg("probe.n=8", "probe.bootstrap_iters=50", "task.toy2.tiers=[E,H1]", "task.toy2.per_tier=3",
               "sampler.torch_threads=1", "probe.kl_samples=4", "probe.null_seed_offset=null")
    task = load_task(cfg)
    model = AutoModelForCausalLM.from_pretrained(base_model_dir())
    tok = AutoTokenizer.from_pretrained(base_model_dir())
    copy, sharp = tmp_path / "copy", tmp_path / "sharp"
    model.save_pretrained(copy)
    tok.save_pretrained(copy)
    with torch.no_grad():
        model.model.norm.weight.mul_(3.0)  # every logit x 3: the base at temperature 1/3
    model.save_pretrained(sharp)
    tok.save_pretrained(sharp)
    (tmp_path / "run").mkdir()
    store = Store(tmp_path / "s.sqlite")
    verifier = build_verifier(task.verifier)
    try:
        tr = build_tracker(tmp_path / "run",
                           ProbeContext(task, store, verifier, sampler_factory(cfg.model, cfg.sampler),
                                        progress=False),
                           ProbeSpec.from_config(cfg.probe))
        tr.probe_base(str(base_model_dir()))
        tr.probe_checkpoint(1, str(copy))
        tr.probe_checkpoint(2, str(sharp))
    finally:
        verifier.close()
        store.close()
    rows = {r["step"]: r for r in tr.rows}
    assert rows[0]["kl_from_base"] == 0.0
    assert rows[1]["kl_from_base"] == 0.0 and rows[1]["kl_samples"] == 4 * len(task)
    assert rows[2]["kl_from_base"] > 0 and rows[2]["kl_from_base_se"] > 0
