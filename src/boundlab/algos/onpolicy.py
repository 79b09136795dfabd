"""On-policy RL that TRL 1.16 lacks: PPO, REINFORCE++, REINFORCE++-baseline, ReMax and DAPO.

One `transformers.Trainer` subclass, `OnPolicyTrainer`, serves all five. The algorithms differ only in
how advantages are estimated, so an advantage-estimator registry (`ADV_ESTIMATORS`, in the spirit of
verl's `register_adv_est`) picks the algorithm; `RECIPES` says what else each one needs (a critic, a
greedy baseline rollout, where KL goes by default). All math lives in `objectives.py`.

HF Trainer keeps its own loop: optimizer, scheduler, gradient accumulation, clipping, checkpoints,
callbacks (so ProbeCallback probes every checkpoint), logging, accelerate/DeepSpeed. We override:
- `get_train_dataloader`: each batch is a *round* of prompts (this process's share), repeated once
  per micro-step of the round, so HF's step and epoch accounting stay exact;
- `training_step`: at the first micro-step of a round, generate every rollout of the round, score it
  and compute advantages, and buffer it; each micro-step then trains on one slice of the buffer;
- `compute_loss`: the clipped policy loss (+ KL in the loss, + PPO's clipped value loss);
- `save_model`/`train`: PPO's critic is saved in `checkpoint-N/critic/` and restored on resume,
  while the policy stays at the checkpoint root, loadable by `AutoModelForCausalLM.from_pretrained`;
- `create_optimizer` (critic learning rate) and `log` (our metrics merged into HF's log rows).

A round is `per_device_train_batch_size * gradient_accumulation_steps` completions per process
(`per_device_train_batch_size / rollouts` prompts per micro-step), used for `num_iterations` optimizer
steps (PPO epochs), one per pass over the round: the minibatch is the whole round. Losses are
normalised by the round's token (or sequence) count, so accumulated micro-batch gradients equal the
round's loss exactly (`loss_is_scaled_for_ga`).

Departures from the papers, and why:
- PPO's critic is a copy of the policy's backbone with a zero-initialised scalar head (a fresh head
  predicting 0 everywhere is a sane prior for 0/1 rewards), or a separate value model
  (`algo.critic.model`). Policy and critic are one module (`PolicyWithCritic`) with one optimizer, so
  accelerate/DeepSpeed prepare a single engine; their gradients are clipped together.
- Advantages of PPO are whitened over the batch's valid tokens (as in verl and OpenRLHF).
- All log-probabilities are of logits divided by the sampling temperature, the distribution the
  rollouts came from.
- Dropout is switched off in the policy and critic, so rollout-time and training-time
  log-probabilities agree (ratio 1 on the first PPO epoch).
- DAPO's dynamic sampling filters on the summed reward-function score *before* overlong shaping
  (the paper's accuracy filter), refills with fresh prompts for at most `max_refill_rounds` rounds,
  then trains on the groups it has (fewer than the batch, never padded with zero-advantage groups).
- ReMax's greedy rollout is scored with the same overlong shaping as the samples it baselines.
- A run resumed from a checkpoint starts a fresh round: rollouts buffered before the kill are not
  in checkpoints.
"""

from __future__ import annotations

import copy
import os
from collections import defaultdict
from dataclasses import dataclass, fields
from typing import Any, Callable, Iterator, Optional

import torch
from torch import Tensor, nn
from transformers import GenerationConfig, Trainer, TrainingArguments

from boundlab.algos import ALGOS
from boundlab.algos import objectives as O
from boundlab.algos.grpo import training_args_common
from boundlab.config import ConfigError
from boundlab.registry import Registry

CRITIC_DIR = "critic"


# ---- which algorithm needs what ----

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
}


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


# TRL's loss_type names, mapped to the two aggregations this trainer implements.
_LOSS_AGG = {"dapo": "token", "bnpo": "token", "grpo": "seq"}


