"""A decoding loop for small Llama models on CPU: the toy worlds' sampler.

On a ~1M-parameter model `transformers.generate` spends most of its time outside the matmuls (per-step
mask building, cache bookkeeping, logits processors), and keeps decoding rows that already ended
until the longest row of the batch ends. This loop runs the same network with the fewest ops per
step: one fused QKV and one fused gate/up matmul per layer, a preallocated KV cache written in place,
each distinct prompt of a batch prefilled once (a problem's n samples share it), and rows dropped
from the batch (cache included) once they emit EOS. It samples from the same
distribution as `generate(do_sample=True, temperature, top_p, top_k=0)`; the random draws differ.

`CompactDecoder.supports(model)` says whether a model is one it can run exactly (a float32
LlamaForCausalLM on CPU: default RoPE, no biases, SiLU, or a Llava whose language model is one);
anything else goes through `generate`. For a Llava (the visual toy world's VLM) the prompt goes in as
embeddings (`vlm_prompt_embeds`: the model's own vision tower and projector, their features put in
the image tokens' places, as Llava's forward does), and the loop decodes from there. tests/unit/test_compact_sampler.py
checks its logits against the model's own forward, with left padding.

With `entropy=True` it also returns each row's mean per-token entropy of the distribution its tokens
were drawn from (after temperature and top-p), from the logits it already has: no second forward.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from boundlab.sampling.base import token_entropy


def _language_model(model: Any) -> tuple[Any, Any]:
    """(config, decoder stack) of a LlamaForCausalLM or of a Llava's language model."""
    if type(model).__name__ == "LlavaForConditionalGeneration":
        return model.config.text_config, model.model.language_model
    return model.config, model.model


@torch.inference_mode()
def vlm_prompt_embeds(model: Any, ids: torch.Tensor, pixel_values: torch.Tensor) -> torch.Tensor:
    """A Llava's input embeddings for `ids` with its image features in the image tokens' places
    (what LlavaModel.forward builds before its language model runs)."""
    cfg = model.config
    emb = F.embedding(ids, model.get_input_embeddings().weight)
    out = model.model.get_image_features(pixel_values=pixel_values.to(emb.dtype),
                                         vision_feature_layer=cfg.vision_feature_layer,
                                         vision_feature_select_strategy=cfg.vision_feature_select_strategy)
    feats = torch.cat(list(out.pooler_output)).to(emb.dtype)
    mask = ids == cfg.image_token_id
    if int(mask.sum()) != feats.shape[0]:
        raise ValueError(f"{int(mask.sum())} image tokens in the prompts but {feats.shape[0]} image "
                         f"features: every prompt must hold its images' tokens")
    emb[mask] = feats.reshape(-1, emb.shape[-1])
    return emb


