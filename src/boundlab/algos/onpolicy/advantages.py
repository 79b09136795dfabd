"""Advantage estimators by name: the one thing that tells the on-policy algorithms apart (in the
spirit of verl's `register_adv_est`). The math is in `boundlab.algos.objectives`."""

from __future__ import annotations

from typing import Any, Callable, Optional

from torch import Tensor

from boundlab.algos import objectives as O
from boundlab.algos.onpolicy.rollouts import Rollouts
from boundlab.algos.onpolicy.settings import OnPolicySettings
from boundlab.registry import Registry

ADV_ESTIMATORS: Registry = Registry("advantage estimator")
Estimator = Callable[[Rollouts, OnPolicySettings, Optional[Tensor], Any], tuple[Tensor, Optional[Tensor]]]


@ADV_ESTIMATORS.register("gae")
def _adv_gae(b: Rollouts, s: OnPolicySettings, kl: Optional[Tensor], all_reduce: Any):
    mask = b.completion_mask
    rewards = O.outcome_token_rewards(b.scores, mask, kl, s.kl_coef)
    adv, returns = O.gae(rewards, b.old_values, mask, s.gamma, s.lam)
    return O.masked_whiten(adv, mask, all_reduce), returns


@ADV_ESTIMATORS.register("reinforce_pp")
def _adv_reinforce_pp(b: Rollouts, s: OnPolicySettings, kl: Optional[Tensor], all_reduce: Any):
    return O.reinforce_pp_advantages(b.scores, b.completion_mask, kl, s.kl_coef, None, all_reduce), None


@ADV_ESTIMATORS.register("reinforce_pp_baseline")
def _adv_reinforce_pp_baseline(b: Rollouts, s: OnPolicySettings, kl: Optional[Tensor], all_reduce: Any):
    return O.reinforce_pp_advantages(b.scores, b.completion_mask, kl, s.kl_coef, s.rollouts, all_reduce), None


@ADV_ESTIMATORS.register("remax")
def _adv_remax(b: Rollouts, s: OnPolicySettings, kl: Optional[Tensor], all_reduce: Any):
    return O.remax_advantages(b.scores, b.greedy_scores, b.completion_mask, kl, s.kl_coef), None


@ADV_ESTIMATORS.register("group")
def _adv_group(b: Rollouts, s: OnPolicySettings, kl: Optional[Tensor], all_reduce: Any):
    # kl is always None here: settings_from_cfg refuses KL in the reward for group advantages.
    adv = O.group_advantages(b.scores.view(-1, s.rollouts), s.scale_rewards).view(-1)
    return adv.unsqueeze(1) * b.completion_mask, None



# Both remedies read binary outcomes: a score above 0.5 is a correct sample (the verifiers' rewards
# are 0 or 1; settings_from_cfg documents this).
@ADV_ESTIMATORS.register("passk")
def _adv_passk(b: Rollouts, s: OnPolicySettings, kl: Optional[Tensor], all_reduce: Any):
    adv = O.passk_advantages(b.scores.view(-1, s.rollouts) > 0.5, s.passk_k).view(-1)
    return adv.to(b.completion_mask.dtype).unsqueeze(1) * b.completion_mask, None


@ADV_ESTIMATORS.register("pkpo")
def _adv_pkpo(b: Rollouts, s: OnPolicySettings, kl: Optional[Tensor], all_reduce: Any):
    # s.passk_k is this step's k (the trainer anneals it: OnPolicySettings.at_step).
    adv = O.pkpo_advantages(b.scores.view(-1, s.rollouts) > 0.5, s.passk_k).view(-1)
    return adv.to(b.completion_mask.dtype).unsqueeze(1) * b.completion_mask, None


@ADV_ESTIMATORS.register("weighted_reinforce")
def _adv_weighted_reinforce(b: Rollouts, s: OnPolicySettings, kl: Optional[Tensor], all_reduce: Any):
    adv = O.weighted_reinforce_advantages(b.scores > 0.5, s.positive_weight)
    return adv.to(b.completion_mask.dtype).unsqueeze(1) * b.completion_mask, None