def settings_from_cfg(name: str, cfg: Any) -> OnPolicySettings:
    """The trainer's settings for algo `name`; a combination it cannot honour raises ConfigError
    (a ValueError)."""
    recipe = RECIPES[name]
    a, kl = cfg.algo, cfg.kl

    def bad(msg: str):
        # ConfigError is a ValueError that train.py prints as one line, without a traceback.
        raise ConfigError(f"algo={name}: {msg}")

    if a.rollouts < 1 or a.per_device_train_batch_size % a.rollouts:
        bad(f"algo.per_device_train_batch_size ({a.per_device_train_batch_size}) must be a multiple of "
            f"algo.rollouts ({a.rollouts})")
    if recipe.needs_groups and a.rollouts < 2:
        bad("its baseline comes from the other samples of the same prompt, so algo.rollouts must be >= 2")
    if a.dynamic_sampling and a.rollouts < 2:
        bad("algo.dynamic_sampling drops prompts whose samples all score alike, so algo.rollouts must "
            "be >= 2")
    if a.num_iterations < 1:
        bad("algo.num_iterations must be >= 1")
    if a.temperature <= 0:
        bad("algo.temperature must be > 0 (rollouts are sampled; log-probs are of logits / temperature)")
    if a.loss_type not in _LOSS_AGG:
        bad(f"algo.loss_type={a.loss_type} is not available here: use dapo (token-level mean) or grpo "
            f"(per-sequence mean, then over sequences)")
    if recipe.estimator == "group":
        if a.scale_rewards not in ("group", "batch", "none"):
            bad(f"algo.scale_rewards must be group, batch or none, not {a.scale_rewards!r}")
    elif a.scale_rewards != "none":
        bad(f"algo.scale_rewards={a.scale_rewards} applies to group-normalised advantages (grpo, dapo); "
            f"this algorithm normalises its own way, so set algo.scale_rewards=none")
    if name != "ppo" and a.gamma != 1.0:
        bad("only ppo discounts (GAE); the REINFORCE-style returns here are undiscounted, so algo.gamma "
            "must be 1")
    if not recipe.critic and a.critic.model:
        bad("has no critic, so algo.critic.model would be unused")
    if not 0 <= a.overlong_buffer < a.max_completion_length:
        bad(f"algo.overlong_buffer ({a.overlong_buffer}) must be in [0, algo.max_completion_length)")
    eps_high = a.epsilon if a.epsilon_high is None else a.epsilon_high
    if a.epsilon <= 0 or eps_high <= 0:
        bad("algo.epsilon and algo.epsilon_high must be > 0")

    where, estimator = "none", kl.estimator
    if kl.coef < 0:
        bad("kl.coef must be >= 0")
    if kl.where not in ("auto", "none", "loss", "reward"):
        bad(f"kl.where must be auto, none, loss or reward, not {kl.where!r}")
    if kl.coef > 0:
        if kl.where == "none":
            bad("kl.coef > 0 with kl.where=none; set kl.coef=0 to train without KL")
        where = recipe.kl_where if kl.where == "auto" else kl.where
        if where == "reward" and recipe.estimator == "group":
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
        num_iterations=a.num_iterations, epsilon_low=a.epsilon, epsilon_high=eps_high,
        loss_agg=_LOSS_AGG[a.loss_type], scale_rewards=a.scale_rewards,
        kl_coef=float(kl.coef), kl_where=where, kl_estimator=estimator,
        gamma=a.gamma, lam=a.lam, critic=recipe.critic, vf_coef=a.vf_coef,
        cliprange_value=a.cliprange_value, critic_lr=a.critic.learning_rate,
        greedy_baseline=recipe.greedy_baseline, dynamic_sampling=bool(a.dynamic_sampling),
        # Not in AlgoConfig yet: cap on DAPO refill generations per round.
        max_refill_rounds=int(getattr(a, "max_refill_rounds", 4)),
        overlong_buffer=a.overlong_buffer, overlong_penalty=a.overlong_penalty,
    )


# ---- a round of rollouts ----

@dataclass
class Rollouts:
    """Completions of one round, `rollouts` consecutive rows per prompt."""
    prompt_ids: Tensor                      # [N, Lp], left-padded
    prompt_mask: Tensor                     # [N, Lp]
    completion_ids: Tensor                  # [N, Lc], right-padded
    completion_mask: Tensor                 # [N, Lc] float, through the first EOS
    rewards: Tensor                         # [N] sum of the reward functions (what is logged)
    scores: Tensor                          # [N] rewards + overlong shaping (what is optimised)
    greedy_scores: Optional[Tensor] = None  # [N] ReMax: the score of the prompt's greedy completion
    old_logp: Optional[Tensor] = None       # [N, Lc] behaviour policy, when needed
    ref_logp: Optional[Tensor] = None       # [N, Lc]
    old_values: Optional[Tensor] = None     # [N, Lc] critic at rollout time
    advantages: Optional[Tensor] = None     # [N, Lc]
    returns: Optional[Tensor] = None        # [N, Lc] value targets

    def __len__(self) -> int:
        return self.prompt_ids.size(0)

    def rows(self, idx: Tensor) -> "Rollouts":
        return Rollouts(**{f.name: None if getattr(self, f.name) is None else getattr(self, f.name)[idx]
                           for f in fields(self)})

    @staticmethod
    def cat(parts: list["Rollouts"], pad_id: int) -> "Rollouts":
        def pad(ts: list[Tensor], value: float, left: bool) -> Tensor:
            width = max(x.size(1) for x in ts)
            out = []
            for x in ts:
                filler = x.new_full((x.size(0), width - x.size(1)), value)
                out.append(torch.cat([filler, x] if left else [x, filler], 1))
            return torch.cat(out)

        return Rollouts(
            prompt_ids=pad([p.prompt_ids for p in parts], pad_id, True),
            prompt_mask=pad([p.prompt_mask for p in parts], 0, True),
            completion_ids=pad([p.completion_ids for p in parts], pad_id, False),
            completion_mask=pad([p.completion_mask for p in parts], 0, False),
            rewards=torch.cat([p.rewards for p in parts]),
            scores=torch.cat([p.scores for p in parts]),
            greedy_scores=(None if parts[0].greedy_scores is None
                           else torch.cat([p.greedy_scores for p in parts])),
        )

    def to(self, device: Any) -> "Rollouts":
        return Rollouts(**{f.name: None if getattr(self, f.name) is None else getattr(self, f.name).to(device)
                           for f in fields(self)})

    def trimmed(self) -> "Rollouts":
        """Drop all-padding columns (left of the prompts, right of the completions) to save compute."""
        first = int(self.prompt_mask.any(0).float().argmax())
        last = int(self.completion_mask.any(0).nonzero().max()) + 1
        out = {}
        for f in fields(self):
            x = getattr(self, f.name)
            if f.name.startswith("prompt"):
                x = x[:, first:]
            elif x is not None and x.dim() == 2:
                x = x[:, :last]
            out[f.name] = x
        return Rollouts(**out)


# ---- advantage estimators: the algorithm, by name ----

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


# ---- PPO's model: policy + critic in one module ----

class PolicyWithCritic(nn.Module):
    """The Trainer's model for PPO. One module, so one optimizer and one DDP wrapper or DeepSpeed
    engine hold both networks (accelerate prepares one model per engine), and one forward call goes
    through the wrapper, which DDP needs to reduce gradients."""

    # HF Trainer reads this after loading a checkpoint into its model.
    _keys_to_ignore_on_save = None

    def __init__(self, policy: nn.Module, critic: nn.Module):
        super().__init__()
        self.policy = policy
        self.critic = critic

    def forward(self, input_ids, attention_mask, position_ids, logits_to_keep: int):
        logits = self.policy(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             logits_to_keep=logits_to_keep, use_cache=False).logits
        values = self.critic(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             use_cache=False).logits[..., 0]
        return logits, values[:, -logits_to_keep:]

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        # On resume, HF Trainer loads checkpoint-N/model.safetensors into its model. That file is the
        # policy alone (so the probe can load the checkpoint as a causal LM): route it to the policy.
        # The critic is restored from checkpoint-N/critic/ by OnPolicyTrainer.train.
        if state_dict and not any(k.startswith(("policy.", "critic.")) for k in state_dict):
            result = self.policy.load_state_dict(state_dict, strict=False, assign=assign)
            unique = {n for n, _ in self.policy.named_parameters()}
            tied = {n for n, _ in self.policy.named_parameters(remove_duplicate=False)} - unique
            result.missing_keys[:] = [k for k in result.missing_keys if k not in tied]
            return result
        return super().load_state_dict(state_dict, strict, assign)

    # HF Trainer (backend.gradient_checkpointing) and TRL's unwrap_model_for_generation switch
    # checkpointing through these PreTrainedModel methods; the wrapper passes them to both networks.
    @property
    def is_gradient_checkpointing(self) -> bool:
        p = self.policy
        if hasattr(type(p), "is_activation_checkpointing"):
            return bool(p.is_activation_checkpointing)
        return bool(getattr(p, "is_gradient_checkpointing", False))

    def activation_checkpointing_enable(self, **kwargs):
        for m in (self.policy, self.critic):
            (getattr(m, "activation_checkpointing_enable", None) or m.gradient_checkpointing_enable)(**kwargs)

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None, **kwargs):
        for m in (self.policy, self.critic):
            m.gradient_checkpointing_enable(gradient_checkpointing_kwargs=gradient_checkpointing_kwargs,
                                            **kwargs)

    def gradient_checkpointing_disable(self):
        for m in (self.policy, self.critic):
            m.gradient_checkpointing_disable()


