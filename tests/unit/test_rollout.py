"""The `rollout` group (hf, vllm_colocate, vllm_server): the one-line refusals at start, the TRL config
fields each choice sets (TRL's real GRPOConfig / RLOOConfig / DistillationConfig), and the on-policy
trainer's vLLM path with TRL's VLLMGeneration replaced by a stand-in (vLLM itself needs a GPU)."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from boundlab.algos.rollout import trl_vllm_args, vllm_generation_args
from boundlab.config import ConfigError, register_configs
from boundlab.validate import validate

CONF = Path(__file__).resolve().parents[2] / "conf"
register_configs()
torch.set_num_threads(1)


def _compose(overrides=()):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def _refused(overrides) -> str:
    with pytest.raises(ConfigError) as e:
        validate(_compose(overrides))
    return str(e.value)


@pytest.fixture
def gpu_machine(monkeypatch):
    """A machine with CUDA and vLLM, as far as the start-up checks can tell."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "vllm" else real(name, *a))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


# -- refusals -------------------------------------------------------------------------------------

@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
@pytest.mark.parametrize("rollout", ["vllm_colocate", "vllm_server"])
def test_vllm_rollout_refused_without_vllm(rollout):
    assert _refused([f"rollout={rollout}"]) == (
        f"rollout={rollout} needs vLLM, which is not installed here: install it on a GPU machine "
        f"(pip install 'boundlab[gpu]') or use rollout=hf")


@pytest.mark.parametrize("rollout", ["vllm_colocate", "vllm_server"])
def test_vllm_rollout_refused_without_cuda(monkeypatch, rollout):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "vllm" else real(name, *a))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _refused([f"rollout={rollout}"]) == (
        f"rollout={rollout} needs a CUDA GPU and torch sees none here: use rollout=hf")


@pytest.mark.parametrize("override,line", [
    ("rollout.name=vllm", "rollout.name=vllm: must be one of hf, vllm_colocate, vllm_server"),
    ("rollout.gpu_memory_utilization=0", "rollout.gpu_memory_utilization=0.0: must be in (0, 1]"),
    ("rollout.port=70000", "rollout.port=70000: must be a TCP port (1..65535)"),
    ("rollout.timeout_s=0", "rollout.timeout_s=0.0: must be > 0 (seconds to wait for the vLLM server)"),
])
def test_rollout_ranges(override, line):
    assert _refused([override]) == line


@pytest.mark.parametrize("algo", ["grpo", "dr_grpo", "rloo", "reinforce_pp", "dapo", "ppo",
                                  "onpolicy_distill"])
@pytest.mark.parametrize("rollout", ["vllm_colocate", "vllm_server"])
def test_samplers_accept_vllm_rollouts_on_a_gpu_machine(gpu_machine, algo, rollout):
    validate(_compose([f"algo={algo}", f"rollout={rollout}", "backend=gpu"]))


@pytest.mark.parametrize("algo,line", [
    ("sft_distill", "algo=sft_distill samples no rollouts while it trains (its teacher's traces come from "
                    "the probe's sampler: sampler=vllm samples them with vLLM), so rollout=vllm_colocate "
                    "would be ignored: use rollout=hf"),
    ("remax", "algo=remax: its greedy baseline rollout is not wired to vLLM (one engine samples at one "
              "temperature), so rollout=vllm_colocate is not available: use rollout=hf"),
])
def test_algorithms_that_cannot_use_vllm_rollouts_refuse_them(gpu_machine, algo, line):
    assert _refused([f"algo={algo}", "rollout=vllm_colocate", "backend=gpu"]) == line


def test_vllm_rollout_with_a_cpu_backend_is_refused(gpu_machine):
    assert _refused(["rollout=vllm_server"]) == (
        "rollout=vllm_server samples on the training GPUs' side, but backend=cpu trains on the CPU: use a "
        "GPU backend (gpu, zero2, zero3) or rollout=hf")


# -- TRL config fields ----------------------------------------------------------------------------

def _grpo_args(cfg, tmp_path):
    from trl import GRPOConfig

    from boundlab.algos.grpo import _rl_args
    from boundlab.algos.spec import training_args_common

    kw = training_args_common(cfg, str(tmp_path), [])
    kw.update(use_cpu=True, bf16=False)  # built on this CPU machine; the vLLM fields are what is read
    return GRPOConfig(**kw, **_rl_args(cfg))


def test_hf_rollout_leaves_vllm_off(tmp_path):
    args = _grpo_args(_compose(), tmp_path)
    assert args.use_vllm is False


def test_colocate_sets_trls_fields(tmp_path):
    cfg = _compose(["rollout=vllm_colocate", "rollout.gpu_memory_utilization=0.25",
                    "rollout.tensor_parallel_size=2", "rollout.max_model_length=4096",
                    "rollout.enable_sleep_mode=true"])
    args = _grpo_args(cfg, tmp_path)
    assert (args.use_vllm, args.vllm_mode, args.vllm_gpu_memory_utilization, args.vllm_tensor_parallel_size,
            args.vllm_max_model_length, args.vllm_enable_sleep_mode) == (True, "colocate", 0.25, 2, 4096, True)


def test_server_sets_trls_fields(tmp_path, monkeypatch):
    monkeypatch.setenv("BOUNDLAB_VLLM_HOST", "gpu-node-7")
    cfg = _compose(["rollout=vllm_server", "rollout.port=8123", "rollout.timeout_s=600",
                    "rollout.group_port=51999"])
    args = _grpo_args(cfg, tmp_path)
    assert (args.use_vllm, args.vllm_mode, args.vllm_server_host, args.vllm_server_port,
            args.vllm_server_timeout, args.vllm_group_port, args.vllm_server_base_url) == (
        True, "server", "gpu-node-7", 8123, 600.0, 51999, None)
    cfg = _compose(["rollout=vllm_server", "rollout.base_url=http://10.0.0.5:9000"])
    assert _grpo_args(cfg, tmp_path).vllm_server_base_url == "http://10.0.0.5:9000"


