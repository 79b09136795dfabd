"""The toy worlds' one pretraining loop, on CPU, reproducibly from a seed.

Each world keeps what is its own: its corpus, how a row becomes a batch (`batches`), its model and its
settings; `train_loop` does the rest, the same way for every world:

- AdamW (betas 0.9/0.98, weight decay 0.01), the warmup-cosine schedule `lr_at` per parameter group
  (a group's `base_lr`, else `lr`), gradients clipped to norm 1;
- a step's batch may come in micro-batches (length-sorted by the world, less padding), each loss
  weighted by its share of the step's completion tokens: the gradient of one padded batch;
- resume: given `partial` (a folder) and the corpus's `rng`, every `save_every` steps the model, the
  optimizer, the corpus RNG and the loss history are saved to `<partial>/state.pt`, and a rerun with
  the same arguments continues from there, bit-identical to an uninterrupted run.

The loss covers completion tokens (and EOS) only: prompts are random questions, whose loss is
irreducible and would only add noise (`encode_pairs` puts -100 on them). A plain PyTorch loop,
because nothing here needs more.
"""

from __future__ import annotations

import json
import math
import pickle
import random
import time
from pathlib import Path
from typing import Callable, Iterable

import torch


def encode_pairs(vocab: dict[str, int], pairs: list[tuple[str, str]], eos_id: int, pad_id: int
                 ) -> dict[str, torch.Tensor]:
    """Right-padded input_ids/attention_mask/labels; labels are -100 on the prompt and padding.
    Character lookup is the tokenizer's own mapping (one token per character), just faster."""
    rows, labs = [], []
    for p, c in pairs:
        pi = [vocab[ch] for ch in p]
        ci = [vocab[ch] for ch in c] + [eos_id]
        rows.append(pi + ci)
        labs.append([-100] * len(pi) + ci)
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (r, lab) in enumerate(zip(rows, labs)):
        ids[i, : len(r)] = torch.tensor(r)
        labels[i, : len(r)] = torch.tensor(lab)
        mask[i, : len(r)] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warmup, then cosine down to 10% of `lr` (every world's pretraining)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def train_loop(model, batches: Callable[[], list[dict[str, torch.Tensor]]], *, steps: int,
               lr: float, warmup: int, seed: int, params: Iterable | None = None,
               rng: random.Random | None = None, partial: Path | None = None,
               save_every: int = 250, log_every: int = 50, tag: str = "base") -> dict:
    """Trains `model` for `steps` optimizer steps, each on the micro-batches `batches()` returns
    (every call draws the next step's rows from the world's corpus). `params`: the optimizer's
    parameter groups (default: all parameters at `lr`; a group with `base_lr` follows its own
    schedule). `rng`: the corpus's random stream, saved and restored with `partial`.

    Returns the loss `history` (one entry per `log_every` steps and the last), `resumed_from` (0 for
    a fresh run) and `seconds` (this process's training time); the world writes its train_info."""
    if partial is not None and rng is None:
        raise ValueError("resuming from a partial state needs the corpus's rng")
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters() if params is None else params, lr=lr,
                            betas=(0.9, 0.98), weight_decay=0.01)
    start, history = 0, []
    if partial is not None and (partial / "state.pt").exists():
        state = torch.load(partial / "state.pt", weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        rng.setstate(pickle.loads(state["corpus_rng"]))
        start, history = state["step"], state["history"]
        print(f"[{tag}] resumed at step {start} from {partial}", flush=True)
    model.train()
    t0 = time.time()
    recent: list[float] = []
    for step in range(start, steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, g.get("base_lr", lr), warmup)
        parts = batches()
        total = sum(int((b["labels"] != -100).sum()) for b in parts)
        opt.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for b in parts:
            w = int((b["labels"] != -100).sum()) / total
            loss = model(**b).loss * w
            loss.backward()
            loss_sum += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        recent.append(loss_sum)
        if (step + 1) % log_every == 0 or step + 1 == steps:
            avg = sum(recent) / len(recent)
            history.append({"step": step + 1, "loss": round(avg, 4)})
            print(f"[{tag}] step {step + 1}/{steps} loss {avg:.4f} "
                  f"lr {opt.param_groups[0]['lr']:.2e} {time.time() - t0:.0f}s", flush=True)
            recent = []
        if partial is not None and (step + 1) % save_every == 0 and step + 1 < steps:
            partial.mkdir(parents=True, exist_ok=True)
            tmp = partial / "state.pt.tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1,
                        "corpus_rng": pickle.dumps(rng.getstate()), "history": history}, tmp)
            tmp.replace(partial / "state.pt")
    model.eval()
    return {"history": history, "resumed_from": start, "seconds": round(time.time() - t0, 1)}


def save(model, tokenizer, out: Path, info: dict, max_new_tokens: int = 32, processor=None) -> None:
    """The model (its generation config: the tokenizer's EOS and padding, `max_new_tokens`), the
    tokenizer (or the `processor` that holds it) and `train_info.json`, into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.max_new_tokens = max_new_tokens
    model.save_pretrained(out)
    (processor or tokenizer).save_pretrained(out)
    (out / "train_info.json").write_text(json.dumps(info, indent=1) + "\n")
