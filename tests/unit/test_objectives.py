"""The shared RL math against numbers worked out by hand (the arithmetic is in the comments)."""

import math

import pytest
import torch

from boundlab.algos import objectives as O

torch.set_num_threads(1)


def t(*rows):
    return torch.tensor(rows, dtype=torch.float32)


def close(a, b, tol=1e-5):
    assert torch.allclose(torch.as_tensor(a, dtype=torch.float32), torch.as_tensor(b, dtype=torch.float32),
                          atol=tol), (a, b)


# ---- KL estimators ----

def test_kl_estimators_by_hand():
    # p = 0.5 (policy), q = 0.25 (reference): log p/q = ln 2 = 0.693147
    logp, logq = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    close(O.kl_k1(logp, logq), [0.693147])                      # ln 2
    close(O.kl_k2(logp, logq), [0.240227])                      # 0.5 * 0.693147^2
    close(O.kl_k3(logp, logq), [0.193147])                      # q/p - 1 - ln(q/p) = 0.5 - 1 + 0.693147
    close(O.kl_per_token(logp, logq, "k3"), [0.193147])
    # Equal distributions: every estimator is 0.
    for name in ("k1", "k2", "k3"):
        close(O.kl_per_token(logq, logq, name), [0.0])
    with pytest.raises(ValueError, match="k4"):
        O.kl_per_token(logp, logq, "k4")


def test_k3_is_never_negative_where_k1_is():
    # p = 0.25, q = 0.5: k1 = -ln 2 < 0; k3 = 2 - 1 - ln 2 = 0.306853 > 0
    logp, logq = torch.tensor([math.log(0.25)]), torch.tensor([math.log(0.5)])
    close(O.kl_k1(logp, logq), [-0.693147])
    close(O.kl_k3(logp, logq), [0.306853])


# ---- GAE ----

def test_gae_three_tokens_gamma_1_lam_095():
    # rewards [0, 0, 1], values [0.5, 0.4, 0.8], gamma 1, lam 0.95; V after the end = 0
    # delta_2 = 1 + 0 - 0.8 = 0.2                A_2 = 0.2
    # delta_1 = 0 + 0.8 - 0.4 = 0.4              A_1 = 0.4 + 0.95 * 0.2 = 0.59
    # delta_0 = 0 + 0.4 - 0.5 = -0.1             A_0 = -0.1 + 0.95 * 0.59 = 0.4605
    # returns = A + V = [0.9605, 0.99, 1.0]
    adv, ret = O.gae(t([0, 0, 1]), t([0.5, 0.4, 0.8]), t([1, 1, 1]), gamma=1.0, lam=0.95)
    close(adv, [[0.4605, 0.59, 0.2]])
    close(ret, [[0.9605, 0.99, 1.0]])


def test_gae_discounted_and_masked():
    # Row 0, gamma 0.9, lam 0.5:
    #   delta_2 = 1 - 0.8 = 0.2                    A_2 = 0.2
    #   delta_1 = 0.9 * 0.8 - 0.4 = 0.32           A_1 = 0.32 + 0.45 * 0.2 = 0.41
    #   delta_0 = 0.9 * 0.4 - 0.5 = -0.14          A_0 = -0.14 + 0.45 * 0.41 = 0.0445
    # Row 1 ends after 2 tokens (reward 1 on token 1); the padded third position is ignored:
    #   delta_1 = 1 - 0.6 = 0.4                    A_1 = 0.4
    #   delta_0 = 0.9 * 0.6 - 0.2 = 0.34           A_0 = 0.34 + 0.45 * 0.4 = 0.52
    rewards = t([0, 0, 1], [0, 1, 0])
    values = t([0.5, 0.4, 0.8], [0.2, 0.6, 9.0])
    mask = t([1, 1, 1], [1, 1, 0])
    adv, ret = O.gae(rewards, values, mask, gamma=0.9, lam=0.5)
    close(adv, [[0.0445, 0.41, 0.2], [0.52, 0.4, 0.0]])
    close(ret, [[0.5445, 0.81, 1.0], [0.72, 1.0, 0.0]])


# ---- baselines and advantages ----

def test_rloo_leave_one_out_baseline():
    # group [1, 0, 0, 1]: baseline_i = (2 - r_i) / 3 = [1/3, 2/3, 2/3, 1/3]
    r = t([1, 0, 0, 1], [1, 1, 1, 1])
    close(O.rloo_baseline(r), [[1 / 3, 2 / 3, 2 / 3, 1 / 3], [1, 1, 1, 1]])
    close(O.rloo_advantages(r), [[2 / 3, -2 / 3, -2 / 3, 2 / 3], [0, 0, 0, 0]])