@pytest.mark.parametrize("config", ["RLOOConfig", "DistillationConfig"])
def test_other_trl_configs_take_the_same_fields(config):
    import trl

    cls = getattr(trl, config)
    names = {f.name for f in dataclasses.fields(cls)}
    for rollout in ("vllm_colocate", "vllm_server"):
        kw = trl_vllm_args(_compose([f"rollout={rollout}"]).rollout)
        assert set(kw) <= names, set(kw) - names


def test_onpolicy_engine_arguments_are_trls_vllm_generation_arguments():
    from trl.generation.vllm_generation import VLLMGeneration

    params = inspect.signature(VLLMGeneration.__init__).parameters
    for rollout in ("vllm_colocate", "vllm_server"):
        kw = vllm_generation_args(_compose([f"rollout={rollout}", "algo=reinforce_pp", "algo.temperature=0.7"]))
        assert set(kw) <= set(params), set(kw) - set(params)
        # Sampling as the trainer's own generate: T, no truncation, no penalty.
        assert (kw["temperature"], kw["top_p"], kw["top_k"], kw["min_p"], kw["repetition_penalty"]) == (
            0.7, 1.0, 0, 0.0, 1.0)
    assert vllm_generation_args(_compose(["rollout=vllm_server", "algo=dapo"]))["mode"] == "server"


# -- the on-policy trainer's vLLM path -----------------------------------------------------------

class FakeEngine:
    """Stands in for TRL's VLLMGeneration: records weight pushes and returns fixed completions."""
    instances: list["FakeEngine"] = []

    def __init__(self, model, accelerator, processing_class, **kw):
        self.kw, self.syncs, self.calls = kw, 0, []
        self.tok = processing_class
        FakeEngine.instances.append(self)

    def sync_weights(self):
        self.syncs += 1

    def generate(self, prompts, images, num_generations):
        self.calls.append((prompts, num_generations))
        eos = self.tok.eos_token_id
        texts = ["The answer is \\boxed{42}", "42", "", "The answer is \\boxed{7}"]
        out = []
        for i, _ in enumerate(prompts):
            ids = self.tok(texts[i % 4], add_special_tokens=False)["input_ids"]
            out.append(ids + [eos] if i % 2 == 0 else ids)  # some end with EOS, some hit the length cap
        return prompts, out, None, None


def test_onpolicy_trainer_samples_rounds_through_vllm(tiny_lm, tmp_path, monkeypatch):
    import trl.generation.vllm_generation as vg
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainingArguments

    from boundlab.algos.onpolicy import OnPolicyTrainer, settings_from_cfg

    monkeypatch.setattr(vg, "VLLMGeneration", FakeEngine)
    FakeEngine.instances.clear()
    common = ["algo=reinforce_pp_baseline", "algo.rollouts=2", "algo.per_device_train_batch_size=4",
              "algo.max_completion_length=16"]
    # Settings as a GPU run would have them; this CPU test trains nothing, it samples one round.
    cfg = _compose(common + ["rollout=vllm_server"])
    settings = dataclasses.replace(settings_from_cfg("reinforce_pp_baseline", _compose(common)),
                                   vllm=vllm_generation_args(cfg))
    tok = AutoTokenizer.from_pretrained(tiny_lm)
    model = AutoModelForCausalLM.from_pretrained(tiny_lm)

    def reward(prompts, completions, **kw):
        return [1.0 if "\\boxed{42}" in c else 0.0 for c in completions]

    trainer = OnPolicyTrainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), use_cpu=True,
                                                                  per_device_train_batch_size=4, report_to=[]),
                              processing_class=tok, train_dataset=Dataset.from_list([{"prompt": "1+1="}]),
                              reward_funcs=[reward], settings=settings)
    engine, = FakeEngine.instances
    assert engine.kw["mode"] == "server" and engine.kw["temperature"] == cfg.algo.temperature
    prompts = ["Find 6*7.", "Find the number of minutes"]
    out = trainer._generate(trainer.model, prompts, {})
    trainer._generate(trainer.model, prompts, {})  # same optimizer step: no new weight push
    assert engine.syncs == 1
    sent, k = engine.calls[0]
    assert k == 2 and sent == [tok(p, add_special_tokens=False)["input_ids"] for p in prompts for _ in range(2)]
    # The prompt rows are the tokenised prompts, `rollouts` consecutive rows each.
    assert out.prompt_ids.shape[0] == 4
    assert torch.equal(out.prompt_ids[out.prompt_mask.bool()][: len(sent[0])], torch.tensor(sent[0]))
    # Completions come back right-padded; the mask is the sampled tokens (EOS included), never padding,
    # also for rows that end without the tokenizer's EOS (the length cap, another end token).
    assert out.completion_mask.sum(1).tolist() == [len(tok("The answer is \\boxed{42}")["input_ids"]) + 1,
                                                   len(tok("42")["input_ids"]), 1,
                                                   len(tok("The answer is \\boxed{7}")["input_ids"])]
    assert (out.completion_ids[out.completion_mask == 0] == tok.pad_token_id).all()
    assert out.rewards.tolist() == [1.0, 0.0, 0.0, 0.0]
    trainer.state.global_step = 1
    trainer._generate(trainer.model, prompts, {})
    assert engine.syncs == 2
