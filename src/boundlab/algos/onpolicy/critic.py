"""PPO's critic: the value model (`build_critic`), the policy+critic module the Trainer trains
(`PolicyWithCritic`), and loading a saved critic back (`load_critic`). Checkpoints keep the policy at
their root (loadable as a causal LM by the probe) and the critic in `CRITIC_DIR`."""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING

from torch import nn

if TYPE_CHECKING:
    from boundlab.config import TrainMain

CRITIC_DIR = "critic"


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

def build_critic(cfg: TrainMain, policy: nn.Module) -> nn.Module:
    """A value model: `algo.onpolicy.critic.model` if set, else a copy of the policy's backbone with a
    zero-initialised scalar head (a token-classification model with one label)."""
    from transformers import AutoModelForTokenClassification

    dtype = next(policy.parameters()).dtype
    if cfg.algo.onpolicy.critic.model:
        from boundlab.models import _hub_kwargs

        path = cfg.algo.onpolicy.critic.model
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