def test_group_advantages():
    # [1, 0, 0, 1]: mean 0.5; Bessel std = sqrt(4 * 0.25 / 3) = 0.577350; (+-0.5) / 0.577350 = +-0.866025
    r = t([1, 0, 0, 1])
    close(O.group_advantages(r, "group"), [[0.866025, -0.866025, -0.866025, 0.866025]], tol=1e-4)
    close(O.group_advantages(r, "none"), [[0.5, -0.5, -0.5, 0.5]])


def test_outcome_token_rewards_put_the_score_on_the_last_token_and_kl_on_every_token():
    # scores [1, 0], lengths 2 and 3, kl 0.2 / 0.4 / 0.2 / 0 / 0.4, coef 0.5
    mask = t([1, 1, 0], [1, 1, 1])
    kl = t([0.2, 0.4, 7.0], [0.2, 0.0, 0.4])
    r = O.outcome_token_rewards(t(1, 0), mask, kl, 0.5)
    close(r, [[-0.1, 1 - 0.2, 0], [-0.1, 0, -0.2]])


def test_reinforce_pp_whitens_returns_over_the_batch_tokens():
    # No KL: token rewards row0 [0, 1, pad], row1 [0, 0, 0]; returns row0 [1, 1], row1 [0, 0, 0]
    # valid returns [1, 1, 0, 0, 0]: mean 0.4; Bessel var = (2 * 0.36 + 3 * 0.16) / 4 = 0.3;
    # std 0.547723; (1 - 0.4)/std = 1.095445, (0 - 0.4)/std = -0.730297
    mask = t([1, 1, 0], [1, 1, 1])
    adv = O.reinforce_pp_advantages(t(1, 0), mask)
    close(adv, [[1.095445, 1.095445, 0], [-0.730297, -0.730297, -0.730297]], tol=1e-4)


def test_reinforce_pp_with_kl_in_the_reward():
    # Token rewards (previous test's kl, coef 0.5): row0 [-0.1, 0.8], row1 [-0.1, 0, -0.2]
    # returns (reverse cumsum): row0 [0.7, 0.8], row1 [-0.3, -0.2, -0.2]
    # mean = 0.8 / 5 = 0.16; deviations 0.54 0.64 -0.46 -0.36 -0.36; squares sum 1.172;
    # Bessel var 0.293; std 0.541295
    mask = t([1, 1, 0], [1, 1, 1])
    kl = t([0.2, 0.4, 7.0], [0.2, 0.0, 0.4])
    adv = O.reinforce_pp_advantages(t(1, 0), mask, kl, 0.5)
    std = 0.541295
    close(adv, [[0.54 / std, 0.64 / std, 0], [-0.46 / std, -0.36 / std, -0.36 / std]], tol=1e-4)


def test_reinforce_pp_baseline_subtracts_the_group_mean_first():
    # groups of 2: [1, 0] -> mean 0.5 -> [0.5, -0.5]; [1, 1] -> [0, 0]
    # one token each: valid [0.5, -0.5, 0, 0]: mean 0, Bessel var 0.5 / 3, std 0.408248
    # -> [1.224745, -1.224745, 0, 0]
    mask = t([1], [1], [1], [1])
    adv = O.reinforce_pp_advantages(t(1, 0, 1, 1), mask, group_size=2)
    close(adv, [[1.224745], [-1.224745], [0], [0]], tol=1e-4)


def test_reinforce_pp_all_reduce_hook_sees_the_sums():
    # A fake all-reduce that doubles every sum stands for two identical processes: mean and std of
    # two copies of a batch equal one copy's mean, and the Bessel std moves from n-1 to 2n-1.
    mask = t([1, 1, 0], [1, 1, 1])
    adv = O.reinforce_pp_advantages(t(1, 0), mask, all_reduce=lambda x: 2 * x)
    # 10 tokens: var = (4 * 0.36 + 6 * 0.16) / 9 = 0.266667; std 0.516398
    close(adv[0, 0], 0.6 / 0.516398, tol=1e-4)


def test_remax_baseline_is_the_greedy_reward():
    # scores [1, 0, 1], greedy rollout of the same prompt scored [0, 0, 1]
    # -> advantages [1, 0, 0] on every valid token
    mask = t([1, 1], [1, 0], [1, 1])
    adv = O.remax_advantages(t(1, 0, 1), t(0, 0, 1), mask)
    close(adv, [[1, 1], [0, 0], [0, 0]])


