"""vLLM sampling for GPU nodes (optional extra `gpu`; not importable on the CPU path).

All rows of a probe chunk go to vLLM in one call with `n=count` per prompt; vLLM schedules the
batches itself and shares each prompt's KV cache across its n samples.

vLLM loads weights from a folder only. A model that exists only in memory (a LoRA adapter
checkpoint merged into its base) is saved with its tokenizer to a temporary folder first
(`save_for_vllm`, under $TMPDIR: a 7B model needs ~15 GB there), which the sampler deletes on close.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Sequence

from boundlab.sampling.base import Completion, GenSettings, Sampler


class VLLMSampler(Sampler):
    name = "vllm"
    rows_per_call = 8192

    def __init__(self, model_cfg: Any, gpu_memory_utilization: float = 0.85,
                 tensor_parallel_size: int = 1, path: str | None = None,
                 owned_dir: Path | None = None):
        self.owned_dir = owned_dir  # deleted on close: a merged copy saved for this sampler
        try:
            from vllm import LLM
        except ImportError as e:  # pragma: no cover - GPU path
            self.close()
            raise ImportError("sampler=vllm needs the gpu extra: pip install 'boundlab[gpu]'") from e
        from boundlab.models import resolve_model_path

        path = path or resolve_model_path(model_cfg)
        self.llm = LLM(model=path, dtype=model_cfg.dtype if model_cfg.dtype != "auto" else "auto",
                       gpu_memory_utilization=gpu_memory_utilization,
                       tensor_parallel_size=tensor_parallel_size,
                       trust_remote_code=model_cfg.trust_remote_code)

    def close(self) -> None:
        if self.owned_dir is not None:
            shutil.rmtree(self.owned_dir, ignore_errors=True)
            self.owned_dir = None

    def generate(self, requests: Sequence[tuple[str, int]], settings: GenSettings,
                 seed: int) -> list[list[Completion]]:  # pragma: no cover - GPU path
        from vllm import SamplingParams

        outs = []
        prompts = [p for p, _ in requests]
        params = [SamplingParams(n=count, temperature=settings.temperature, top_p=settings.top_p,
                                 top_k=-1, max_tokens=settings.max_new_tokens,
                                 stop=list(settings.stop) or None, seed=seed + i)
                  for i, (_, count) in enumerate(requests)]
        for req in self.llm.generate(prompts, params, use_tqdm=False):
            outs.append([
                Completion(o.text, len(o.token_ids),
                           {"stop": "stop" if o.stop_reason is not None and isinstance(o.stop_reason, str) else "eos",
                            "length": "length"}.get(o.finish_reason or "stop", "eos"))
                for o in req.outputs
            ])
        return outs


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
