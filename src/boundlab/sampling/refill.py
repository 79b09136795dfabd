"""Continuous batching for the compact decoder: `sampler.hf.engine=compact-cb` (issue 36, item 2).

The compact decoder (boundlab.sampling.compact) decodes one batch until its last row ends, dropping
ended rows as it goes, so the batch shrinks towards its end and the matmuls run at fewer rows than
the machine is fastest at. This engine keeps the batch full instead: a row that ends is refilled at
once with the next sample still to draw, from a queue that spans problems. Each problem's prompt is
prefilled once (a few problems batched together when they enter the queue's front) and its keys and
values are copied into every row that starts on it; only when the queue is empty does the batch
shrink, by the same rule as the compact decoder's.

Rows live at different lengths, so each row writes its keys and values at its own column of the
cache (its prompt unpadded at columns 0..P-1, its tokens after) and masks every column past its own
length; the network and its numerics are the compact decoder's own (`CompactDecoder._norm`,
`_rope`, weights), and tests/unit/test_refill_sampler.py checks the logits every token is drawn from
against the compact decoder's on the same prefix.

Where it departs from the compact decoder: the random draws. The compact decoder draws a whole
batch from one torch.Generator, so a row's sample depends on which rows share its batch. Here a row
is refilled whenever a slot frees, so its batch-mates depend on the schedule; every row therefore
draws from its own counter-based stream instead (a 32-bit hash of the call's seed and the row's
index, then of the token's index: `uniforms`), by the inverse CDF of the same distribution
(temperature, top-p as transformers' TopPLogitsWarper, computed in float64). A row's sample depends
only on (seed, row index), never on the batch width or the schedule, and the distribution is
unchanged; the samples differ from the compact decoder's, so the probe key records the engine.
"""

from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from boundlab.sampling.base import token_entropy
from boundlab.sampling.compact import CompactDecoder

_M32 = 0xFFFFFFFF
# Rows per sampler call, in batches: the queue one call refills from. Larger keeps the batch full
# longer (the batch drains once per call) but verifies and stores in coarser steps.
REFILL_CHUNK = 8
# Attention runs in groups of this many slots, each over its own longest row's columns, and the
# slots are sorted by length every REORDER_EVERY steps (a copy of the cache) to keep groups tight.
GROUP_ROWS = 64
REORDER_EVERY = 16


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """(x * c) mod 2^32 for int64 `x` < 2^32, in two 16-bit halves of c (no int64 overflow)."""
    return (x * (c & 0xFFFF) + (((x * (c >> 16)) & 0xFFFF) << 16)) & _M32