def test_discounted_returns():
    # rewards [1, 2, 3], gamma 0.5: G_2 = 3, G_1 = 2 + 1.5 = 3.5, G_0 = 1 + 1.75 = 2.75
    close(O.discounted_returns(t([1, 2, 3]), t([1, 1, 1]), 0.5), [[2.75, 3.5, 3]])


# ---- PPO losses ----

def _policy_case():
    # tokens: (ratio, A) = row0 (1.5, +1), (0.5, +1); row1 (0.5, -1), (1.1, -2), (1.0, 0.9)
    ratio = t([1.5, 0.5, 1.0], [0.5, 1.1, 1.0])
    adv = t([1, 1, 0], [-1, -2, 0.9])
    mask = t([1, 1, 0], [1, 1, 1])
    old = torch.zeros_like(ratio)
    return ratio.log(), old, adv, mask


def test_ppo_policy_loss_token_and_seq():
    # eps 0.2, per token max(-A r, -A clip(r, 0.8, 1.2)):
    #   (1.5, +1): max(-1.5, -1.2) = -1.2 clipped     (0.5, +1): max(-0.5, -0.8) = -0.5
    #   (0.5, -1): max( 0.5,  0.8) =  0.8 clipped     (1.1, -2): max( 2.2,  2.2) =  2.2
    #   (1.0, .9): -0.9
    # token: (-1.2 - 0.5 + 0.8 + 2.2 - 0.9) / 5 = 0.08;  clip fraction 2 / 5
    # seq: row0 (-1.2 - 0.5) / 2 = -0.85, row1 (0.8 + 2.2 - 0.9) / 3 = 0.7 -> mean -0.075
    logp, old, adv, mask = _policy_case()
    loss, frac = O.ppo_policy_loss(logp, old, adv, mask, 0.2, 0.2, "token")
    close(loss, 0.08)
    close(frac, 0.4)
    loss, _ = O.ppo_policy_loss(logp, old, adv, mask, 0.2, 0.2, "seq")
    close(loss, -0.075)


def test_ppo_policy_loss_clip_higher():
    # eps_high 0.28: the (1.5, +1) token is now clipped at 1.28 -> -1.28
    # token: (-1.28 - 0.5 + 0.8 + 2.2 - 0.9) / 5 = 0.064
    logp, old, adv, mask = _policy_case()
    loss, _ = O.ppo_policy_loss(logp, old, adv, mask, 0.2, 0.28, "token")
    close(loss, 0.064)


def test_micro_batch_losses_with_a_shared_denominator_add_up_to_the_batch_loss():
    logp, old, adv, mask = _policy_case()
    full, _ = O.ppo_policy_loss(logp, old, adv, mask, 0.2, 0.2, "token")
    parts = [O.ppo_policy_loss(logp[i:i + 1], old[i:i + 1], adv[i:i + 1], mask[i:i + 1], 0.2, 0.2, "token",
                               denom=mask.sum())[0] for i in range(2)]
    close(sum(parts), full)
    full, _ = O.ppo_policy_loss(logp, old, adv, mask, 0.2, 0.2, "seq")
    parts = [O.ppo_policy_loss(logp[i:i + 1], old[i:i + 1], adv[i:i + 1], mask[i:i + 1], 0.2, 0.2, "seq",
                               denom=2)[0] for i in range(2)]
    close(sum(parts), full)


def test_ppo_policy_gradient_is_reinforce_at_ratio_one():
    # On-policy (old = current), d/dlogp of the loss is -A / (number of tokens).
    logp = torch.zeros(1, 2, requires_grad=True)
    loss, frac = O.ppo_policy_loss(logp, logp.detach(), t([2.0, -1.0]), t([1, 1]), 0.2, 0.2)
    loss.backward()
    close(logp.grad, [[-1.0, 0.5]])
    close(frac, 0.0)


def test_clipped_value_loss():
    # clip 0.2:
    #   V_old 0.5, V 1.0, R 1.0: (1.0 - 1)^2 = 0;  V_clip 0.7: (0.7 - 1)^2 = 0.09 -> 0.09 (clipped)
    #   V_old 0.5, V 0.6, R 0.0: 0.36; V_clip 0.6: 0.36                          -> 0.36
    #   V_old 0.0, V -0.5, R 0.3: 0.64; V_clip -0.2: 0.25                        -> 0.64
    # loss = 0.5 * (0.09 + 0.36 + 0.64) / 3 = 0.181667; clip fraction 1 / 3
    loss, frac = O.clipped_value_loss(t([1.0, 0.6, -0.5]), t([0.5, 0.5, 0.0]), t([1.0, 0.0, 0.3]),
                                      t([1, 1, 1]), 0.2)
    close(loss, 0.181667)
    close(frac, 1 / 3)


def test_explained_variance():
    # R [1, 2, 3, 4], V [1, 2, 3, 3]: residual [0, 0, 0, 1]: var 0.25 (Bessel: 0.75 / 3);
    # var(R) = 5 / 3 -> 1 - 0.25 / (5/3) = 0.85. A padded position does not count.
    ev = O.explained_variance(t([1, 2, 3, 3, 100]), t([1, 2, 3, 4, -100]), t([1, 1, 1, 1, 0]))
    close(ev, 0.85)


# ---- DAPO ----

def test_dynamic_sampling_keeps_groups_whose_rewards_differ():
    r = t([1, 1, 1], [0, 1, 0], [0, 0, 0], [0.5, 0.5, 0.25])
    assert O.dynamic_sampling_keep(r).tolist() == [False, True, False, True]


def test_overlong_penalty():
    # L_max 20, buffer 4, penalty 1: free up to 16; 17 -> -1/4, 18 -> -2/4, 20 -> -1, capped at -1
    lengths = torch.tensor([10, 16, 17, 18, 20, 22])
    close(O.overlong_penalty(lengths, 20, 4, 1.0), [0, 0, -0.25, -0.5, -1.0, -1.0])
    close(O.overlong_penalty(lengths, 20, 4, 0.5), [0, 0, -0.125, -0.25, -0.5, -0.5])
    close(O.overlong_penalty(lengths, 20, 0, 1.0), [0] * 6)


# ---- helpers ----

def test_entropy_from_logits():
    # uniform over 2: ln 2; p = [1/4, 3/4]: -(0.25 ln 0.25 + 0.75 ln 0.75) = 0.562335
    logits = torch.tensor([[0.0, 0.0], [0.0, math.log(3.0)]])
    close(O.entropy_from_logits(logits), [0.693147, 0.562335])


def test_completion_mask_stops_after_the_first_eos():
    eos = 1
    ids = torch.tensor([[5, 6, 1, 1, 1], [5, 1, 0, 0, 0], [5, 6, 7, 8, 9]])
    close(O.completion_mask(ids, eos), [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]])


def test_token_logprobs():
    logits = torch.tensor([[[0.0, math.log(3.0)]]])
    close(O.token_logprobs(logits, torch.tensor([[1]])), [[math.log(0.75)]])


def test_masked_whiten_keeps_padding_zero():
    x, mask = t([1, 2, 3, 100]), t([1, 1, 1, 0])
    # mean 2, Bessel std 1 -> [-1, 0, 1, 0]
    close(O.masked_whiten(x, mask), [[-1, 0, 1, 0]])


# ---- remedies (issue 14) ----

def test_passk_advantage_matches_the_papers_formulas_by_hand():
    # N = 4, k = 2, one correct: R = 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5, std = sqrt(0.25) = 0.5.
    # correct: (1 - 0.5)/0.5 = 1; wrong: (1 - 0.5 - C(2,1)/C(3,1))/0.5 = (0.5 - 2/3)/0.5 = -1/3.
    correct = torch.tensor([[True, False, False, False]])
    close(O.passk_advantages(correct, 2), t([1.0, -1 / 3, -1 / 3, -1 / 3]))
    # N = 4, k = 2, two correct: R = 1 - C(2,2)/6 = 5/6, std = sqrt(5/36) = sqrt(5)/6.
    # correct: (1/6)/(sqrt5/6) = 1/sqrt5; wrong: (1/6 - C(1,1)/C(3,1))/(sqrt5/6) = (1/6 - 1/3)*6/sqrt5 = -1/sqrt5.
    r5 = 1 / math.sqrt(5)
    close(O.passk_advantages(torch.tensor([[True, True, False, False]]), 2), t([r5, r5, -r5, -r5]))
    # N = 4, k = 3, one correct: R = 1 - C(3,3)/C(4,3) = 3/4, std = sqrt(3)/4.
    # correct: (1/4)/(sqrt3/4) = 1/sqrt3; wrong: (1/4 - C(2,2)/C(3,2))/(sqrt3/4) = (1/4 - 1/3)*4/sqrt3 = -1/(3 sqrt3).
    r3 = 1 / math.sqrt(3)
    close(O.passk_advantages(torch.tensor([[False, True, False, False]]), 3), t([-r3 / 3, r3, -r3 / 3, -r3 / 3]))


