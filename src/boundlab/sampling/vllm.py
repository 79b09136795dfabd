"""vLLM sampling for GPU nodes (optional extra `gpu`; vLLM is imported only when a sampler is built).

All rows of a probe chunk go to vLLM in one call with `n=count` per prompt; vLLM schedules the
batches itself and shares each prompt's KV cache across its n samples.

What makes a vLLM probe the same experiment as an hf one (`build_requests`, a pure function):
- The same prompt tokens. The task renders the prompt text (chat template included) with the same
  tokenizer; it is tokenised here by the hf sampler's own rule (`prompt_token_ids`: no second BOS when
  the template has one) and handed to vLLM as token ids, so vLLM's own tokenisation (which adds
  special tokens to text prompts) cannot differ.
- The same distribution: temperature, top_p, no top-k or min-p truncation, no repetition penalty,
  `max_tokens` = max_new_tokens, stop strings cut from the text (not kept in it), special tokens
  skipped in the text.
- Seeds per row, as the hf sampler's are per batch row: vLLM seeds the j-th of a request's n samples
  with `seed + j`, so request i gets `seed + (rows before it)`. Seeding request i with `seed + i`
  (this module's first version) gave the j-th sample of request i and the (j-1)-th of request i+1 the
  same random stream: samples of different problems were correlated.
  The draws still differ from hf's (another engine), so the probe key records the engine.

vLLM loads weights from a folder only. A model that exists only in memory (a LoRA adapter
checkpoint merged into its base) is saved with its tokenizer to a temporary folder first
(`save_for_vllm`, under $TMPDIR: a 7B model needs ~15 GB there), which the sampler deletes on close.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from boundlab.sampling.base import Completion, GenSettings, Sampler, prompt_token_ids

if TYPE_CHECKING:
    from boundlab.config import ModelConfig


def build_requests(tokenizer: Any, requests: Sequence[tuple[str, int]], settings: GenSettings, seed: int,
                   params_cls: Any) -> tuple[list[dict[str, list[int]]], list[Any]]:
    """(vLLM prompts, one SamplingParams per prompt) for `requests` [(prompt text, count)]. `params_cls`
    is vllm.SamplingParams on a GPU machine (anything taking the same keywords in tests)."""
    texts = [p for p, _ in requests]
    ids = prompt_token_ids(tokenizer, texts)
    prompts, params, row = [], [], 0
    for tokens, (_, count) in zip(ids, requests):
        if count < 1:
            raise ValueError(f"a vLLM request needs n >= 1 samples, got {count}")
        prompts.append({"prompt_token_ids": tokens})
        kw: dict[str, Any] = dict(n=count, max_tokens=settings.max_new_tokens, seed=seed + row,
                                  stop=list(settings.stop) or None, include_stop_str_in_output=False,
                                  skip_special_tokens=True, repetition_penalty=1.0, min_p=0.0)
        if settings.temperature > 0:
            kw.update(temperature=settings.temperature, top_p=settings.top_p)
        else:  # greedy, as the hf sampler's do_sample=False
            kw.update(temperature=0.0, top_p=1.0)
        params.append(params_cls(**kw))
        row += count
    return prompts, params


def completion_from_output(o: Any) -> Completion:
    """One vLLM CompletionOutput as a Completion. finish_reason "stop" means an end token
    (stop_reason None or a token id) or a stop string (stop_reason the string)."""
    if o.finish_reason == "length":
        finish = "length"
    elif o.finish_reason == "stop":
        finish = "stop" if isinstance(o.stop_reason, str) else "eos"
    else:
        # "abort" and anything newer: a sample that did not end by itself must not be scored.
        raise RuntimeError(f"vLLM ended a sample with finish_reason={o.finish_reason!r}")
    return Completion(o.text, len(o.token_ids), finish)


class VLLMSampler(Sampler):
    name = "vllm"
    rows_per_call = 8192

    def __init__(self, model_cfg: ModelConfig, gpu_memory_utilization: float = 0.85,
                 tensor_parallel_size: int = 1, path: str | None = None,
                 owned_dir: Path | None = None, tokenizer: Any = None):
        self.owned_dir = owned_dir  # deleted on close: a merged copy saved for this sampler
        try:
            from vllm import LLM
        except ImportError as e:  # pragma: no cover - GPU path
            self.close()
            raise ImportError("sampler=vllm needs the gpu extra: pip install 'boundlab[gpu]'") from e
        from boundlab.models import load_tokenizer, resolve_model_path

        path = path or resolve_model_path(model_cfg)
        self.tok = tokenizer if tokenizer is not None else load_tokenizer(model_cfg, path)
        self.llm = LLM(model=path, dtype=model_cfg.dtype if model_cfg.dtype != "auto" else "auto",
                       gpu_memory_utilization=gpu_memory_utilization,
                       tensor_parallel_size=tensor_parallel_size,
                       trust_remote_code=model_cfg.trust_remote_code)

    def key_engine(self, settings: GenSettings) -> str:
        """vLLM draws other samples than generate: the probe key keeps its store apart."""
        return "vllm"

    def close(self) -> None:
        if self.owned_dir is not None:
            shutil.rmtree(self.owned_dir, ignore_errors=True)
            self.owned_dir = None

    def generate(self, requests: Sequence[tuple[str, int]], settings: GenSettings,
                 seed: int) -> list[list[Completion]]:
        from vllm import SamplingParams

        prompts, params = build_requests(self.tok, requests, settings, seed, SamplingParams)
        outs = self.llm.generate(prompts, params, use_tqdm=False)
        grouped = [[completion_from_output(o) for o in req.outputs] for req in outs]
        got = [len(g) for g in grouped]
        if got != [c for _, c in requests]:
            raise RuntimeError(f"vLLM returned {got} samples for requests of {[c for _, c in requests]}")
        return grouped


def save_for_vllm(model: Any, tokenizer: Any) -> Path:
    """Save an in-memory HF model and its tokenizer to a fresh temporary folder vLLM can load."""
    folder = Path(tempfile.mkdtemp(prefix="boundlab-merged-"))
    try:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder
