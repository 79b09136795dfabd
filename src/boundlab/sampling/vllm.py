"""vLLM sampling for GPU nodes (optional extra `gpu`; not importable on the CPU path).

All rows of a probe chunk go to vLLM in one call with `n=count` per prompt; vLLM schedules the
batches itself and shares each prompt's KV cache across its n samples.
"""

from __future__ import annotations

from typing import Any, Sequence

from boundlab.sampling.base import Completion, GenSettings, Sampler


class VLLMSampler(Sampler):
    name = "vllm"
    rows_per_call = 8192

    def __init__(self, model_cfg: Any, sampler_cfg: Any):
        try:
            from vllm import LLM
        except ImportError as e:  # pragma: no cover - GPU path
            raise ImportError("sampler=vllm needs the gpu extra: pip install 'boundlab[gpu]'") from e
        from boundlab.models import resolve_model_path

        path = resolve_model_path(model_cfg)
        self.llm = LLM(model=path, dtype=model_cfg.dtype if model_cfg.dtype != "auto" else "auto",
                       gpu_memory_utilization=sampler_cfg.gpu_memory_utilization,
                       tensor_parallel_size=sampler_cfg.tensor_parallel_size,
                       trust_remote_code=model_cfg.trust_remote_code)

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