def _disable_dropout(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0


# ---- data: one batch = one round of prompts ----

class RoundSampler:
    """A batch sampler. Each round takes `per_round * world` prompts from a seeded permutation of the
    dataset; this process's `per_round` of them form the batch, yielded `repeats` times (once per
    micro-step of the round). It shards by process itself, so the DataLoader is not passed through
    accelerate's sharding (which would deal the repeats out to different processes)."""

    def __init__(self, n: int, per_round: int, repeats: int, rank: int, world: int, seed: int):
        self.n, self.per_round, self.repeats = n, per_round, repeats
        self.rank, self.world, self.seed = rank, world, seed
        self.epoch = 0
        self.rounds = n // (per_round * world)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.rounds * self.repeats

    def __iter__(self) -> Iterator[list[int]]:
        g = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        perm = torch.randperm(self.n, generator=g).tolist()
        span = self.per_round * self.world
        for r in range(self.rounds):
            start = r * span + self.rank * self.per_round
            batch = perm[start:start + self.per_round]
            for _ in range(self.repeats):
                yield batch


def _collate(features: list[dict[str, Any]]) -> dict[str, list[Any]]:
    # Prompts stay strings (tokenised at generation time); every other column (problem_id, ...)
    # passes through to the reward functions.
    return {k: [f[k] for f in features] for k in features[0]}


# ---- the trainer ----

class OnPolicyTrainer(Trainer):
    def __init__(self, model: nn.Module, args: TrainingArguments, processing_class: Any, train_dataset: Any,
                 reward_funcs: list[Callable[..., list[float]]], settings: OnPolicySettings,
                 callbacks: Optional[list] = None, ref_model: Optional[nn.Module] = None,
                 critic: Optional[nn.Module] = None):
        if settings.critic != (critic is not None):
            raise ValueError(f"algo={settings.algo}: a critic is needed exactly when the algorithm learns "
                             f"values")
        if settings.kl_where != "none" and ref_model is None:
            raise ValueError(f"algo={settings.algo}: kl.coef > 0 needs a reference model")
        _disable_dropout(model)
        if critic is not None:
            _disable_dropout(critic)
            model = PolicyWithCritic(model, critic)
        super().__init__(model=model, args=args, data_collator=_collate, train_dataset=train_dataset,
                         processing_class=processing_class, callbacks=callbacks)
        self.s = settings
        self.reward_funcs = list(reward_funcs)
        # compute_loss divides by the whole round's token/sequence count, so HF must not divide by
        # the number of accumulation steps again.
        self.loss_is_scaled_for_ga = True
        self.ref_model = self._prepare_reference(ref_model) if ref_model is not None else None
        tok = processing_class
        self._pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        self._eos_id = tok.eos_token_id
        common = dict(max_new_tokens=settings.max_completion_length, pad_token_id=self._pad_id,
                      eos_token_id=self._eos_id, repetition_penalty=1.0, no_repeat_ngram_size=0)
        # Sample from softmax(logits / temperature), the distribution whose log-probs the loss uses.
        # A model's generation_config.json fills every field left unset here (and transformers'
        # global default is top_k=50), so pin each one that would reshape the distribution.
        full = dict(top_k=0, top_p=1.0, min_p=0.0, typical_p=1.0, epsilon_cutoff=0.0, eta_cutoff=0.0)
        self._sample_config = GenerationConfig(do_sample=True, temperature=settings.temperature, **full,
                                               **common)
        self._greedy_config = GenerationConfig(do_sample=False, **common)
        self._metrics: dict[str, list[float]] = defaultdict(list)
        self._buffer: Optional[Rollouts] = None
        self._slices: list[Tensor] = []
        self._denom: dict[str, Tensor] = {}
        self._micro = 0
        self._refill_iter: Optional[Iterator[int]] = None

    # -- setup --

    def _prepare_reference(self, ref: nn.Module) -> nn.Module:
        ref.requires_grad_(False)
        ref.eval()
        if self.is_deepspeed_enabled:
            from trl.models import prepare_deepspeed

            return prepare_deepspeed(ref, self.accelerator)
        return ref.to(self.accelerator.device)

    @property
    def _prompts_per_micro(self) -> int:
        return self.args.per_device_train_batch_size // self.s.rollouts

    def get_train_dataloader(self):
        from torch.utils.data import DataLoader

        if self.train_dataset is None:
            raise ValueError("OnPolicyTrainer: training requires a train_dataset")
        ga = self.args.gradient_accumulation_steps
        per_round = self._prompts_per_micro * ga
        world = self.accelerator.num_processes
        if len(self.train_dataset) < per_round * world:
            raise ConfigError(f"algo={self.s.algo}: one round takes {per_round * world} prompts but the "
                             f"training set has {len(self.train_dataset)}")
        sampler = RoundSampler(len(self.train_dataset), per_round, ga * self.s.num_iterations,
                               self.accelerator.process_index, world, self.args.seed)
        return DataLoader(self.train_dataset, batch_sampler=sampler, collate_fn=_collate,
                          num_workers=self.args.dataloader_num_workers)

    def create_optimizer(self, model=None):
        if self.optimizer is not None or not self.s.critic or self.s.critic_lr is None:
            return super().create_optimizer(model)
        # A separate learning rate for the critic: the same groups HF builds (decay / no decay),
        # split once more into policy / critic.
        opt_model = model if model is not None else self.model
        decay = set(self.get_decay_parameter_names(opt_model))
        critic_ids = {id(p) for p in self.accelerator.unwrap_model(opt_model).critic.parameters()}
        groups: dict[tuple[bool, bool], list[nn.Parameter]] = defaultdict(list)
        for name, p in opt_model.named_parameters():
            if p.requires_grad:
                groups[(name in decay, id(p) in critic_ids)].append(p)
        param_groups = [{"params": ps, "weight_decay": self.args.weight_decay if d else 0.0,
                         **({"lr": self.s.critic_lr} if c else {})} for (d, c), ps in groups.items()]
        cls, kwargs = self.get_optimizer_cls_and_kwargs(self.args, opt_model)
        self.optimizer = cls(param_groups, **kwargs)
        return self.optimizer

    # -- the round: generate, score, estimate advantages --

    def training_step(self, model: nn.Module, inputs: dict[str, Any],
                      num_items_in_batch: Any = None) -> Tensor:
        ga = self.args.gradient_accumulation_steps
        pos = self._micro % (ga * self.s.num_iterations)
        if pos == 0 or self._buffer is None:
            self._buffer = self._make_round(model, inputs)
            n = len(self._buffer)
            self._slices = list(torch.arange(n).tensor_split(ga))
        self._micro += 1
        idx = self._slices[pos % ga]
        weight = 1.0
        if len(idx) == 0:
            # Fewer rows than micro-steps (DAPO kept few groups): run one row with weight 0, so every
            # process still does the same number of forward/backward passes (DDP, ZeRO-3).
            idx, weight = torch.zeros(1, dtype=torch.long), 0.0
        micro = self._buffer.rows(idx).trimmed()
        return super().training_step(model, {"rollouts": micro, "weight": weight}, num_items_in_batch)

    def _all_reduce(self):
        if self.accelerator.num_processes == 1:
            return None
        return lambda x: self.accelerator.reduce(x, "sum")

    def _sum_all(self, x: Tensor) -> Tensor:
        return x if self.accelerator.num_processes == 1 else self.accelerator.reduce(x, "sum")

    @torch.no_grad()
    def _make_round(self, model: nn.Module, inputs: dict[str, list[Any]]) -> Rollouts:
        s = self.s
        prompts = list(inputs["prompt"])
        extras = {k: list(v) for k, v in inputs.items() if k != "prompt"}
        batch = self._generate(model, prompts, extras)
        generated = [batch]
        if s.dynamic_sampling:
            batch = self._dynamic_sampling(model, batch, len(prompts), generated)
        batch = batch.trimmed()
        self._log_round(generated)

        batch = batch.to(self.accelerator.device)
        mask = batch.completion_mask
        need_old = s.num_iterations > 1 or s.kl_where == "reward" or s.critic
        ga = self.args.gradient_accumulation_steps
        # Same slicing as training, so every process runs the same number of forward passes.
        slices = [i if len(i) else torch.zeros(1, dtype=torch.long)
                  for i in torch.arange(len(batch)).tensor_split(ga)]
        if need_old:
            # [:2] drops each slice's logits at once ([n, Lc, vocab] is the big tensor).
            outs = [self._forward(model, batch.rows(i))[:2] for i in slices]
            batch.old_logp = torch.cat([o[0] for o in outs])[:len(batch)]
            if s.critic:
                batch.old_values = torch.cat([o[1] for o in outs])[:len(batch)] * mask
        if self.ref_model is not None:
            batch.ref_logp = torch.cat([self._forward(self.ref_model, batch.rows(i), ref=True)[0]
                                        for i in slices])[:len(batch)]
        kl_reward = None
        if s.kl_where == "reward":
            kl_reward = O.kl_per_token(batch.old_logp, batch.ref_logp, s.kl_estimator) * mask
            self._metrics["kl"].append(float(self._mean_all(kl_reward, mask)))
        estimator: Estimator = ADV_ESTIMATORS.get(s.estimator)
        batch.advantages, batch.returns = estimator(batch, s, kl_reward, self._all_reduce())
        if s.critic:
            ev = O.explained_variance(batch.old_values, batch.returns, mask)
            self._metrics["explained_variance"].append(float(ev))
        # Normalisers for compute_loss: the round's counts over every process, per process (DDP and
        # DeepSpeed average gradients over processes).
        world = self.accelerator.num_processes
        counts = self._sum_all(torch.stack([mask.sum(), torch.tensor(float(len(batch)), device=mask.device)]))
        self._denom = {"token": counts[0] / world, "seq": counts[1] / world}
        return batch

    def _forward(self, model: nn.Module, b: Rollouts, ref: bool = False
                 ) -> tuple[Tensor, Optional[Tensor], Tensor]:
        """Per-token log-probs of the completion, the critic's values, and the (temperature-scaled)
        logits -> ([N, Lc], [N, Lc] | None, [N, Lc, V])."""
        ids = torch.cat([b.prompt_ids, b.completion_ids], 1)
        attn = torch.cat([b.prompt_mask, b.completion_mask.to(b.prompt_mask.dtype)], 1)
        # Left padding: count positions from each row's first real token, as generate did.
        position_ids = (attn.cumsum(1) - 1).clamp(min=0)
        keep = b.completion_ids.size(1) + 1
        values = None
        if self.s.critic and not ref:
            logits, values = model(input_ids=ids, attention_mask=attn, position_ids=position_ids,
                                   logits_to_keep=keep)
            values = values[:, :-1]
        else:
            logits = model(input_ids=ids, attention_mask=attn, position_ids=position_ids, logits_to_keep=keep,
                           use_cache=False).logits
        # float32: log-probs, ratios and values of a bf16 model lose too much precision in bf16.
        logits = logits[:, :-1].float() / self.s.temperature
        if values is not None:
            values = values.float()
        return O.token_logprobs(logits, b.completion_ids), values, logits

    def _generate(self, model: nn.Module, prompts: list[str], extras: dict[str, list[Any]]) -> Rollouts:
        """Sample `rollouts` completions per prompt (and ReMax's greedy one), score them."""
        from trl.models import unwrap_model_for_generation

        s, tok = self.s, self.processing_class
        step = self._prompts_per_micro
        parts = []
        # Unwrap once per round: under ZeRO-3 this gathers the full weights for generation.
        with unwrap_model_for_generation(model, self.accelerator) as unwrapped:
            policy = unwrapped.policy if isinstance(unwrapped, PolicyWithCritic) else unwrapped
            for start in range(0, len(prompts), step):
                chunk = prompts[start:start + step]
                enc = tok(chunk, return_tensors="pt", padding=True, padding_side="left",
                          add_special_tokens=False).to(self.accelerator.device)
                ids = enc["input_ids"].repeat_interleave(s.rollouts, 0)
                mask = enc["attention_mask"].repeat_interleave(s.rollouts, 0)
                out = policy.generate(input_ids=ids, attention_mask=mask,
                                      generation_config=self._sample_config)
                greedy = None
                if s.greedy_baseline:
                    greedy = policy.generate(**enc, generation_config=self._greedy_config)
                part_extras = {k: v[start:start + step] for k, v in extras.items()}
                parts.append(self._score(chunk, part_extras, ids, mask, out[:, ids.size(1):],
                                         None if greedy is None else greedy[:, enc["input_ids"].size(1):]))
        return Rollouts.cat(parts, self._pad_id)

    def _score(self, prompts: list[str], extras: dict[str, list[Any]], prompt_ids: Tensor,
               prompt_mask: Tensor, completion_ids: Tensor, greedy_ids: Optional[Tensor]) -> Rollouts:
        s = self.s
        k = s.rollouts
        cmask = O.completion_mask(completion_ids, self._eos_id)
        rewards = self._rewards([p for p in prompts for _ in range(k)],
                                {c: [v for v in vals for _ in range(k)] for c, vals in extras.items()},
                                completion_ids, cmask)
        shaping = self._overlong(cmask)
        greedy_scores = None
        if greedy_ids is not None:
            gmask = O.completion_mask(greedy_ids, self._eos_id)
            g = self._rewards(prompts, extras, greedy_ids, gmask, tag="greedy")
            g = g + self._overlong(gmask)
            greedy_scores = g.repeat_interleave(k)
        return Rollouts(prompt_ids=prompt_ids.cpu(), prompt_mask=prompt_mask.cpu(),
                        completion_ids=completion_ids.cpu(), completion_mask=cmask.cpu(), rewards=rewards,
                        scores=rewards + shaping, greedy_scores=greedy_scores)

    def _overlong(self, cmask: Tensor) -> Tensor:
        s = self.s
        return O.overlong_penalty(cmask.sum(1).cpu(), s.max_completion_length, s.overlong_buffer,
                                  s.overlong_penalty)

    def _rewards(self, prompts: list[str], extras: dict[str, list[Any]], completion_ids: Tensor,
                 cmask: Tensor, tag: str = "") -> Tensor:
        """Sum of the reward functions (TRL's calling convention); None from a function counts as 0."""
        lengths = cmask.sum(1).long().tolist()
        ids = [row[:n].tolist() for row, n in zip(completion_ids.cpu(), lengths)]
        texts = self.processing_class.batch_decode(ids, skip_special_tokens=True)
        total = torch.zeros(len(texts))
        for f in self.reward_funcs:
            out = f(prompts=prompts, completions=texts, completion_ids=ids, trainer_state=self.state,
                    **extras)
            r = torch.tensor([float("nan") if x is None else float(x) for x in out])
            total += torch.nan_to_num(r, nan=0.0)
            if not tag:
                name = getattr(f, "__name__", type(f).__name__)
                self._metrics[f"rewards/{name}/mean"].append(float(r.nanmean()))
        return total

    def _dynamic_sampling(self, model: nn.Module, first: Rollouts, target_groups: int,
                          generated: list[Rollouts]) -> Rollouts:
        """DAPO: keep groups whose rewards differ; generate for fresh prompts until the round has
        `target_groups` such groups or `max_refill_rounds` refills were spent."""
        k = self.s.rollouts

        def keep(b: Rollouts) -> Rollouts:
            ok = O.dynamic_sampling_keep(b.rewards.view(-1, k))
            rows = (ok.nonzero().view(-1, 1) * k + torch.arange(k)).view(-1)
            return b.rows(rows)

        kept = [keep(first)]
        n_kept = len(kept[0]) // k
        refills = 0
        # Decided together: every process generates in every refill round (ZeRO-3 gathers are collective).
        while refills < self.s.max_refill_rounds and self._any_process(n_kept < target_groups):
            refills += 1
            prompts, extras = self._draw_prompts(target_groups)
            more = self._generate(model, prompts, extras)
            generated.append(more)
            kept.append(keep(more))
            n_kept += len(kept[-1]) // k
        self._metrics["dynamic_sampling/refill_rounds"].append(float(refills))
        self._metrics["dynamic_sampling/kept_groups_frac"].append(min(n_kept, target_groups) / target_groups)
        if n_kept == 0:
            # Nothing carries signal: train on the first batch (zero advantages; only KL, if any, moves).
            return first
        batch = Rollouts.cat([b for b in kept if len(b)], self._pad_id)
        return batch.rows(torch.arange(min(n_kept, target_groups) * k))

    def _any_process(self, flag: bool) -> bool:
        t = torch.tensor([1.0 if flag else 0.0], device=self.accelerator.device)
        return bool(self._sum_all(t).item() > 0)

    def _draw_prompts(self, n: int) -> tuple[list[str], dict[str, list[Any]]]:
        """Fresh prompts for refills, from a separate seeded stream so the main data order is untouched."""
        if self._refill_iter is None:
            self._refill_iter = self._refill_order()
        rows = [self.train_dataset[next(self._refill_iter)] for _ in range(n)]
        batch = _collate(rows)
        return list(batch.pop("prompt")), batch

    def _refill_order(self) -> Iterator[int]:
        rank = self.accelerator.process_index
        g = torch.Generator().manual_seed(self.args.seed * 100_003 + 7_919 * (rank + 1))
        while True:
            yield from torch.randperm(len(self.train_dataset), generator=g).tolist()

    def _mean_all(self, x: Tensor, mask: Tensor) -> Tensor:
        sums = self._sum_all(torch.stack([(x * mask).sum(), mask.sum()]))
        return sums[0] / sums[1].clamp(min=1)

    def _log_round(self, generated: list[Rollouts]) -> None:
        k = self.s.rollouts
        rewards = torch.cat([b.rewards for b in generated])
        lengths = torch.cat([b.completion_mask.sum(1) for b in generated])
        ended = torch.cat([(b.completion_ids == self._eos_id).any(1).float() for b in generated])
        dev = self.accelerator.device
        zero_std = torch.cat([(b.rewards.view(-1, k).std(1) == 0).float() if k > 1 else torch.ones(len(b))
                              for b in generated])
        s = self._sum_all(torch.stack([rewards.sum(), (rewards ** 2).sum(), torch.tensor(float(len(rewards))),
                                       lengths.sum(), (1 - ended).sum(), zero_std.sum(),
                                       torch.tensor(float(len(zero_std)))]).to(dev))
        n = s[2]
        mean = s[0] / n
        var = (s[1] - n * mean ** 2) / (n - 1).clamp(min=1)
        self._metrics["reward"].append(float(mean))
        self._metrics["reward_std"].append(float(var.clamp(min=0).sqrt()))
        self._metrics["completions/mean_length"].append(float(s[3] / n))
        self._metrics["completions/clipped_ratio"].append(float(s[4] / n))
        if k > 1:
            self._metrics["frac_reward_zero_std"].append(float(s[5] / s[6]))
        greedy = [b.greedy_scores for b in generated if b.greedy_scores is not None]
        if greedy:
            self._metrics["reward_greedy"].append(float(torch.cat(greedy).mean()))

    # -- the loss --

    def compute_loss(self, model: nn.Module, inputs: dict[str, Any], return_outputs: bool = False,
                     num_items_in_batch: Any = None):
        s = self.s
        b: Rollouts = inputs["rollouts"]
        mask = b.completion_mask
        denom = self._denom[s.loss_agg]
        logp, values, logits = self._forward(model, b)
        old_logp = b.old_logp if b.old_logp is not None else logp.detach()
        loss, clip_frac = O.ppo_policy_loss(logp, old_logp, b.advantages, mask, s.epsilon_low, s.epsilon_high,
                                            s.loss_agg, denom)
        self._metrics["clip_ratio"].append(float(clip_frac))
        with torch.no_grad():
            self._metrics["entropy"].append(float(O.masked_mean(O.entropy_from_logits(logits), mask)))
        if s.kl_where == "loss":
            kl = O.kl_per_token(logp, b.ref_logp, s.kl_estimator)
            loss = loss + s.kl_coef * O.loss_aggregate(kl, mask, s.loss_agg, denom)
            self._metrics["kl"].append(float(O.masked_mean(kl.detach(), mask)))
        if s.critic:
            vloss, vclip = O.clipped_value_loss(values, b.old_values, b.returns, mask, s.cliprange_value,
                                                s.loss_agg, denom)
            loss = loss + s.vf_coef * vloss
            # vloss is this micro-batch's share of the round's loss; ga shares average to it.
            self._metrics["value_loss"].append(vloss.item() * self.args.gradient_accumulation_steps)
            self._metrics["value_clip_ratio"].append(float(vclip))
        loss = loss * inputs["weight"]
        return (loss, None) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: Optional[float] = None) -> None:
        # Our metrics, averaged since the last log, join HF's row (loss, grad_norm, learning_rate).
        if self._metrics and "loss" in logs:
            logs = {**logs, **{k: sum(v) / len(v) for k, v in self._metrics.items()}}
            self._metrics.clear()
        super().log(logs, start_time)

    # -- checkpoints: the policy at the root, the critic in critic/ --

    def save_model(self, output_dir: Optional[str] = None, _internal_call: bool = False) -> None:
        if not isinstance(self.model, PolicyWithCritic):
            return super().save_model(output_dir, _internal_call)
        output_dir = output_dir or self.args.output_dir
        try:
            # Collective under ZeRO-3 (every process gathers); a plain state_dict otherwise.
            state = self.accelerator.get_state_dict(self.model_wrapped)
        except ValueError as e:
            raise ConfigError("PPO checkpoints hold the full policy and critic: set "
                              "stage3_gather_16bit_weights_on_model_save=true in the DeepSpeed config") from e
        if not self.args.should_save:
            return
        wrapper: PolicyWithCritic = self.accelerator.unwrap_model(self.model)
        part = {p: {k[len(p) + 1:]: v for k, v in state.items() if k.startswith(p + ".")}
                for p in ("policy", "critic")}
        os.makedirs(output_dir, exist_ok=True)
        wrapper.policy.save_pretrained(output_dir, state_dict=part["policy"])
        wrapper.critic.save_pretrained(os.path.join(output_dir, CRITIC_DIR), state_dict=part["critic"])
        if self.processing_class is not None:
            self.processing_class.save_pretrained(output_dir)
        torch.save(self.args, os.path.join(output_dir, "training_args.bin"))

    def train(self, resume_from_checkpoint: Any = None, trial: Any = None, ignore_keys_for_eval: Any = None,
              **kwargs: Any):
        if resume_from_checkpoint is True:
            from transformers.trainer_utils import get_last_checkpoint

            resume_from_checkpoint = get_last_checkpoint(self.args.output_dir)
        # HF restores the policy (checkpoint root) and, under DeepSpeed, the whole engine; without
        # DeepSpeed the critic is ours to restore.
        critic_is_ours = isinstance(self.model, PolicyWithCritic) and not self.is_deepspeed_enabled
        if resume_from_checkpoint and critic_is_ours:
            load_critic(self.model.critic, os.path.join(resume_from_checkpoint, CRITIC_DIR))
        return super().train(resume_from_checkpoint, trial, ignore_keys_for_eval, **kwargs)


