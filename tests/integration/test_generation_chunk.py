"""train.generation_chunk (issue 39): our trainer samples a micro-step's rollouts in generate calls of
at most that many rows. Greedy decoding gives the same completions chunked or not (the padding and
concatenation are exact); sampled chunks are the same for the same seed, and a chunk at least the
micro-step's size is the unchunked path itself; 256 rollouts per prompt train a step with chunks of 64,
in process (no generate call above 64 rows) and through train.py under debug=smoke. Refusals: tests/unit/test_outcome_gate.py."""

import dataclasses
import os
import subprocess
import sys

import pytest
import torch

from onpolicy_build import ROOT, build_trainer, train_cfg  # tests/integration, shared

torch.set_num_threads(1)
BASE = ("algo=grpo_onpolicy", "debug=smoke", "algo.max_completion_length=8")
PROMPTS = ["Q:1-3*4;", "Q:22-3*4;"]


def _trainer(tmp_path, *over):
    return build_trainer(train_cfg(*BASE, *over), tmp_path)


def _round(t, chunk, seed=0):
    t.s = dataclasses.replace(t.s, generation_chunk=chunk)
    torch.manual_seed(seed)
    return t._generate(t.model, PROMPTS, {"problem_id": ["p1", "p2"]})


def test_greedy_chunked_equals_unchunked(tmp_path):
    t = _trainer(tmp_path, "algo.rollouts=4", "algo.per_device_train_batch_size=8")
    t._sample_config = t._greedy_config  # greedy: the completions cannot depend on how rows are batched
    whole, chunked = _round(t, None), _round(t, 3)  # chunks of 3 rows cut across the two prompts
    for f in ("completion_ids", "completion_mask", "rewards", "prompt_ids"):
        assert torch.equal(getattr(whole, f), getattr(chunked, f)), f


def test_sampled_chunks_repeat_with_the_seed_and_a_full_chunk_is_unchunked(tmp_path):
    t = _trainer(tmp_path, "algo.rollouts=4", "algo.per_device_train_batch_size=8")
    a, b = _round(t, 3, seed=5), _round(t, 3, seed=5)
    assert torch.equal(a.completion_ids, b.completion_ids)
    whole, full = _round(t, None, seed=5), _round(t, 4 * 2, seed=5)
    assert torch.equal(whole.completion_ids, full.completion_ids)


def test_256_rollouts_per_prompt_train_a_step_in_chunks_of_64(tmp_path):
    t = _trainer(tmp_path, "algo.rollouts=256", "algo.per_device_train_batch_size=256",
                 "train.generation_chunk=64", "train.max_steps=1", "train.save_steps=1")
    assert t.s.generation_chunk == 64
    rows, inner = [], t.model.generate

    def spy(*args, **kw):
        rows.append(kw["input_ids"].size(0))
        return inner(*args, **kw)

    t.model.generate = spy
    before = {n: p.detach().clone() for n, p in t.model.named_parameters()}
    t.train()
    assert rows == [64, 64, 64, 64]  # one prompt's 256 rollouts, four calls
    assert any(not torch.equal(p, before[n]) for n, p in t.model.named_parameters())


@pytest.mark.slow
def test_256_rollouts_under_smoke_through_train_py(tmp_path):
    import json

    run = tmp_path / "run"
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "s.sqlite"), WANDB_MODE="offline",
               WANDB_SILENT="true", HF_HUB_OFFLINE="1")
    env.pop("WANDB_SERVICE", None)
    p = subprocess.run([sys.executable, str(ROOT / "train.py"), "debug=smoke", "algo=grpo_onpolicy",
                        "backend.torch_threads=1", "algo.rollouts=256", "algo.per_device_train_batch_size=256",
                        "train.generation_chunk=64", "train.max_steps=1", "train.save_steps=1",
                        f"hydra.run.dir={run}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    state = json.loads((run / "checkpoints" / "checkpoint-1" / "trainer_state.json").read_text())
    assert state["global_step"] == 1 and (run / "training_done").is_file()