class CompactDecoder:
    def __init__(self, model: Any):
        cfg, inner = _language_model(model)
        self.n_heads = cfg.num_attention_heads
        self.n_kv = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.eps = cfg.rms_norm_eps
        self.embed = inner.embed_tokens.weight.detach()
        self.lm_head = model.lm_head.weight.detach()
        self.final_norm = inner.norm.weight.detach()
        self.layers = []
        for layer in inner.layers:
            a, m = layer.self_attn, layer.mlp
            self.layers.append((
                layer.input_layernorm.weight.detach(),
                torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]).detach(),
                a.o_proj.weight.detach(),
                layer.post_attention_layernorm.weight.detach(),
                torch.cat([m.gate_proj.weight, m.up_proj.weight]).detach(),
                m.down_proj.weight.detach(),
            ))
        self.scale = self.head_dim ** -0.5
        rope = getattr(cfg, "rope_parameters", None) or {}
        theta = rope.get("rope_theta", getattr(cfg, "rope_theta", 10000.0))
        # As transformers' default RoPE computes it (float32 inverse frequencies, cos/sin of pos*inv).
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.int64).float()
                                         / self.head_dim))
        self._rope_table(cfg.max_position_embeddings)

    def _rope_table(self, length: int) -> None:
        freqs = torch.outer(torch.arange(length, dtype=torch.float32), self.inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()

    @classmethod
    def for_model(cls, model: Any, engine: str = "auto") -> "CompactDecoder | None":
        """The decoder for `model` when `engine` is auto and it can run the model exactly, else None
        (the caller samples with `generate`)."""
        if engine not in ("auto", "generate"):
            raise ValueError(f"sampler.hf.engine must be auto or generate, not {engine!r}")
        return cls(model) if engine == "auto" and cls.supports(model) else None

    @staticmethod
    def supports(model: Any) -> bool:
        name = type(model).__name__
        if name not in ("LlamaForCausalLM", "LlavaForConditionalGeneration"):
            return False
        cfg, _ = _language_model(model)
        if name == "LlavaForConditionalGeneration" and cfg.model_type != "llama":
            return False
        rope = getattr(cfg, "rope_parameters", None)
        if rope is None:  # older configs: rope_scaling None means the default RoPE
            rope = getattr(cfg, "rope_scaling", None) or {}
        rope_type = rope.get("rope_type", rope.get("type", "default")) if isinstance(rope, dict) else None
        return (rope_type == "default" and not getattr(cfg, "attention_bias", False)
                and not getattr(cfg, "mlp_bias", False) and cfg.hidden_act == "silu"
                and getattr(cfg, "pretraining_tp", 1) == 1
                and next(model.parameters()).device.type == "cpu"
                and all(p.dtype == torch.float32 for p in model.parameters()))

    def _norm(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def _rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rot * sin

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, cache: list[torch.Tensor], start: int,
                bias: torch.Tensor, embeds: torch.Tensor | None = None) -> torch.Tensor:
        """Logits at the last position. `ids`, `pos`: [B, T]; each layer's keys and values go to
        `cache[layer][0|1, :, :, start:start+T]`; `bias`: [B, 1, T, start+T], 0 where a query may
        attend and -inf where not. `embeds` [B, T, H], when given, replaces the embedding of `ids`."""
        b, t = ids.shape
        h = F.embedding(ids, self.embed) if embeds is None else embeds
        cos, sin = self.cos[pos][:, None], self.sin[pos][:, None]  # [B, 1, T, hd]
        nh, nkv, hd = self.n_heads, self.n_kv, self.head_dim
        end = start + t
        for (w_in, w_qkv, w_o, w_post, w_gu, w_down), kv in zip(self.layers, cache):
            qkv = F.linear(self._norm(h, w_in), w_qkv)
            q, k, v = qkv.split([nh * hd, nkv * hd, nkv * hd], dim=-1)
            q = self._rope(q.view(b, t, nh, hd).transpose(1, 2), cos, sin)
            kv[0, :, :, start:end] = self._rope(k.view(b, t, nkv, hd).transpose(1, 2), cos, sin)
            kv[1, :, :, start:end] = v.view(b, t, nkv, hd).transpose(1, 2)
            keys, vals = kv[0, :, :, :end], kv[1, :, :, :end]
            if nkv != nh:
                keys = keys.repeat_interleave(nh // nkv, dim=1)
                vals = vals.repeat_interleave(nh // nkv, dim=1)
            scores = torch.matmul(q, keys.transpose(-1, -2)) * self.scale + bias
            att = torch.matmul(scores.softmax(-1), vals)
            h = h + F.linear(att.transpose(1, 2).reshape(b, t, nh * hd), w_o)
            gate, up = F.linear(self._norm(h, w_post), w_gu).chunk(2, dim=-1)
            h = h + F.linear(F.silu(gate) * up, w_down)
        return F.linear(self._norm(h[:, -1], self.final_norm), self.lm_head)

    def prefill(self, ids: torch.Tensor, attn: torch.Tensor, total: int,
                embeds: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor, torch.Tensor]:
        """Run left-padded prompts `ids`/`attn` [B, P] into a fresh cache with room for `total`
        positions. Returns the last position's logits, the cache, each row's key bias over `total`
        positions (-inf on its left padding, 0 elsewhere) and each row's next position. `embeds`:
        the prompts' input embeddings (a VLM's, images included), in place of `ids`' embedding."""
        b, p = ids.shape
        if total > self.cos.shape[0]:
            self._rope_table(total)
        # A problem's n samples share one prompt: run each distinct prompt once and copy its keys,
        # values and logits to its rows (at n >= the batch size every row of a batch is one prompt).
        # With `embeds`, rows are shared by equal embeddings, not equal ids: two problems' prompts
        # can have the same tokens and differ only in their images.
        key = torch.cat([ids, attn] if embeds is None else [embeds.flatten(1), attn.to(embeds.dtype)], dim=1)
        uniq, inverse = torch.unique(key, dim=0, return_inverse=True)
        if len(uniq) < b:
            first = torch.full((len(uniq),), b).scatter_reduce_(0, inverse, torch.arange(b), "amin")
            logits, ucache, ukeybias, unext = self.prefill(
                ids[first], attn[first], total, None if embeds is None else embeds[first])
            cache = []
            for kv in ucache:  # only the prompt's columns hold anything yet
                full = kv.new_empty(2, b, self.n_kv, total, self.head_dim)
                full[:, :, :, :p] = kv[:, inverse, :, :p]
                cache.append(full)
            return logits[inverse], cache, ukeybias[inverse], unext[inverse]
        cache = [torch.empty(2, b, self.n_kv, total, self.head_dim) for _ in self.layers]
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        neg = torch.finfo(torch.float32).min
        keybias = torch.zeros(b, 1, 1, total)
        keybias[:, 0, 0, :p].masked_fill_(~attn.bool(), neg)
        bias = keybias[:, :, :, :p] + torch.full((p, p), neg).triu(1)
        # A padding query row attends to nothing; let it see itself (its output is never used).
        bias.diagonal(dim1=-2, dim2=-1).clamp_(min=0)
        return self.forward(ids, pos, cache, 0, bias, embeds), cache, keybias, pos[:, -1] + 1

    @torch.inference_mode()
    def sample(self, ids: torch.Tensor, attn: torch.Tensor, max_new_tokens: int, eos: set[int],
               temperature: float, top_p: float, generator: torch.Generator,
               entropy: bool = False, embeds: torch.Tensor | None = None) -> list[tuple]:
        """Left-padded `ids`/`attn` [B, P] -> per row (generated ids incl. EOS, "eos" | "length"),
        and with `entropy` a third item: the mean entropy (nats) of the distributions its tokens were
        drawn from (None when greedy). Recording it draws nothing: the samples are the same."""
        b, p = ids.shape
        record = entropy and temperature > 0
        ent_sum = [0.0] * b
        total = p + max_new_tokens
        logits, cache, keybias, nextpos = self.prefill(ids, attn, total, embeds)
        rows = torch.arange(b)  # batch slot -> request row
        live = torch.ones(b, dtype=torch.bool)
        out: list[list[int]] = [[] for _ in range(b)]
        finish = ["length"] * b
        eos_t = torch.tensor(sorted(eos))
        for step in range(max_new_tokens):
            if record:
                scores = self._warp(logits, temperature, top_p)
                ent = token_entropy(scores).tolist()
                tok = torch.multinomial(scores.softmax(-1), 1, generator=generator).squeeze(1)
            else:
                tok = self._draw(logits, temperature, top_p, generator)
            ended = torch.isin(tok, eos_t)
            for i, (r, t, alive, stop) in enumerate(zip(rows.tolist(), tok.tolist(), live.tolist(),
                                                        ended.tolist())):
                if alive:
                    out[r].append(t)
                    if record:
                        ent_sum[r] += ent[i]
                    if stop:
                        finish[r] = "eos"
            live &= ~ended
            n_live = int(live.sum())
            if n_live == 0 or step == max_new_tokens - 1:
                break
            end = p + step
            if len(rows) - n_live >= max(1, len(rows) // 8):
                # Drop the ended rows, cache included (only the filled part is copied).
                keep = live.nonzero().squeeze(1)
                new = []
                for kv in cache:
                    fresh = kv.new_empty(2, n_live, self.n_kv, total, self.head_dim)
                    fresh[:, :, :, :end] = kv[:, keep, :, :end]
                    new.append(fresh)
                cache = new
                rows, tok, nextpos, keybias = rows[keep], tok[keep], nextpos[keep], keybias[keep]
                live = live[keep]
            logits = self.forward(tok[:, None], nextpos[:, None], cache, end, keybias[:, :, :, : end + 1])
            nextpos = nextpos + 1
        if not entropy:
            return list(zip(out, finish))
        means = [ent_sum[r] / len(out[r]) if record and out[r] else None for r in range(b)]
        return list(zip(out, finish, means))

    @staticmethod
    def _draw(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator) -> torch.Tensor:
        if temperature <= 0:  # greedy, as generate(do_sample=False)
            return logits.argmax(-1)
        scores = CompactDecoder._warp(logits, temperature, top_p)
        return torch.multinomial(scores.softmax(-1), 1, generator=generator).squeeze(1)

    @staticmethod
    def _warp(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
        """The logits a token is drawn from: divided by the temperature, -inf outside the top-p."""
        logits = logits / temperature
        if top_p < 1.0:
            # transformers' TopPLogitsWarper: drop the tokens whose cumulative probability, in
            # ascending order, stays <= 1 - top_p; the most likely token always stays.
            sorted_logits, idx = torch.sort(logits, descending=False)
            cum = sorted_logits.softmax(-1).cumsum(-1)
            remove = cum <= (1 - top_p)
            remove[..., -1] = False
            logits = logits.masked_fill(remove.scatter(1, idx, remove), float("-inf"))
        return logits