def test_passk_advantage_sums_to_zero_and_is_zero_without_a_spread():
    g = torch.tensor([[True, False, False, False, False, False, False, False],
                      [True, True, True, False, False, False, False, False]])
    adv = O.passk_advantages(g, 4)
    close(adv.sum(-1), t(0.0, 0.0), tol=1e-5)
    assert (adv[g] > 0).all() and (adv[~g] < 0).all()
    # All wrong, all right, or too few wrong samples to fill a k-subset (R = 1): no signal.
    flat = torch.tensor([[False] * 4, [True] * 4, [True, True, True, False]])
    assert torch.equal(O.passk_advantages(flat, 2), torch.zeros(3, 4))
    # k = N: every group that solves the problem at all has pass@N = 1, so no group has a spread.
    assert torch.equal(O.passk_advantages(torch.tensor([[True, False, False, False]]), 4), torch.zeros(1, 4))


def test_passk_advantage_at_k1_is_grpos_with_the_population_std():
    g = torch.tensor([[True, False, False, True, False]])
    r = g.float()
    close(O.passk_advantages(g, 1), (r - r.mean()) / r.std(unbiased=False))
    with pytest.raises(ValueError, match="1 <= k <= the group size"):
        O.passk_advantages(g, 6)


def test_weighted_reinforce_gives_lambda_and_minus_one():
    c = torch.tensor([True, False, True, False])
    close(O.weighted_reinforce_advantages(c, 0.1), t([0.1, -1.0, 0.1, -1.0]))
    close(O.weighted_reinforce_advantages(c, 0.0), t([0.0, -1.0, 0.0, -1.0]))  # pure NSR
    with pytest.raises(ValueError, match=">= 0"):
        O.weighted_reinforce_advantages(c, -0.1)


def test_unlikeliness_ranks_count_from_the_least_likely():
    lp = t([-0.5, -2.0, -1.0, -3.0], [-1.0, -1.0, -0.1, -9.0])
    # Ties keep their order (stable): the first -1.0 ranks below the second.
    assert O.unlikeliness_ranks(lp).tolist() == [[3, 1, 2, 0], [1, 2, 3, 0]]


def test_unlikeliness_reward_by_hand():
    # G = 4, beta = 0.5: r * (1 - 0.5 * rank / 4); the most likely correct sample (rank 3) keeps
    # 1 - 0.375 = 0.625, rank 2 keeps 0.75, the least likely (rank 0) all of it; wrong stays 0.
    r = t([1.0, 0.0, 1.0, 1.0])
    lp = t([-0.5, -2.0, -1.0, -3.0])
    close(O.unlikeliness_rewards(r, lp, 0.5), t([0.625, 0.0, 0.75, 1.0]))
    # The paper's form, 1 - beta * (G - rank') / G with rank' = 1 for the most likely: same numbers.
    rank_from_top = t([1, 3, 2, 4])
    close(O.unlikeliness_rewards(r, lp, 0.5), r * (1 - 0.5 * (4 - rank_from_top) / 4))
    close(O.unlikeliness_rewards(r, lp, 0.0), r)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        O.unlikeliness_rewards(r, lp, 1.5)


def test_unlikeliness_reward_keeps_a_correct_sample_above_a_wrong_one_at_beta_1():
    r = t([1.0, 1.0, 0.0])
    out = O.unlikeliness_rewards(r, t([-0.1, -0.2, -5.0]), 1.0)
    close(out, t([1 / 3, 2 / 3, 0.0]))
    assert out[0, :2].min() > out[0, 2]


def test_entropy_bonus_by_hand():
    # Entropies [[ln 2, 0, x], [ln 4, ln 4, x]] with the third column padding: token mean over
    # 4 valid tokens = (ln 2 + 2 ln 4) / 4 = 5 ln 2 / 4; seq mean = (ln 2 / 2 + ln 4) / 2 = 5 ln 2 / 4 too,
    # so a third row tells them apart below.
    import math

    ent = t([math.log(2), 0.0, 7.0], [math.log(4), math.log(4), 7.0])
    mask = t([1, 1, 0], [1, 1, 0])
    close(O.entropy_bonus(ent, mask, 0.1, "token"), t(-0.1 * 5 * math.log(2) / 4))
    ent3 = t([math.log(2), 0.0, 0.0], [1.0, 1.0, 1.0])
    mask3 = t([1, 0, 0], [1, 1, 1])
    close(O.entropy_bonus(ent3, mask3, 0.5, "token"), t(-0.5 * (math.log(2) + 3) / 4))
    close(O.entropy_bonus(ent3, mask3, 0.5, "seq"), t(-0.5 * (math.log(2) + 1) / 2))
    # A micro-batch's share of a larger batch: divided by the batch's count.
    close(O.entropy_bonus(ent3, mask3, 0.5, "token", denom=8), t(-0.5 * (math.log(2) + 3) / 8))