def load_critic(critic: nn.Module, folder: str) -> None:
    """Load a critic saved by `save_pretrained` (one file or shards) into `critic`, strictly."""
    single = os.path.join(folder, "model.safetensors")
    if os.path.isfile(single):
        from safetensors.torch import load_file

        critic.load_state_dict(load_file(single, device="cpu"), strict=True)
    elif os.path.isdir(folder):
        from transformers.trainer_utils import load_sharded_checkpoint

        load_sharded_checkpoint(critic, folder, strict=True)
    else:
        raise FileNotFoundError(f"no critic in the checkpoint: {folder} is missing")


# ---- builders ----

def build_critic(cfg: Any, policy: nn.Module) -> nn.Module:
    """A value model: `algo.critic.model` if set, else a copy of the policy's backbone with a
    zero-initialised scalar head (a token-classification model with one label)."""
    from transformers import AutoModelForTokenClassification

    dtype = next(policy.parameters()).dtype
    if cfg.algo.critic.model:
        from boundlab.models import _hub_kwargs

        path = cfg.algo.critic.model
        critic = AutoModelForTokenClassification.from_pretrained(
            path, num_labels=1, classifier_dropout=0.0, dtype=dtype,
            trust_remote_code=cfg.model.trust_remote_code, **_hub_kwargs(cfg.model, path))
    else:
        conf = copy.deepcopy(policy.config)
        conf.num_labels = 1
        conf.classifier_dropout = 0.0
        critic = AutoModelForTokenClassification.from_config(conf, dtype=dtype)
        backbone = getattr(policy, policy.base_model_prefix)
        getattr(critic, critic.base_model_prefix).load_state_dict(backbone.state_dict())
        nn.init.zeros_(critic.score.weight)
        if critic.score.bias is not None:
            nn.init.zeros_(critic.score.bias)
    return critic.to(next(policy.parameters()).device)


