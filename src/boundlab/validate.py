"""Value ranges and machine requirements of every config area, checked at start.

Hydra builds structured configs without running a dataclass's `__post_init__`, so the types are
checked by the schemas (`boundlab.config`) but the ranges are checked here, one function per schema
area. The entry points call `validate(cfg)` right after `check_keys(cfg)`, before any task, store or
model is touched. Every failure is one `ConfigError` line that names the key, the value given and
what to set instead.

Where this departs from the obvious:
- `limit` keys accept null or >= 1 only. `0` used to mean "all" and `-1` "all but the last" (Python
  slicing); both are refused rather than given a meaning.
- `probe.temperature=0` is allowed and means greedy decoding: all n samples of a problem are then
  identical and pass@k is flat in k. It is said so on stderr, since it is rarely what a boundary probe
  wants.
- GPU-only choices (`backend=gpu|zero2|zero3`, `sampler.device=cuda`, `sampler=vllm`,
  `rollout=vllm_colocate|vllm_server`) are refused on a machine without CUDA (or without vLLM
  installed) here, not minutes later inside a trainer.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from boundlab.config import ConfigError

if TYPE_CHECKING:
    from omegaconf import DictConfig


def _fail(key: str, value: Any, need: str) -> None:
    raise ConfigError(f"{key}={'null' if value is None else value}: {need}")


def _at_least(node: Any, prefix: str, key: str, low: float, what: str = "") -> None:
    v = getattr(node, key)
    if v < low:
        _fail(f"{prefix}.{key}", v, f"must be >= {low:g}{what}")


def _positive(node: Any, prefix: str, key: str, what: str = "") -> None:
    v = getattr(node, key)
    if not v > 0:
        _fail(f"{prefix}.{key}", v, f"must be > 0{what}")


def _limit(node: Any, prefix: str, key: str = "limit") -> None:
    v = getattr(node, key)
    if v is not None and v < 1:
        _fail(f"{prefix}.{key}", v, f"must be >= 1 (the first N problems), or null for all; "
                                    f"0 and negative values have no meaning")


def _one_of(node: Any, prefix: str, key: str, choices: tuple) -> None:
    v = getattr(node, key)
    if v not in choices:
        _fail(f"{prefix}.{key}", v, "must be one of " + ", ".join("null" if c is None else str(c)
                                                                  for c in choices))


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


# -- one function per schema area -----------------------------------------------------------------

def validate_model(m: Any, prefix: str = "model") -> None:
    _one_of(m, prefix, "dtype", ("auto", "float32", "bfloat16", "float16"))
    if m.path and Path(str(m.path)).expanduser().is_dir():
        from boundlab.models import check_weight_files

        check_weight_files(Path(str(m.path)).expanduser())


def validate_task(t: Any, prefix: str = "task") -> None:
    if t.template is not None and "{question}" not in t.template:
        _fail(f"{prefix}.template", repr(t.template),
              "has no {question} field, so every prompt would be the same text; add {question}")


def validate_probe(p: Any, prefix: str = "probe") -> None:
    _at_least(p, prefix, "n", 1, " (samples per problem; pass@k is reported for k = 1..n)")
    if p.temperature < 0:
        _fail(f"{prefix}.temperature", p.temperature,
              "must be >= 0 (0 = greedy decoding: every sample is the same; > 0 samples)")
    if p.temperature == 0 and p.n > 1:
        print(f"[boundlab] note: {prefix}.temperature=0 is greedy decoding: all {p.n} samples of a "
              f"problem are identical, so pass@k is flat in k", file=sys.stderr, flush=True)
    if not 0 < p.top_p <= 1:
        _fail(f"{prefix}.top_p", p.top_p, "must be in (0, 1] (1 = no nucleus truncation)")
    _at_least(p, prefix, "max_new_tokens", 1)
    if any(not s for s in p.stop):
        _fail(f"{prefix}.stop", list(p.stop), "an empty stop string would cut every completion to "
                                              "nothing; remove it")
    _limit(p, prefix)
    _at_least(p, prefix, "bootstrap_iters", 1, " (bootstrap resamples for the confidence intervals)")
    if not 0 < p.ci < 1:
        _fail(f"{prefix}.ci", p.ci, "must be a confidence level in (0, 1), e.g. 0.95")
    if p.kl_samples < 0:
        _fail(f"{prefix}.kl_samples", p.kl_samples, "must be >= 0 (0 turns the KL view off)")
    tau = p.gpass_tau
    if not 0 < tau <= 1:
        _fail(f"{prefix}.gpass_tau", tau, "must be in (0, 1]: the share of k samples G-Pass@k needs right")
    if p.adaptive:
        _at_least(p, prefix, "n0", 1, " (first-round samples of every problem)")
        if p.n0 > p.n:
            _fail(f"{prefix}.n0", p.n0, f"must be <= {prefix}.n={p.n} (the cap of the rounds)")
        for name in ("epsilon", "delta"):
            if not 0 < getattr(p, name) < 1:
                _fail(f"{prefix}.{name}", getattr(p, name), "must be in (0, 1)")
        if p.budget is not None:
            _at_least(p, prefix, "budget", 1, " (total samples; null = no extension)")
            if p.budget_cap < p.n:
                _fail(f"{prefix}.budget_cap", p.budget_cap, f"must be >= {prefix}.n={p.n}")
    if p.predict_k is not None and p.predict_k <= p.n:
        _fail(f"{prefix}.predict_k", p.predict_k, f"must be > {prefix}.n={p.n}: below it pass@k is "
              f"measured (null = no prediction)")
    _one_of(p, prefix, "keep_text", ("all", "compact"))
    if p.null_seed_offset == 0:
        _fail(f"{prefix}.null_seed_offset", 0, "must not be 0: the base-vs-base null probes the base "
              f"again with another sampling seed, {prefix}.seed + offset (null = no null probe)")


def validate_sampler(s: Any, prefix: str = "sampler") -> None:
    _at_least(s, prefix, "batch_size", 1)
    _one_of(s.hf, f"{prefix}.hf", "engine", ("auto", "generate", "compact-cb"))
    if s.torch_threads is not None:
        _at_least(s, prefix, "torch_threads", 1, " (or null for one per core)")
    if not (s.device in ("auto", "cpu", "cuda") or str(s.device).startswith("cuda:")):
        _fail(f"{prefix}.device", s.device, "must be auto, cpu or cuda")
    vllm = s.vllm
    if not 0 < vllm.gpu_memory_utilization <= 1:
        _fail(f"{prefix}.vllm.gpu_memory_utilization", vllm.gpu_memory_utilization,
              "must be in (0, 1]")
    _at_least(vllm, f"{prefix}.vllm", "tensor_parallel_size", 1)
    _at_least(s.power, f"{prefix}.power", "alpha", 1, " (the power of p sampled; 1 = the base itself)")
    _at_least(s.power, f"{prefix}.power", "mcmc_steps", 0, " (0 = plain samples at T / alpha)")
    if s.name == "vllm" and importlib.util.find_spec("vllm") is None:
        raise ConfigError("sampler=vllm needs vLLM, which is not installed here: install it on a GPU "
                          "machine (pip install 'boundlab[gpu]') or use sampler=hf")
    if (s.name == "vllm" or str(s.device).startswith("cuda")) and not _cuda_available():
        what = "sampler=vllm" if s.name == "vllm" else f"{prefix}.device={s.device}"
        raise ConfigError(f"{what} needs a CUDA GPU and torch sees none here: use sampler=hf with "
                          f"{prefix}.device=auto (or cpu)")


def validate_match_entropy(m: Any, prefix: str = "match_entropy") -> None:
    if m.of is None:
        return
    if not Path(str(m.of)).expanduser().is_dir():
        _fail(f"{prefix}.of", m.of, "must be the base model's folder (as model.path takes it)")
    _at_least(m, prefix, "problems", 1, " (problems in the search subsample)")
    _at_least(m, prefix, "n", 1, " (samples per problem at each temperature tried)")
    _at_least(m, prefix, "steps", 0)
    if not m.t_max_factor > 1:
        _fail(f"{prefix}.t_max_factor", m.t_max_factor, "must be > 1 (the search range is "
              "[probe.temperature, t_max_factor x probe.temperature])")
    if not 0 < m.tol < 1:
        _fail(f"{prefix}.tol", m.tol, "must be in (0, 1) (a fraction of the base's entropy)")
    if m.base_temperature is not None and not m.base_temperature > 0:
        _fail(f"{prefix}.base_temperature", m.base_temperature, "must be > 0 (or null for "
              "probe.temperature)")
    _one_of(m, prefix, "tokens", ("all", "decision"))


def _check_match_entropy(cfg: DictConfig) -> None:
    """match_entropy.of with what it cannot be combined with."""
    m = cfg.get("match_entropy")
    if m is None or m.of is None:
        return
    if cfg.probe.temperature <= 0:
        _fail("probe.temperature", cfg.probe.temperature, "must be > 0 with match_entropy.of (greedy "
              "decoding has no sampling entropy to match)")
    for key in ("samples", "export", "watch"):
        if cfg.get(key):
            _fail(key, cfg.get(key), "cannot be combined with match_entropy.of (it probes two models)")
    if cfg.probe.adaptive:
        _fail("probe.adaptive", True, "cannot be combined with match_entropy.of (fixed n only)")
    if m.tokens == "decision" and cfg.task.name != "toy2":
        _fail("match_entropy.tokens", "decision", f"needs task=toy2 (decision tokens come from its trace "
              f"grammar), not task={cfg.task.name}")


def validate_logger(lg: Any, prefix: str = "logger") -> None:
    _one_of(lg, prefix, "name", ("wandb", "none"))
    _one_of(lg, prefix, "mode", (None, "online", "offline", "disabled"))


def validate_verify(v: Any, prefix: str = "verify") -> None:
    _at_least(v, prefix, "workers", 1)
    _positive(v.math, f"{prefix}.math", "deadline_s", " (seconds per math-verify call)")
    _at_least(v.math, f"{prefix}.math", "max_answer_chars", 1)
    _positive(v.code, f"{prefix}.code", "timeout_s", " (seconds per program)")
    _at_least(v.code, f"{prefix}.code", "memory_mb", 1)


def validate_train_loop(t: Any, prefix: str = "train") -> None:
    _at_least(t, prefix, "max_steps", 1)
    _at_least(t, prefix, "save_steps", 1)
    _at_least(t, prefix, "logging_steps", 1)
    if t.save_total_limit is not None:
        _at_least(t, prefix, "save_total_limit", 1, " (or null to keep every checkpoint)")
    _one_of(t, prefix, "probe_mode", ("inline", "detached"))
    _limit(t, prefix, "train_limit")
    if t.get("generation_chunk") is not None:
        _at_least(t, prefix, "generation_chunk", 1, " (completions per generate call), or null for no chunking")


def _validate_policy_gradient(g: Any, prefix: str) -> None:
    _at_least(g, prefix, "num_iterations", 1)
    _positive(g, prefix, "epsilon")
    if g.epsilon_high is not None:
        _positive(g, prefix, "epsilon_high", f" (or null for {prefix}.epsilon)")


def validate_algo(a: Any, prefix: str = "algo") -> None:
    """The shared knobs, then every family block (all are present whatever the algorithm; which
    combinations an algorithm refuses is declared with it, in boundlab.algos)."""
    _positive(a, prefix, "learning_rate")
    _at_least(a, prefix, "rollouts", 1, " (completions sampled per prompt)")
    _at_least(a, prefix, "per_device_train_batch_size", 1)
    _at_least(a, prefix, "gradient_accumulation_steps", 1)
    _at_least(a, prefix, "max_completion_length", 1)
    _positive(a, prefix, "temperature", " (rollouts are sampled; the log-probs are of logits / T)")
    _at_least(a, prefix, "weight_decay", 0)
    _at_least(a, prefix, "warmup_steps", 0)
    _positive(a, prefix, "max_grad_norm")
    _at_least(a, prefix, "entropy_coef", 0, " (0 = no entropy bonus)")
    if not 0 <= a.shaping.unlikeliness <= 1:
        # At most 1, a correct sample keeps at least 1/G of its reward (rank <= G - 1), so it
        # always outscores a wrong one; above 1 the most likely correct one could score <= 0.
        _fail(f"{prefix}.shaping.unlikeliness", a.shaping.unlikeliness,
              "must be in [0, 1] (0 = off; above 1 a likely correct sample could score <= a wrong one)")
    _validate_policy_gradient(a.grpo, f"{prefix}.grpo")
    o, op = a.onpolicy, f"{prefix}.onpolicy"
    _validate_policy_gradient(o, op)
    _at_least(o, op, "max_refill_rounds", 0)
    _at_least(o, op, "overlong_buffer", 0)
    _at_least(o, op, "overlong_penalty", 0)
    if not 0 < o.gamma <= 1:
        _fail(f"{op}.gamma", o.gamma, "must be in (0, 1]")
    if not 0 <= o.lam <= 1:
        _fail(f"{op}.lam", o.lam, "must be in [0, 1]")
    _at_least(o, op, "vf_coef", 0)
    _positive(o, op, "cliprange_value")
    if o.critic.learning_rate is not None:
        _positive(o.critic, f"{op}.critic", "learning_rate", f" (or null for {prefix}.learning_rate)")
    d, dp = a.distill, f"{prefix}.distill"
    _at_least(d, dp, "teacher_samples", 1)
    _at_least(d, dp, "max_traces_per_problem", 1)
    _positive(d, dp, "teacher_temperature")
    if not 0 <= d.beta <= 1:
        _fail(f"{dp}.beta", d.beta, "must be in [0, 1] (0 forward KL, 1 reverse KL)")


def validate_kl(k: Any, prefix: str = "kl") -> None:
    _at_least(k, prefix, "coef", 0, " (0 = no KL and no reference model)")
    _one_of(k, prefix, "where", ("auto", "none", "loss", "reward"))
    _one_of(k, prefix, "estimator", ("auto", "k1", "k2", "k3"))


def validate_backend(b: Any, prefix: str = "backend") -> None:
    if b.torch_threads is not None:
        _at_least(b, prefix, "torch_threads", 1, " (or null for one per core)")
    if not b.use_cpu and not _cuda_available():
        raise ConfigError(f"backend={b.name} needs a CUDA GPU and torch sees none here: use backend=cpu "
                          f"(or backend=zero2_cpu / zero3_cpu for the DeepSpeed path on CPU processes)")


def validate_rollout(r: Any, prefix: str = "rollout") -> None:
    """Ranges, then the machine: vLLM rollouts need vLLM importable and a CUDA GPU."""
    from boundlab.algos.rollout import ROLLOUTS

    _one_of(r, prefix, "name", ROLLOUTS)
    if not 0 < r.gpu_memory_utilization <= 1:
        _fail(f"{prefix}.gpu_memory_utilization", r.gpu_memory_utilization, "must be in (0, 1]")
    _at_least(r, prefix, "tensor_parallel_size", 1)
    if r.max_model_length is not None:
        _at_least(r, prefix, "max_model_length", 1, " (or null for the model config's)")
    for key in ("port", "group_port"):
        if not 0 < getattr(r, key) < 65536:
            _fail(f"{prefix}.{key}", getattr(r, key), "must be a TCP port (1..65535)")
    _positive(r, prefix, "timeout_s", " (seconds to wait for the vLLM server)")
    if r.name == "hf":
        return
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(f"rollout={r.name} needs vLLM, which is not installed here: install it on a GPU "
                          f"machine (pip install 'boundlab[gpu]') or use rollout=hf")
    if not _cuda_available():
        raise ConfigError(f"rollout={r.name} needs a CUDA GPU and torch sees none here: use rollout=hf")


def validate_peft(p: Any, prefix: str = "peft") -> None:
    if not p.enabled:
        return
    _at_least(p, prefix, "r", 1)
    _positive(p, prefix, "alpha")
    if not 0 <= p.dropout < 1:
        _fail(f"{prefix}.dropout", p.dropout, "must be in [0, 1)")


_AREAS = (
    ("model", validate_model), ("teacher", validate_model), ("task", validate_task),
    ("probe", validate_probe), ("sampler", validate_sampler), ("logger", validate_logger),
    ("verify", validate_verify), ("train", validate_train_loop), ("algo", validate_algo),
    ("kl", validate_kl), ("backend", validate_backend), ("rollout", validate_rollout),
    ("peft", validate_peft), ("match_entropy", validate_match_entropy),
)


def _check_power(cfg: DictConfig) -> None:
    """sampler=power samples p^alpha with p the base at probe.temperature: nothing may change p."""
    s, p = cfg.get("sampler"), cfg.get("probe")
    if s is None or s.get("name") != "power" or p is None:
        return
    if not p.temperature > 0:
        _fail("probe.temperature", p.temperature, "must be > 0 with sampler=power (p is the base at "
              "that temperature)")
    if p.top_p != 1:
        _fail("probe.top_p", p.top_p, "must be 1 with sampler=power (top-p would change p, whose "
              "power it samples)")
    if p.stop:
        _fail("probe.stop", list(p.stop), "must be empty with sampler=power (stop strings would cut "
              "completions outside p)")
    m = cfg.get("match_entropy")
    if m is not None and m.get("of"):
        _fail("match_entropy.of", m.of, "cannot be combined with sampler=power (it records no "
              "per-token entropy to match)")


def validate(cfg: DictConfig) -> None:
    """Check every area the config has (probe.py's and train.py's share most of them): the
    composed DictConfig (ProbeMain or TrainMain), before the entry point types it."""
    for key, check in _AREAS:
        if key in cfg and cfg[key] is not None:
            check(cfg[key], key)
    _check_match_entropy(cfg)
    _check_power(cfg)
    if "algo" in cfg and "train" in cfg:
        from boundlab.algos import check as check_algo
        from boundlab.config import TrainMain, as_typed
        from boundlab.training.app import check_extras

        typed = as_typed(cfg, TrainMain)  # what train.py hands training, typed the same way
        # The algorithm choice (its one validator, boundlab.algos), then reward.outcome_bonus and data.gate.
        check_extras(typed, check_algo(typed).family)
