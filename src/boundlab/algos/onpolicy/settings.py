"""Which on-policy algorithm needs what (`RECIPES`), and the trainer's settings read once from the
config (`algo.*` shared knobs, the `algo.onpolicy` block, `kl.*`) by `settings_from_cfg`, which is
also the algorithms' start-up check: every combination the trainer cannot honour is refused here."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Optional

from boundlab.algos import objectives as O
from boundlab.algos.rollout import check_rollout, uses_vllm, vllm_generation_args
from boundlab.config import ConfigError

if TYPE_CHECKING:
    from boundlab.config import TrainMain


@dataclass(frozen=True)
class Recipe:
    # Key in ADV_ESTIMATORS.
    estimator: str
    # A learned value model (PPO).
    critic: bool = False
    # One extra greedy rollout per prompt, scored, as the baseline (ReMax).
    greedy_baseline: bool = False
    # The advantage uses the other samples of the same prompt, so rollouts >= 2.
    needs_groups: bool = False
    # Where KL goes when kl.where=auto.
    kl_where: str = "reward"


RECIPES: dict[str, Recipe] = {
    "ppo": Recipe("gae", critic=True),
    "reinforce_pp": Recipe("reinforce_pp"),
    "reinforce_pp_baseline": Recipe("reinforce_pp_baseline", needs_groups=True),
    "remax": Recipe("remax", greedy_baseline=True),
    "dapo": Recipe("group", needs_groups=True, kl_where="loss"),
    # GRPO on this trainer (issue 40): the same estimator as dapo, its conf with DAPO's extras off, so
    # a remedy that runs here is compared with GRPO on the same trainer, not across trainers.
    "grpo_onpolicy": Recipe("group", needs_groups=True, kl_where="loss"),
    # Remedies (issue 14): one advantage per sequence, so KL goes in the loss.
    "passk_grpo": Recipe("passk", needs_groups=True, kl_where="loss"),
    # PKPO (issue 39): the unbiased pass@k gradient with a leave-one-out baseline; k may anneal.
    "pkpo": Recipe("pkpo", needs_groups=True, kl_where="loss"),
    "weighted_reinforce": Recipe("weighted_reinforce", kl_where="loss"),
    # Weighted-REINFORCE at positive_weight 0: pure negative-sample reinforcement, named so its runs
    # are told apart from weighted_reinforce's in reports.
    "nsr": Recipe("weighted_reinforce", kl_where="loss"),
}
# Estimators that read the score's value (not a 0/1 verdict) group by group: the ones the
# unlikeliness reward can shape (passk and weighted_reinforce threshold scores at 0.5, so a shaped
# correct sample could be read as wrong).
_SHAPEABLE = ("group", "reinforce_pp_baseline")
# Estimators with one advantage per sequence: a per-token KL reward has no place in them.
_SEQUENCE_LEVEL = ("group", "passk", "pkpo", "weighted_reinforce")


@dataclass(frozen=True)
class OnPolicySettings:
    """Everything the trainer reads from the config, checked once at build time (`settings_from_cfg`)."""
    algo: str
    estimator: str
    rollouts: int
    max_completion_length: int
    temperature: float
    num_iterations: int
    epsilon_low: float
    epsilon_high: float
    loss_agg: str
    scale_rewards: str
    kl_coef: float
    kl_where: str
    kl_estimator: str
    gamma: float
    lam: float
    critic: bool
    vf_coef: float
    cliprange_value: float
    critic_lr: Optional[float]
    greedy_baseline: bool
    dynamic_sampling: bool
    max_refill_rounds: int
    overlong_buffer: int
    overlong_penalty: float
    passk_k: int = 1
    # pkpo: k at the last step (None: k stays passk_k); see at_step.
    passk_k_final: Optional[int] = None
    positive_weight: float = 0.1
    entropy_coef: float = 0.0
    unlikeliness: float = 0.0
    # rollout=vllm_*: TRL VLLMGeneration's arguments (boundlab.algos.rollout); None = generate.
    vllm: Optional[dict] = None
    # train.generation_chunk: most completions per generate call (None = a micro-step's at once).
    generation_chunk: Optional[int] = None


    def at_step(self, step: int, max_steps: int) -> "OnPolicySettings":
        """The settings for optimizer step `step` of `max_steps`: pkpo's k annealed linearly from
        passk_k to passk_k_final (a pure function of the step, so a resumed run anneals exactly as an
        uninterrupted one)."""
        if self.estimator != "pkpo" or self.passk_k_final is None:
            return self
        return replace(self, passk_k=O.annealed_k(self.passk_k, self.passk_k_final, step, max_steps))


# TRL's loss_type names, mapped to the two aggregations this trainer implements.
_LOSS_AGG = {"dapo": "token", "bnpo": "token", "grpo": "seq"}


def settings_from_cfg(name: str, cfg: TrainMain) -> OnPolicySettings:
    """The trainer's settings for algo `name`; a combination it cannot honour raises ConfigError
    (a ValueError)."""
    recipe = RECIPES[name]
    a, o, kl = cfg.algo, cfg.algo.onpolicy, cfg.kl

    def bad(msg: str):
        # ConfigError is a ValueError that train.py prints as one line, without a traceback.
        raise ConfigError(f"algo={name}: {msg}")

    if a.rollouts < 1 or a.per_device_train_batch_size % a.rollouts:
        bad(f"algo.per_device_train_batch_size ({a.per_device_train_batch_size}) must be a multiple of "
            f"algo.rollouts ({a.rollouts})")
    if recipe.needs_groups and a.rollouts < 2:
        bad("its baseline comes from the other samples of the same prompt, so algo.rollouts must be >= 2")
    if o.dynamic_sampling and a.rollouts < 2:
        bad("algo.onpolicy.dynamic_sampling drops prompts whose samples all score alike, so algo.rollouts must "
            "be >= 2")
    if o.num_iterations < 1:
        bad("algo.onpolicy.num_iterations must be >= 1")
    if a.temperature <= 0:
        bad("algo.temperature must be > 0 (rollouts are sampled; log-probs are of logits / temperature)")
    if o.loss_type not in _LOSS_AGG:
        bad(f"algo.onpolicy.loss_type={o.loss_type} is not available here: use dapo (token-level mean) or grpo "
            f"(per-sequence mean, then over sequences)")
    if recipe.estimator == "group":
        if o.scale_rewards not in ("group", "batch", "none"):
            bad(f"algo.onpolicy.scale_rewards must be group, batch or none, not {o.scale_rewards!r}")
    elif o.scale_rewards != "none":
        bad(f"algo.onpolicy.scale_rewards={o.scale_rewards} applies to group-normalised advantages (grpo, dapo); "
            f"this algorithm normalises its own way, so set algo.onpolicy.scale_rewards=none")
    if recipe.estimator != "gae" and o.gamma != 1.0:
        bad("only ppo discounts (GAE); the REINFORCE-style returns here are undiscounted, so "
            "algo.onpolicy.gamma must be 1")
    if not recipe.critic and o.critic.model:
        bad("has no critic, so algo.onpolicy.critic.model would be unused")
    if not 0 <= o.overlong_buffer < a.max_completion_length:
        bad(f"algo.onpolicy.overlong_buffer ({o.overlong_buffer}) must be in [0, algo.max_completion_length)")
    if recipe.estimator == "passk" and not 1 <= o.passk_k < a.rollouts:
        bad(f"algo.onpolicy.passk_k ({o.passk_k}) must be in [1, algo.rollouts ({a.rollouts})): the reward is "
            f"the pass@k of each prompt's rollouts, and at k = rollouts every sample of a group gets the same "
            f"advantage (0), so nothing would be learned")
    if recipe.estimator == "pkpo":
        for what, k in (("passk_k", o.passk_k), ("passk_k_final", o.passk_k_final)):
            if k is not None and not 1 <= k < a.rollouts:
                bad(f"algo.onpolicy.{what} ({k}) must be in [1, algo.rollouts ({a.rollouts})): PKPO's baseline "
                    f"is the pass@k of the other algo.rollouts - 1 samples of the prompt")
    elif o.passk_k_final is not None:
        bad("algo.onpolicy.passk_k_final anneals PKPO's k; use it with algo=pkpo")
    if recipe.estimator == "weighted_reinforce" and o.positive_weight < 0:
        bad(f"algo.onpolicy.positive_weight must be >= 0 (0 is pure negative-sample reinforcement), not "
            f"{o.positive_weight}")
    if name == "nsr" and o.positive_weight != 0:
        bad(f"is weighted_reinforce with algo.onpolicy.positive_weight=0 (got {o.positive_weight}); for "
            f"another weight use algo=weighted_reinforce")
    beta = float(a.shaping.unlikeliness)
    if beta and recipe.estimator not in _SHAPEABLE:
        bad(f"algo.shaping.unlikeliness={beta} needs a group algorithm that reads reward values (dapo, "
            f"reinforce_pp_baseline here; grpo, dr_grpo, rloo on TRL): this one "
            + ("reads 0/1 verdicts (a score above 0.5), which a shaped reward could flip"
               if recipe.estimator in ("passk", "pkpo", "weighted_reinforce") else "has no groups to rank in"))
    check_rollout(name, cfg, greedy_baseline=recipe.greedy_baseline)
    eps_high = o.epsilon if o.epsilon_high is None else o.epsilon_high
    if o.epsilon <= 0 or eps_high <= 0:
        bad("algo.onpolicy.epsilon and algo.onpolicy.epsilon_high must be > 0")
    if name == "grpo_onpolicy" and (o.dynamic_sampling or o.overlong_buffer or eps_high != o.epsilon):
        bad("is GRPO on this trainer: dynamic sampling, overlong shaping and clip-higher "
            "(epsilon_high != epsilon) are DAPO's; for them use algo=dapo")

    where, estimator = "none", kl.estimator
    if kl.coef < 0:
        bad("kl.coef must be >= 0")
    if kl.where not in ("auto", "none", "loss", "reward"):
        bad(f"kl.where must be auto, none, loss or reward, not {kl.where!r}")
    if kl.coef > 0:
        if kl.where == "none":
            bad("kl.coef > 0 with kl.where=none; set kl.coef=0 to train without KL")
        where = recipe.kl_where if kl.where == "auto" else kl.where
        if where == "reward" and recipe.estimator in _SEQUENCE_LEVEL:
            bad("group-normalised advantages are one number per sequence, so a per-token KL reward has no "
                "place in them; use kl.where=loss")
        if estimator == "auto":
            estimator = "k1" if where == "reward" else "k3"
        if estimator not in O.KL_ESTIMATORS:
            bad(f"kl.estimator must be auto, k1, k2 or k3, not {estimator!r}")
        if where == "loss" and estimator == "k1":
            bad("k1 in the loss has zero expected gradient, so it would not regularise; use "
                "kl.estimator=k2 or k3")
    elif estimator == "auto":
        estimator = "k1"

    return OnPolicySettings(
        algo=name, estimator=recipe.estimator, rollouts=a.rollouts,
        max_completion_length=a.max_completion_length, temperature=a.temperature,
        num_iterations=o.num_iterations, epsilon_low=o.epsilon, epsilon_high=eps_high,
        loss_agg=_LOSS_AGG[o.loss_type], scale_rewards=o.scale_rewards,
        kl_coef=float(kl.coef), kl_where=where, kl_estimator=estimator,
        gamma=o.gamma, lam=o.lam, critic=recipe.critic, vf_coef=o.vf_coef,
        cliprange_value=o.cliprange_value, critic_lr=o.critic.learning_rate,
        greedy_baseline=recipe.greedy_baseline, dynamic_sampling=bool(o.dynamic_sampling),
        max_refill_rounds=int(o.max_refill_rounds),
        overlong_buffer=o.overlong_buffer, overlong_penalty=o.overlong_penalty,
        passk_k=int(o.passk_k),
        passk_k_final=None if o.passk_k_final is None else int(o.passk_k_final), positive_weight=float(o.positive_weight),
        entropy_coef=float(a.entropy_coef), unlikeliness=beta,
        vllm=vllm_generation_args(cfg) if uses_vllm(cfg.rollout) else None,
        generation_chunk=_generation_chunk(cfg.train.generation_chunk),
    )


def _generation_chunk(chunk: Optional[int]) -> Optional[int]:
    if chunk is not None and int(chunk) < 1:
        raise ConfigError(f"train.generation_chunk={chunk}: must be >= 1 (completions per generate call), "
                          f"or null for no chunking")
    return None if chunk is None else int(chunk)
