"""Hugging Face `generate`, batched across problems and samples, on CPU or GPU.

Every call packs rows from several problems into one left-padded batch: on a small model per-call
overhead dominates, so this beats `generate(num_return_sequences=n)` per problem by a wide margin
(see bench/bench_probe.py). The probe sorts problems by prompt length first, which keeps padding low.

With `engine="auto"` a small float32 Llama on CPU (the toy worlds' models) is sampled by
`boundlab.sampling.compact` instead of `generate`: same distribution, other draws, and the probe key
says so (`key_engine`).

With `entropy=True` (sampler.hf.entropy, the default) each completion carries its mean per-token
entropy: under `generate`, a logits processor placed before transformers' own temperature and top-p
warpers applies the same two warpers to a copy of the scores and records the entropy of the result,
returning the scores untouched (the draws do not change). That it sees the scores before those
warpers is transformers' order (5.x: custom processors are merged in ahead of them); if that ever
changed, tests/unit/test_entropy.py would fail (it recomputes every recorded mean from the model's
forward with `engine=generate` at T = 0.7, top-p 0.9). A model whose generation config turns on
another warper (min_p, typical_p, epsilon or eta cutoff, top_h) records None: the copy would not be
the distribution sampled from. With stop strings, a row's entropy covers its n_tokens, as the token
count does.

A vision-language model comes with its processor (`processor=`, loaded with `AutoProcessor`): each
row's images (a visual task's `Problem.images`, handed over by the probe as `images=`) go through
the processor with the prompt, whose image token the processor expands, and `generate` gets the
pixel values; the compact decoder (`engine=auto`, a float32 Llava on CPU) decodes from the prompt
embeddings the model's own vision tower and projector give (`compact.vlm_prompt_embeds`).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from boundlab.sampling.base import (Completion, GenSettings, Sampler, add_special_tokens_for, cut_at_stop,
                                  eos_and_pad, token_entropy)

# Generation-config warpers that would follow the recorder, which does not replicate them.
_OTHER_WARPERS = (("min_p", lambda v: v is not None), ("typical_p", lambda v: v is not None and v < 1.0),
                  ("epsilon_cutoff", lambda v: v is not None and 0.0 < v < 1.0),
                  ("eta_cutoff", lambda v: v is not None and 0.0 < v < 1.0),
                  ("top_h", lambda v: v is not None))


class EntropyRecorder:
    """A `generate` logits processor: per step, the entropy of each row's sampling distribution
    (the scores after temperature and top-p, as transformers' own warpers compute them)."""

    def __init__(self, temperature: float, top_p: float):
        from transformers import TemperatureLogitsWarper, TopPLogitsWarper

        self.warpers = [TemperatureLogitsWarper(temperature)] if temperature != 1.0 else []
        if top_p < 1.0:
            self.warpers.append(TopPLogitsWarper(top_p=top_p))
        self.steps: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        warped = scores
        for w in self.warpers:  # both return a new tensor: `scores` itself is never changed
            warped = w(input_ids, warped)
        self.steps.append(token_entropy(warped))
        return scores

    def row_means(self, lengths: list[int]) -> list[float | None]:
        """Each row's mean over its first `lengths[i]` steps."""
        if not self.steps:
            return [None] * len(lengths)
        per = torch.stack(self.steps, dim=1).double().cpu()  # [B, steps]
        return [float(per[i, :n].mean()) if n > 0 else None for i, n in enumerate(lengths)]


class HFSampler(Sampler):
    name = "hf"

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 64, engine: str = "auto",
                 entropy: bool = True, processor: Any = None):
        from boundlab.sampling.compact import CompactDecoder

        self.model = model
        self.processor = processor
        # With a processor, its own tokenizer decodes (it knows the image token the processor adds).
        self.tok = tokenizer = processor.tokenizer if processor is not None else tokenizer
        self.rows_per_call = int(batch_size)
        self.device = next(model.parameters()).device
        self.eos_ids, self.pad_id = eos_and_pad(model, tokenizer)
        # compact-cb: continuous batching (boundlab.sampling.refill), `batch_size` rows wide; the
        # probe hands it REFILL_CHUNK batches' worth of rows per call so the queue keeps the batch full.
        self.refill = None
        if engine == "compact-cb":
            from boundlab.sampling.refill import REFILL_CHUNK, RefillDecoder

            self.refill = RefillDecoder(model)
            self.batch_width = self.rows_per_call
            self.rows_per_call = self.rows_per_call * REFILL_CHUNK
        self.compact = None if self.refill is not None else CompactDecoder.for_model(model, engine)
        self.entropy = bool(entropy)
        gc = getattr(model, "generation_config", None)
        # The recorder replicates temperature and top-p only (see the module docstring).
        self._generate_entropy = self.entropy and not any(
            ok(getattr(gc, name, None)) for name, ok in _OTHER_WARPERS)

    @property
    def accepts_images(self) -> bool:
        return self.processor is not None

    def key_engine(self, settings: GenSettings) -> str | None:
        """"compact" when these settings are sampled by the compact decoder (stop strings go
        through `generate`), None for `generate`: the probe key records the former."""
        if settings.stop:
            return None
        if self.refill is not None:
            return "compact-cb"
        return "compact" if self.compact is not None else None

    def _encode(self, prompts: list[str], images: list[list[str]] | None = None
                ) -> dict[str, torch.Tensor]:
        # The same rule as every sampler's prompt tokens (base.prompt_token_ids): no second BOS.
        special = add_special_tokens_for(self.tok, prompts)
        if self.processor is None:
            enc = self.tok(prompts, return_tensors="pt", padding=True, add_special_tokens=special)
            return {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        flat = [_load_image(f) for row in images for f in row]
        enc = self.processor(text=prompts, images=flat or None, return_tensors="pt", padding=True,
                             add_special_tokens=special)
        out = {k: v.to(self.device) for k, v in enc.items() if isinstance(v, torch.Tensor)}
        if "pixel_values" in out:
            out["pixel_values"] = out["pixel_values"].to(self.model.dtype)
        return out

    @torch.inference_mode()
    def generate(self, requests: Sequence[tuple[str, int]], settings: GenSettings,
                 seed: int, images: Sequence[list[str]] | None = None) -> list[list[Completion]]:
        """`images`: per request, its image files (a visual task); required with a processor."""
        if (images is None) != (self.processor is None):
            raise ValueError("the hf sampler of a vision-language model needs each prompt's images "
                             "(images=...), and a text model takes none" if self.processor is not None
                             else "images were given, but this hf sampler has no processor: set "
                             "model.vision=true for a vision-language model")
        if self.key_engine(settings) == "compact-cb":
            return self._refill_requests(requests, settings, seed)
        rows = [p for p, count in requests for _ in range(count)]
        row_images = ([imgs for (_, count), imgs in zip(requests, images) for _ in range(count)]
                      if images is not None else None)
        out: list[Completion] = []
        for start in range(0, len(rows), self.rows_per_call):
            end = start + self.rows_per_call
            out.extend(self._generate_rows(rows[start:end], settings, seed + start,
                                           row_images[start:end] if row_images is not None else None))
        grouped, i = [], 0
        for _, count in requests:
            grouped.append(out[i : i + count])
            i += count
        return grouped

    def _generate_rows(self, rows: list[str], s: GenSettings, seed: int,
                       images: list[list[str]] | None = None) -> list[Completion]:
        enc = self._encode(rows, images)
        if self.key_engine(s) == "compact":
            return self._compact_rows(enc, s, seed)
        torch.manual_seed(seed)
        kwargs: dict[str, Any] = dict(
            max_new_tokens=s.max_new_tokens,
            pad_token_id=self.pad_id,
            eos_token_id=sorted(self.eos_ids),
            # Under a ZeRO-3 run transformers would sync every decoding step across ranks; the
            # probe samples a whole model on one rank, so that all_reduce would hang the others.
            synced_gpus=False,
        )
        recorder = None
        if s.temperature > 0:
            # top_k=0 switches off transformers' default top-k of 50, which would bias pass@k.
            kwargs.update(do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=0)
            if self._generate_entropy:
                from transformers import LogitsProcessorList

                recorder = EntropyRecorder(s.temperature, s.top_p)
                kwargs["logits_processor"] = LogitsProcessorList([recorder])
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if s.stop:
            kwargs.update(stop_strings=list(s.stop), tokenizer=self.tok)
        seq = self.model.generate(**enc, **kwargs)
        gen = seq[:, enc["input_ids"].shape[1] :].tolist()
        texts_ids, counts, finishes = [], [], []
        for ids in gen:
            end = len(ids)
            finish = "length"
            for j, t in enumerate(ids):
                if t in self.eos_ids:
                    end, finish = j + 1, "eos"
                    break
            texts_ids.append(ids[:end])
            counts.append(end)
            finishes.append(finish)
        texts = self.tok.batch_decode(texts_ids, skip_special_tokens=True)
        ents = recorder.row_means(counts) if recorder is not None else [None] * len(counts)
        result = []
        for text, n_tok, fin, ent in zip(texts, counts, finishes, ents):
            if s.stop:
                text, hit = cut_at_stop(text, s.stop)
                if hit:
                    fin = "stop"
            result.append(Completion(text, n_tok, fin, ent))
        return result

    def _compact_rows(self, enc: dict[str, torch.Tensor], s: GenSettings, seed: int) -> list[Completion]:
        from boundlab.sampling.compact import vlm_prompt_embeds

        gen = torch.Generator().manual_seed(seed)
        embeds = (vlm_prompt_embeds(self.model, enc["input_ids"], enc["pixel_values"])
                  if "pixel_values" in enc else None)
        drawn = self.compact.sample(enc["input_ids"], enc["attention_mask"], s.max_new_tokens,
                                    self.eos_ids, s.temperature, s.top_p, gen, entropy=self.entropy,
                                    embeds=embeds)
        texts = self.tok.batch_decode([d[0] for d in drawn], skip_special_tokens=True)
        # (ids, finish) rows, or (ids, finish, mean entropy) with entropy on.
        return [Completion(text, len(d[0]), d[1], d[2] if len(d) > 2 else None)
                for text, d in zip(texts, drawn)]


    def _refill_requests(self, requests: Sequence[tuple[str, int]], s: GenSettings,
                         seed: int) -> list[list[Completion]]:
        """All of `requests` in one continuously batched run (boundlab.sampling.refill)."""
        from boundlab.sampling.base import prompt_token_ids

        ids = prompt_token_ids(self.tok, [p for p, _ in requests])
        drawn = self.refill.sample(ids, [c for _, c in requests], self.batch_width, s.max_new_tokens,
                                   self.eos_ids, s.temperature, s.top_p, seed, entropy=self.entropy)
        out = []
        for rows in drawn:
            texts = self.tok.batch_decode([d[0] for d in rows], skip_special_tokens=True)
            out.append([Completion(text, len(d[0]), d[1], d[2] if len(d) > 2 else None)
                        for text, d in zip(texts, rows)])
        return out


def _load_image(path: str):
    """An image file as an RGB PIL image, read fully (no file handle kept open)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read image {path!r}: {e}") from None