def load_reference(cfg: Any) -> nn.Module:
    """The frozen KL reference: `kl.reference`, else the base model (`model.path`)."""
    from boundlab.models import load_model, resolve_model_path

    path = cfg.kl.reference or resolve_model_path(cfg.model)
    return load_model(cfg.model, "cpu" if cfg.backend.use_cpu else "cuda", path)


def build_onpolicy(name: str, cfg: Any, model: Any, tokenizer: Any, train_dataset: Any, reward_funcs: list,
                   callbacks: list, output_dir: str, report_to: list[str], peft_config: Any = None
                   ) -> OnPolicyTrainer:
    settings = settings_from_cfg(name, cfg)
    if peft_config is not None:
        if settings.critic:
            raise ConfigError(f"algo={name} with peft.enabled: LoRA checkpoints with a critic are not "
                             f"supported; train all weights (peft.enabled=false)")
        from peft import get_peft_model

        model = get_peft_model(model, peft_config)
    # kl.coef == 0 loads no reference model at all.
    ref = load_reference(cfg) if settings.kl_where != "none" else None
    critic = build_critic(cfg, model) if settings.critic else None
    args = TrainingArguments(**training_args_common(cfg, output_dir, report_to), remove_unused_columns=False)
    return OnPolicyTrainer(model=model, args=args, processing_class=tokenizer, train_dataset=train_dataset,
                           reward_funcs=reward_funcs, settings=settings, callbacks=callbacks, ref_model=ref,
                           critic=critic)


def _register(name: str) -> Any:
    """One registered builder per algorithm this trainer implements, with its start-up check."""

    def build(cfg: Any, model: Any, tokenizer: Any, train_dataset: Any, reward_funcs: list,
              callbacks: list, output_dir: str, report_to: list[str], peft_config: Any = None
              ) -> OnPolicyTrainer:
        return build_onpolicy(name, cfg, model, tokenizer, train_dataset, reward_funcs, callbacks,
                              output_dir, report_to, peft_config)

    build.__name__ = f"build_{name}"
    # Checked at start by boundlab.algos.check, before the base is probed.
    build.check = lambda cfg: settings_from_cfg(name, cfg)  # type: ignore[attr-defined]
    return ALGOS.register(name)(build)


build_ppo = _register("ppo")
build_reinforce_pp = _register("reinforce_pp")
build_reinforce_pp_baseline = _register("reinforce_pp_baseline")
build_remax = _register("remax")
build_dapo = _register("dapo")
