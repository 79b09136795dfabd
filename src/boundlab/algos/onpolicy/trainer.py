"""`OnPolicyTrainer`: the HF Trainer subclass that serves PPO, REINFORCE++, REINFORCE++-baseline,
ReMax and DAPO (see the package docstring for what it overrides and where it departs from the papers)."""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any, Callable, Iterator, Optional

import torch
from torch import Tensor, nn
from transformers import GenerationConfig, Trainer, TrainingArguments

from boundlab.algos import objectives as O
from boundlab.algos.onpolicy.advantages import ADV_ESTIMATORS, Estimator
from boundlab.algos.onpolicy.critic import CRITIC_DIR, PolicyWithCritic, _disable_dropout, load_critic
from boundlab.algos.onpolicy.rollouts import RoundSampler, Rollouts, _collate
from boundlab.algos.onpolicy.settings import OnPolicySettings
from boundlab.config import ConfigError


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
        # Applied to each batch of refill prompts (a dict of columns); data.gate sets it so DAPO's
        # refills draw gated problems too (boundlab.training.gate).
        self.refill_map: Optional[Callable[[dict[str, list[Any]]], dict[str, list[Any]]]] = None
        # rollout=vllm_*: TRL's VLLMGeneration samples the rounds (the policy's weights pushed to it).
        self._vllm = None
        if settings.vllm is not None:
            from boundlab.algos.onpolicy.vllm_rollouts import VLLMRollouts

            policy = model.policy if isinstance(model, PolicyWithCritic) else model
            self._vllm = VLLMRollouts(policy, self.accelerator, processing_class, settings.vllm)

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
        need_old = s.num_iterations > 1 or s.kl_where == "reward" or s.critic or s.unlikeliness > 0
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
        if s.unlikeliness > 0:
            self._shape_unlikeliness(batch)
        kl_reward = None
        if s.kl_where == "reward":
            kl_reward = O.kl_per_token(batch.old_logp, batch.ref_logp, s.kl_estimator) * mask
            self._metrics["kl"].append(float(self._mean_all(kl_reward, mask)))
        estimator: Estimator = ADV_ESTIMATORS.get(s.estimator)
        s_now = s.at_step(self.state.global_step, self.state.max_steps)
        batch.advantages, batch.returns = estimator(batch, s_now, kl_reward, self._all_reduce())
        if s.estimator == "pkpo":
            self._metrics["pkpo_k"].append(float(s_now.passk_k))
        if s.critic:
            ev = O.explained_variance(batch.old_values, batch.returns, mask)
            self._metrics["explained_variance"].append(float(ev))
        # Normalisers for compute_loss: the round's counts over every process, per process (DDP and
        # DeepSpeed average gradients over processes).
        world = self.accelerator.num_processes
        counts = self._sum_all(torch.stack([mask.sum(), torch.tensor(float(len(batch)), device=mask.device)]))
        self._denom = {"token": counts[0] / world, "seq": counts[1] / world}
        return batch

    def _shape_unlikeliness(self, batch: Rollouts) -> None:
        """The unlikeliness reward on the verifier's part of each score (overlong shaping is kept as
        is), ranked by the mean token log-prob under the rollout policy (`old_logp`)."""
        k = self.s.rollouts
        seq_logp = O.masked_mean(batch.old_logp, batch.completion_mask, dim=1).cpu()
        rewards = batch.rewards.cpu().to(seq_logp.dtype)
        shaped = O.unlikeliness_rewards(rewards.view(-1, k), seq_logp.view(-1, k), self.s.unlikeliness).view(-1)
        change = shaped - rewards
        batch.scores = batch.scores + change.to(device=batch.scores.device, dtype=batch.scores.dtype)
        self._metrics["unlikeliness/reward_change"].append(float(change.mean()))

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

        if self._vllm is not None:
            return self._generate_vllm(prompts, extras)
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
                completions = self._sample(policy, ids, mask)
                greedy = None
                if s.greedy_baseline:
                    greedy = policy.generate(**enc, generation_config=self._greedy_config)
                part_extras = {k: v[start:start + step] for k, v in extras.items()}
                parts.append(self._score(chunk, part_extras, ids, mask, completions,
                                         None if greedy is None else greedy[:, enc["input_ids"].size(1):]))
        return Rollouts.cat(parts, self._pad_id)

    def _sample(self, policy: nn.Module, ids: Tensor, mask: Tensor) -> Tensor:
        """The sampled completions of these prompt rows, `train.generation_chunk` rows per generate
        call at most (right-padded to one width): generation memory is bounded by the chunk, not by
        the rollouts of a micro-step. One call draws other samples than several from the same seed
        (the random stream is consumed per batch), so chunking changes which samples, not their law."""
        n = ids.size(0)
        step = self.s.generation_chunk or n
        outs = [policy.generate(input_ids=ids[i:i + step], attention_mask=mask[i:i + step],
                                generation_config=self._sample_config)[:, ids.size(1):]
                for i in range(0, n, step)]
        width = max(o.size(1) for o in outs)
        return torch.cat([torch.nn.functional.pad(o, (0, width - o.size(1)), value=self._pad_id) for o in outs])

    def _generate_vllm(self, prompts: list[str], extras: dict[str, list[Any]]) -> Rollouts:
        """The same round through vLLM: every prompt of the round in one engine call, the prompts
        tokenised exactly as for `generate` (no special tokens added: the template has them). The mask
        is the tokens vLLM sampled: it may stop at any end token of the model's generation config
        (Qwen: <|im_end|> and <|endoftext|>), which counting up to `eos_token_id` alone would miss."""
        from boundlab.algos.onpolicy.vllm_rollouts import pad_completions

        s, tok, k = self.s, self.processing_class, self.s.rollouts
        ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
        completions = self._vllm.sample(ids, k, self.state.global_step)
        parts, step = [], self._prompts_per_micro
        for start in range(0, len(prompts), step):
            chunk = prompts[start:start + step]
            enc = tok(chunk, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False)
            comp, cmask = pad_completions(completions[start * k:(start + len(chunk)) * k], self._pad_id)
            part_extras = {key: v[start:start + step] for key, v in extras.items()}
            parts.append(self._score(chunk, part_extras, enc["input_ids"].repeat_interleave(k, 0),
                                     enc["attention_mask"].repeat_interleave(k, 0), comp, None, cmask))
        return Rollouts.cat(parts, self._pad_id)

    def _score(self, prompts: list[str], extras: dict[str, list[Any]], prompt_ids: Tensor,
               prompt_mask: Tensor, completion_ids: Tensor, greedy_ids: Optional[Tensor],
               cmask: Optional[Tensor] = None) -> Rollouts:
        s = self.s
        k = s.rollouts
        if cmask is None:
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
        if self.refill_map is not None:
            batch = self.refill_map(batch)
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
        if s.entropy_coef > 0:
            entropy = O.entropy_from_logits(logits)
            loss = loss + O.entropy_bonus(entropy, mask, s.entropy_coef, s.loss_agg, denom)
            entropy = entropy.detach()
        else:
            with torch.no_grad():
                entropy = O.entropy_from_logits(logits)
        self._metrics["entropy"].append(float(O.masked_mean(entropy, mask)))
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
