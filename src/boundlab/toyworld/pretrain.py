"""Pretrain the toy world's base model and its teacher, on CPU, reproducibly from a seed.

    python -m boundlab.toyworld.pretrain --seed 0            # both, into the shipped assets/
    python -m boundlab.toyworld.pretrain --out /tmp/toy --which base --steps 200

The base is trained from scratch on the noisy corpus (`world.BASE_MIX`); the teacher starts from
the base and is fine-tuned on correct precedence-aware traces only (`world.TEACHER_MIX`). Starting
the teacher from the base is a shortcut for CPU time, not a claim: what distillation needs is a
model that knows the correct strategy, and this one does (see `measure`).

The loss covers completion tokens (and EOS) only: the prompt is random digits, so its loss is
irreducible and would only add noise. A plain PyTorch loop, because nothing here needs more.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import torch

from boundlab.toyworld import world
from boundlab.toyworld.model import build_model
from boundlab.toyworld.paths import assets_dir
from boundlab.toyworld.tokenizer import build_tokenizer


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
    """Linear warmup, then cosine down to 10% of `lr` (both worlds' pretraining)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def train(model, tokenizer, mix: world.Mix, *, steps: int, batch_size: int, lr: float,
          warmup: int, seed: int, log_every: int = 50, tag: str = "base") -> dict:
    torch.manual_seed(seed)
    corpus = world.Corpus(mix, seed=seed)
    vocab = tokenizer.get_vocab()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)

    model.train()
    t0 = time.time()
    recent: list[float] = []
    history = []
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, lr, warmup)
        batch = encode_pairs(vocab, corpus.batch(batch_size), tokenizer.eos_token_id,
                             tokenizer.pad_token_id)
        loss = model(**batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        recent.append(loss.item())
        if (step + 1) % log_every == 0 or step + 1 == steps:
            avg = sum(recent) / len(recent)
            history.append({"step": step + 1, "loss": round(avg, 4)})
            print(f"[{tag}] step {step + 1}/{steps} loss {avg:.4f} "
                  f"lr {lr_at(step, steps, lr, warmup):.2e} "
                  f"{time.time() - t0:.0f}s", flush=True)
            recent = []
    model.eval()
    return {"steps": steps, "batch_size": batch_size, "lr": lr, "warmup": warmup, "seed": seed,
            "final_loss": history[-1]["loss"], "seconds": round(time.time() - t0, 1),
            "history": history}


def save(model, tokenizer, out: Path, info: dict, max_new_tokens: int = 32) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.max_new_tokens = max_new_tokens
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "train_info.json").write_text(json.dumps(info, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=assets_dir(),
                    help="folder that receives base/ and teacher/ (default: the shipped assets)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--which", choices=["base", "teacher", "both"], default="both",
                    help="teacher alone starts from <out>/base")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--steps", type=int, default=2500, help="base steps")
    ap.add_argument("--teacher-steps", type=int, default=400)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--teacher-lr", type=float, default=1e-3)
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    tokenizer = build_tokenizer()
    common = {"command": " ".join(["python -m boundlab.toyworld.pretrain", *(argv or sys.argv[1:])]),
              "threads": args.threads, "torch": torch.__version__}

    if args.which in ("base", "both"):
        torch.manual_seed(args.seed)
        model = build_model(tokenizer)
        info = train(model, tokenizer, world.BASE_MIX, steps=args.steps,
                     batch_size=args.batch_size, lr=args.lr, warmup=100, seed=args.seed, tag="base")
        info.update(common, role="base", mix={"easy": world.BASE_MIX.easy,
                    "hard": world.BASE_MIX.hard, "slip_precedence": world.BASE_MIX.slip_precedence},
                    params=sum(p.numel() for p in model.parameters()))
        save(model, tokenizer, args.out / "base", info)
        print(f"[base] saved to {args.out / 'base'} ({info['seconds']}s, loss {info['final_loss']})")

    if args.which in ("teacher", "both"):
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(args.out / "base")
        info = train(model, tokenizer, world.TEACHER_MIX, steps=args.teacher_steps,
                     batch_size=args.batch_size, lr=args.teacher_lr, warmup=20,
                     seed=args.seed + 1, tag="teacher")
        info.update(common, role="teacher", init="base", mix={"easy": world.TEACHER_MIX.easy,
                    "hard": world.TEACHER_MIX.hard},
                    params=sum(p.numel() for p in model.parameters()))
        save(model, tokenizer, args.out / "teacher", info)
        print(f"[teacher] saved to {args.out / 'teacher'} ({info['seconds']}s, "
              f"loss {info['final_loss']})")


if __name__ == "__main__":
    main()