def hash32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (Wellons' lowbias32) of int64 `x`, taken mod 2^32."""
    x = x & _M32
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def row_keys(seed: int, rows: torch.Tensor) -> torch.Tensor:
    """Each row's stream key from the call's seed and the row's index."""
    s = hash32(torch.tensor([seed & _M32], dtype=torch.int64) ^ 0x5BD1E995)
    return hash32(s ^ hash32(rows.to(torch.int64) + 0x27D4EB2F))


def uniforms(keys: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """float64 uniforms in [0, 1) with 53 random bits: one per (row key, token index)."""
    h1 = hash32(keys ^ hash32(steps.to(torch.int64) * 2))
    h2 = hash32(keys ^ hash32(steps.to(torch.int64) * 2 + 1))
    return ((h1 << 21) | (h2 >> 11)).to(torch.float64) * 2.0 ** -53


def draw_rows(logits: torch.Tensor, temperature: float, top_p: float, keys: torch.Tensor,
              steps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One token per row from softmax(warped logits), by the inverse CDF at the row's own uniform.
    Returns (tokens, the warped logits the tokens were drawn from; None when greedy)."""
    if temperature <= 0:  # greedy, as generate(do_sample=False)
        return logits.argmax(-1), None
    scores = CompactDecoder._warp(logits, temperature, top_p)
    probs = scores.double().softmax(-1)
    cdf = probs.cumsum(-1)
    u = uniforms(keys, steps) * cdf[:, -1]
    tok = torch.searchsorted(cdf, u[:, None], right=True).squeeze(1)
    # u < cdf[-1] lands on a token of positive probability (a zero one repeats its left neighbour's
    # cdf, so `right=True` steps over it); a rounding tie at the very top falls back to the last one.
    last = probs.shape[-1] - 1 - (probs.flip(-1) > 0).to(torch.int8).argmax(-1)
    return torch.minimum(tok, last), scores


class RefillDecoder:
    """The compact decoder's network, decoded with continuous batching (see the module docstring)."""

    def __init__(self, model: Any):
        if not self.supports(model):
            raise ValueError("sampler.hf.engine=compact-cb runs only a float32 LlamaForCausalLM on CPU "
                             "(default RoPE, no biases, SiLU); use engine=auto for other models")
        self.dec = CompactDecoder(model)

    @staticmethod
    def supports(model: Any) -> bool:
        return type(model).__name__ == "LlamaForCausalLM" and CompactDecoder.supports(model)

    def _step(self, tok: torch.Tensor, lens: torch.Tensor, cache: list[torch.Tensor],
              groups: Sequence[tuple[int, int, int]]) -> torch.Tensor:
        """Feed `tok` [W] at each row's own position `lens` [W] (also the cache column it writes);
        attend to columns 0..lens. `groups`: (first slot, end slot, columns) slices of the batch,
        each attending over its own columns only (the rows' cache reads are the step's largest
        memory traffic: a young row need not read up to the oldest row's length). Returns the
        next logits [W, V]."""
        d = self.dec
        w = tok.shape[0]
        nh, nkv, hd = d.n_heads, d.n_kv, d.head_dim
        h = F.embedding(tok, d.embed)
        cos, sin = d.cos[lens][:, None], d.sin[lens][:, None]  # [W, 1, hd]
        neg = torch.finfo(torch.float32).min
        biases = [torch.where(torch.arange(end)[None] <= lens[lo:hi, None], 0.0, neg)[:, None, None]
                  for lo, hi, end in groups]
        total = cache[0].shape[3]
        # Each row's write position in a flat [W * n_kv * total, hd] view of a cache half.
        flat = ((torch.arange(w)[:, None] * nkv + torch.arange(nkv)[None]) * total + lens[:, None]).reshape(-1)
        for (w_in, w_qkv, w_o, w_post, w_gu, w_down), kv in zip(d.layers, cache):
            q, k, v = F.linear(d._norm(h, w_in), w_qkv).split([nh * hd, nkv * hd, nkv * hd], dim=-1)
            q = d._rope(q.view(w, nh, hd), cos, sin)
            kv[0].view(-1, hd).index_copy_(0, flat, d._rope(k.view(w, nkv, hd), cos, sin).reshape(-1, hd))
            kv[1].view(-1, hd).index_copy_(0, flat, v.reshape(-1, hd))
            atts = []
            for (lo, hi, end), bias in zip(groups, biases):
                keys, vals = kv[0, lo:hi, :, :end], kv[1, lo:hi, :, :end]
                if nkv != nh:
                    keys = keys.repeat_interleave(nh // nkv, dim=1)
                    vals = vals.repeat_interleave(nh // nkv, dim=1)
                scores = torch.matmul(q[lo:hi, :, None], keys.transpose(-1, -2)) * d.scale + bias
                atts.append(torch.matmul(scores.softmax(-1), vals))  # [hi - lo, nh, 1, hd]
            att = atts[0] if len(atts) == 1 else torch.cat(atts)
            h = h + F.linear(att.reshape(w, nh * hd), w_o)
            gate, up = F.linear(d._norm(h, w_post), w_gu).chunk(2, dim=-1)
            h = h + F.linear(F.silu(gate) * up, w_down)
        return F.linear(d._norm(h, d.final_norm), d.lm_head)

    def _prefill(self, prompts: Sequence[Sequence[int]]) -> list[tuple[list[torch.Tensor], torch.Tensor]]:
        """Each prompt's (per layer [2, n_kv, len, hd] keys and values, last logits [V]): one
        left-padded prefill of them all, each row's padding cut off again."""
        p = max(len(x) for x in prompts)
        ids = torch.zeros(len(prompts), p, dtype=torch.int64)
        attn = torch.zeros(len(prompts), p, dtype=torch.int64)
        for i, x in enumerate(prompts):
            ids[i, p - len(x):] = torch.tensor(list(x), dtype=torch.int64)
            attn[i, p - len(x):] = 1
        logits, cache, _, _ = self.dec.prefill(ids, attn, p)
        return [([kv[:, i, :, p - len(x):p].clone() for kv in cache], logits[i])
                for i, x in enumerate(prompts)]

    @torch.inference_mode()
    def sample(self, prompts: Sequence[Sequence[int]], counts: Sequence[int], width: int,
               max_new_tokens: int, eos: set[int], temperature: float, top_p: float, seed: int,
               entropy: bool = False, trace: list | None = None) -> list[list[tuple]]:
        """`counts[i]` samples of each unpadded prompt `prompts[i]` (token ids), `width` rows at a
        time. Returns per prompt its rows, as the compact decoder's `sample` returns them:
        (generated ids incl. EOS, "eos" | "length"[, mean entropy or None]). Row r (prompts in
        order, then samples) draws from stream `row_keys(seed, r)`. `trace`, when given, collects
        (row indices, the logits they drew from) at every draw (for tests)."""
        d = self.dec
        m = max_new_tokens
        record = entropy and temperature > 0
        queue = deque((i, j) for i, c in enumerate(counts) for j in range(c))
        first_row = [0]
        for c in counts:
            first_row.append(first_row[-1] + c)
        left = list(counts)  # rows of each prompt not yet started: its prefill is freed at 0
        ready: dict[int, tuple[list[torch.Tensor], torch.Tensor]] = {}
        out: list[list[tuple]] = [[None] * c for c in counts]  # type: ignore[list-item]
        if not queue or m <= 0:
            return [[([], "length") + ((None,) if entropy else ()) for _ in range(c)] for c in counts]
        total = max(len(x) for x in prompts) + m
        if total > d.cos.shape[0]:
            d._rope_table(total)
        w = min(width, len(queue))
        # Two caches, allocated (and zeroed: masked columns are still read, so they must hold
        # finite numbers) once: re-sorting and shrinking gather the rows into the spare one and
        # swap. A fresh 30 MB tensor per re-sort cost more in page faults than the copy itself.
        bufs = [[torch.zeros(2, w, d.n_kv, total, d.head_dim) for _ in d.layers] for _ in range(2)]
        cache = bufs[0]

        def regather(idx: torch.Tensor, upto: int) -> list[torch.Tensor]:
            """The rows `idx` of the cache (columns < upto) as the first rows of the spare one."""
            spare = bufs[1] if cache[0].data_ptr() == bufs[0][0].data_ptr() else bufs[0]
            out = []
            for kv, sp in zip(cache, spare):
                view = sp[:, :len(idx)]
                view[:, :, :, :upto] = kv[:, idx, :, :upto]
                out.append(view)
            return out
        slot_row = [(-1, -1)] * w  # slot -> (prompt, sample); (-1, -1) when dead
        lens = torch.zeros(w, dtype=torch.int64)
        keys = torch.zeros(w, dtype=torch.int64)
        ntok = torch.zeros(w, dtype=torch.int64)
        buf = torch.zeros(w, m, dtype=torch.int64)
        ent_sum = torch.zeros(w, dtype=torch.float64)
        live = torch.zeros(w, dtype=torch.bool)
        eos_t = torch.tensor(sorted(eos))
        logits = torch.zeros(w, d.lm_head.shape[0])

        def fill(slots: list[int]) -> torch.Tensor:
            """Start the next queued rows in `slots`; returns the slots filled (bool mask)."""
            took = [(s, queue.popleft()) for s in slots[:len(queue)]]
            new = sorted({i for _, (i, _) in took if i not in ready})
            # Prefill the prompts entering now, plus the next few the queue will reach, together.
            ahead = [i for i in dict.fromkeys(i for i, _ in islice(queue, w)) if i not in ready and i not in new]
            todo = new + ahead[:max(0, 8 - len(new))]
            if todo:
                ready.update(zip(todo, self._prefill([prompts[i] for i in todo])))
            mask = torch.zeros(len(slot_row), dtype=torch.bool)
            by_prompt: dict[int, list[int]] = {}
            for s, (i, j) in took:
                by_prompt.setdefault(i, []).append(s)
                slot_row[s] = (i, j)
            for i, ss in by_prompt.items():
                kvs, lg = ready[i]
                idx = torch.tensor(ss)
                plen = kvs[0].shape[2]
                for kv, pkv in zip(cache, kvs):
                    kv[:, idx, :, :plen] = pkv[:, None]
                lens[idx] = plen
                keys[idx] = row_keys(seed, torch.tensor([first_row[i] + slot_row[s][1] for s in ss]))
                logits[idx] = lg
                mask[idx] = True
                left[i] -= len(ss)
                if left[i] == 0:
                    del ready[i]
            ntok[mask] = 0
            ent_sum[mask] = 0.0
            live[mask] = True
            return mask

        fill(list(range(w)))
        step = 0
        while True:
            if step % REORDER_EVERY == 0 and len(slot_row) > GROUP_ROWS:
                # Slots sorted by length, so each group of GROUP_ROWS slots attends over about its
                # own rows' lengths; refills then mix them again, hence every REORDER_EVERY steps.
                perm = torch.argsort(lens, stable=True)
                upto = int(lens.max()) + 1
                cache = regather(perm, upto)
                slot_row = [slot_row[s] for s in perm.tolist()]
                lens, keys, ntok, buf = lens[perm], keys[perm], ntok[perm], buf[perm]
                ent_sum, live, logits = ent_sum[perm], live[perm], logits[perm]
            step += 1
            tok, scores = draw_rows(logits, temperature, top_p, keys, ntok)
            if trace is not None:
                rows = [first_row[i] + j if i >= 0 else -1 for i, j in slot_row]
                trace.append((rows, logits.clone()))
            if record:
                ent_sum += torch.where(live, token_entropy(scores).double(), 0.0)
            ar = torch.arange(len(slot_row))
            buf[ar, ntok.clamp(max=m - 1)] = tok
            ntok += live.long()
            ended = live & (torch.isin(tok, eos_t) | (ntok >= m))
            refilled = torch.zeros_like(live)
            if bool(ended.any()):
                done = ended.nonzero().squeeze(1).tolist()
                for s in done:
                    i, j = slot_row[s]
                    n = int(ntok[s])
                    ids = buf[s, :n].tolist()
                    row: tuple = (ids, "eos" if ids[-1] in eos else "length")
                    if entropy:
                        row += (float(ent_sum[s]) / n if record else None,)
                    out[i][j] = row
                    slot_row[s] = (-1, -1)
                live &= ~ended
                refilled = fill(done)
                n_live = int(live.sum())
                if n_live == 0:
                    break
                n_dead = len(slot_row) - n_live
                if n_dead >= max(1, len(slot_row) // 8):
                    # The queue is empty: drop the ended rows, cache included (filled part only).
                    keep = live.nonzero().squeeze(1)
                    upto = int(lens[keep].max()) + 1
                    cache = regather(keep, upto)
                    slot_row = [slot_row[s] for s in keep.tolist()]
                    lens, keys, ntok, buf = lens[keep], keys[keep], ntok[keep], buf[keep]
                    ent_sum, live, refilled, tok = ent_sum[keep], live[keep], refilled[keep], tok[keep]
                    logits = logits[keep]
            # Every slot runs the step; a refilled one feeds a throwaway token at its first free
            # column (overwritten by its real first token next step) and keeps its prompt's logits.
            ends = [int(lens[lo:lo + GROUP_ROWS].max()) + 1 for lo in range(0, len(slot_row), GROUP_ROWS)]
            groups = [(lo, min(lo + GROUP_ROWS, len(slot_row)), e)
                      for lo, e in zip(range(0, len(slot_row), GROUP_ROWS), ends)]
            step_logits = self._step(tok, lens, cache, groups)
            adv = live & ~refilled
            logits = torch.where(refilled[:, None], logits, step_logits)
            lens = lens + adv.long()
        return out
