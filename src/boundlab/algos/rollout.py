"""The `rollout` config group: which engine samples training rollouts.

- `hf` (default): the trainer's own `generate` (TRL's, or OnPolicyTrainer's), on CPU or GPU.
- `vllm_colocate`: vLLM inside each training process, sharing its GPU (`rollout.gpu_memory_utilization`).
- `vllm_server`: a `trl vllm-serve` process on other GPUs or another node (launch/vllm_serve.sh);
  the trainer pushes its weights to it over NCCL after every optimizer step.

TRL's GRPO, RLOO and on-policy distillation get TRL's own `use_vllm`/`vllm_*` fields
(`trl_vllm_args`); boundlab's OnPolicyTrainer gets the same engine through TRL's `VLLMGeneration`
(`vllm_generation_args`). Machine requirements (CUDA, vLLM importable) are checked at start in
boundlab.validate; what an algorithm cannot do with vLLM rollouts is refused by `check_rollout`.

Where this departs from `hf` rollouts: vLLM samples with its own kernels, so a rollout's log-probs
under the training model differ slightly from the engine's; GRPO applies TRL's importance-sampling
correction (`vllm_importance_sampling_correction`, TRL's default); the on-policy trainer recomputes
log-probs with the training model and uses those (as it does for `hf` rollouts), without a correction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from boundlab.config import ConfigError

if TYPE_CHECKING:
    from boundlab.config import RolloutConfig, TrainMain

VLLM_ROLLOUTS = ("vllm_colocate", "vllm_server")
ROLLOUTS = ("hf",) + VLLM_ROLLOUTS


def uses_vllm(r: RolloutConfig) -> bool:
    return r.name in VLLM_ROLLOUTS


def trl_vllm_args(r: RolloutConfig) -> dict[str, Any]:
    """The `GRPOConfig` / `RLOOConfig` / `DistillationConfig` fields (TRL 1.16 names) for `rollout`."""
    if not uses_vllm(r):
        return {"use_vllm": False}
    kw: dict[str, Any] = dict(use_vllm=True, vllm_max_model_length=r.max_model_length)
    if r.name == "vllm_colocate":
        kw.update(vllm_mode="colocate", vllm_gpu_memory_utilization=float(r.gpu_memory_utilization),
                  vllm_tensor_parallel_size=int(r.tensor_parallel_size),
                  vllm_enable_sleep_mode=bool(r.enable_sleep_mode))
    else:
        kw.update(vllm_mode="server", vllm_server_base_url=r.base_url, vllm_server_host=str(r.host),
                  vllm_server_port=int(r.port), vllm_server_timeout=float(r.timeout_s),
                  vllm_group_port=int(r.group_port))
    return kw


def vllm_generation_args(cfg: TrainMain) -> dict[str, Any]:
    """Keyword arguments of TRL's `VLLMGeneration` (the on-policy trainer's vLLM engine), sampling
    exactly as the trainer's `generate` does: temperature T, no top-k/top-p/min-p truncation and
    no repetition penalty, so the log-probs of logits / T are the behaviour policy's."""
    kw = trl_vllm_args(cfg.rollout)
    if not kw.pop("use_vllm"):
        raise ValueError("vllm_generation_args: rollout=hf has no vLLM engine")
    # GRPOConfig field -> VLLMGeneration argument (the same settings under other names).
    names = {"vllm_mode": "mode", "vllm_max_model_length": "max_model_length",
             "vllm_gpu_memory_utilization": "gpu_memory_utilization",
             "vllm_tensor_parallel_size": "tensor_parallel_size", "vllm_enable_sleep_mode": "enable_sleep_mode",
             "vllm_server_base_url": "server_base_url", "vllm_server_host": "server_host",
             "vllm_server_port": "server_port", "vllm_server_timeout": "server_timeout",
             "vllm_group_port": "group_port"}
    a = cfg.algo
    return dict(**{names[k]: v for k, v in kw.items()}, trust_remote_code=bool(cfg.model.trust_remote_code),
                temperature=float(a.temperature), top_p=1.0, top_k=0, min_p=0.0, repetition_penalty=1.0,
                max_completion_length=int(a.max_completion_length), logprobs=None)


def check_rollout(name: str, cfg: TrainMain, *, samples: bool = True, greedy_baseline: bool = False) -> None:
    """What algorithm `name` cannot do with vLLM rollouts, refused in one line at start."""
    if not uses_vllm(cfg.rollout):
        return
    r = cfg.rollout.name
    if not samples:
        raise ConfigError(f"algo={name} samples no rollouts while it trains (its teacher's traces come "
                          f"from the probe's sampler: sampler=vllm samples them with vLLM), so rollout={r} "
                          f"would be ignored: use rollout=hf")
    if greedy_baseline:
        raise ConfigError(f"algo={name}: its greedy baseline rollout is not wired to vLLM (one engine "
                          f"samples at one temperature), so rollout={r} is not available: use rollout=hf")
    if cfg.backend.use_cpu:
        raise ConfigError(f"rollout={r} samples on the training GPUs' side, but backend={cfg.backend.name} "
                          f"trains on the CPU: use a GPU backend (gpu, zero2, zero3) or rollout=hf")
