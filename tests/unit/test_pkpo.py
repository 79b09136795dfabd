"""PKPO (issue 39): the per-sample transform against brute-force enumeration of k-subsets, the
unbiasedness of the gradient estimate by exact enumeration over outcomes, the leave-one-out baseline,
and the annealing schedule of k."""

import itertools
from math import comb

import pytest
import torch

from boundlab.algos import objectives as O


def _subset_mean_reward(outcomes, k):
    """Brute force: r_i = mean over all k-subsets S of f(S) * [i in S], times C(n,k)/C(n-1,k-1)...
    kept literal: (1 / C(n, k)) * sum over S holding i of max(S), which is PKPO's per-sample weight."""
    n = len(outcomes)
    out = []
    for i in range(n):
        tot = sum(max(outcomes[j] for j in s) for s in itertools.combinations(range(n), k) if i in s)
        out.append(tot / comb(n, k))
    return out


def _pass_at(n, c, k):
    return 1 - comb(n - c, k) / comb(n, k) if k else 0.0


@pytest.mark.parametrize("n,k", [(4, 1), (4, 2), (4, 3), (6, 2), (6, 5)])
def test_reward_minus_baseline_matches_subset_enumeration(n, k):
    for bits in itertools.product([0, 1], repeat=n):
        adv = O.pkpo_advantages(torch.tensor([bits], dtype=torch.bool), k)[0].tolist()
        r = _subset_mean_reward(bits, k)
        for i in range(n):
            others = sum(bits) - bits[i]
            base = (k / n) * _pass_at(n - 1, others, k)  # pass@k of the other n - 1: free of sample i
            assert adv[i] == pytest.approx((r[i] - base) * n / k, abs=1e-6), (bits, i)


def test_hand_computed_group():
    # n = 4, k = 2, outcomes 1, 0, 0, 0. Correct sample: 1 - pass@2 of (0, 0, 0) = 1.
    # A wrong one: others hold one correct of 3: pass@1 = 1/3, pass@2 = 1 - C(2,2)/C(3,2) = 2/3,
    # so 1/3 - 2/3 = -1/3.
    adv = O.pkpo_advantages(torch.tensor([[True, False, False, False]]), 2)[0]
    assert adv.tolist() == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3], abs=1e-6)
    # All correct or all wrong: no signal.
    assert O.pkpo_advantages(torch.ones(1, 4, dtype=torch.bool), 2).abs().max() == 0
    assert O.pkpo_advantages(torch.zeros(1, 4, dtype=torch.bool), 2).abs().max() == 0


@pytest.mark.parametrize("n,k,p", [(5, 1, 0.3), (5, 2, 0.3), (5, 3, 0.1), (6, 4, 0.55)])
def test_the_estimate_is_unbiased_for_the_gradient_of_pass_at_k(n, k, p):
    # Samples are Bernoulli(p); d/dp log P(y) = y/p - (1-y)/(1-p). Exact expectation over all 2^n
    # outcomes of sum_i a_i * score_i equals (n / k) * d/dp [1 - (1 - p)^k].
    expect = 0.0
    for bits in itertools.product([0, 1], repeat=n):
        prob = 1.0
        for b in bits:
            prob *= p if b else 1 - p
        adv = O.pkpo_advantages(torch.tensor([bits], dtype=torch.bool), k)[0].double().tolist()
        expect += prob * sum(a * (b / p - (1 - b) / (1 - p)) for a, b in zip(adv, bits))
    truth = (n / k) * k * (1 - p) ** (k - 1)
    assert expect == pytest.approx(truth, rel=1e-5)


def test_k_must_leave_a_baseline():
    with pytest.raises(ValueError, match="1 <= k < the group size"):
        O.pkpo_advantages(torch.zeros(2, 4, dtype=torch.bool), 4)


def test_annealing_is_linear_and_a_function_of_the_step_only():
    ks = [O.annealed_k(4, 1, s, 10) for s in range(10)]
    assert ks == [4, 4, 3, 3, 3, 2, 2, 2, 1, 1]
    assert O.annealed_k(4, None, 7, 10) == 4
    assert O.annealed_k(1, 7, 0, 100) == 1 and O.annealed_k(1, 7, 99, 100) == 7


def _settings(*overrides):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from pathlib import Path

    from boundlab.algos.onpolicy.settings import settings_from_cfg
    from boundlab.config import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    conf = Path(__file__).resolve().parents[2] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose(config_name="train", overrides=["algo=pkpo", *overrides])
    return settings_from_cfg("pkpo", cfg)


def test_the_trainer_anneals_k_by_step_from_the_config():
    s = _settings("algo.onpolicy.passk_k=6", "algo.onpolicy.passk_k_final=2")
    assert (s.estimator, s.passk_k, s.passk_k_final) == ("pkpo", 6, 2)
    assert [s.at_step(t, 5).passk_k for t in range(5)] == [6, 5, 4, 3, 2]
    fixed = _settings("algo.onpolicy.passk_k_final=null")
    assert {fixed.at_step(t, 5).passk_k for t in range(5)} == {4}


@pytest.mark.parametrize("over,msg", [
    (["algo.onpolicy.passk_k=8"], "passk_k (8) must be in [1, algo.rollouts (8))"),
    (["algo.onpolicy.passk_k_final=0"], "passk_k_final (0) must be in [1, algo.rollouts (8))"),
])
def test_k_out_of_range_is_refused_in_one_line(over, msg):
    from boundlab.config import ConfigError

    with pytest.raises(ConfigError) as e:
        _settings(*over)
    assert msg in str(e.value) and "\n" not in str(e.value)
