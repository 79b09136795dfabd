"""Pretrain the toy world's base model and its teacher, on CPU, reproducibly from a seed.

    python -m boundlab.worlds.toyworld.pretrain --seed 0            # both, into the shipped assets/
    python -m boundlab.worlds.toyworld.pretrain --out /tmp/toy --which base --steps 200

The base is trained from scratch on the noisy corpus (`world.BASE_MIX`); the teacher starts from
the base and is fine-tuned on correct precedence-aware traces only (`world.TEACHER_MIX`). Starting
the teacher from the base is a shortcut for CPU time, not a claim: what distillation needs is a
model that knows the correct strategy, and this one does (see `measure`).

The loss covers completion tokens (and EOS) only: the prompt is random digits, so its loss is
irreducible and would only add noise. The loop is the worlds' one (`boundlab.worlds.common.pretrain`).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch

from boundlab.worlds.toyworld import world
from boundlab.worlds.toyworld.model import build_model
from boundlab.worlds.toyworld.paths import assets_dir
from boundlab.worlds.toyworld.tokenizer import build_tokenizer
from boundlab.worlds.common.pretrain import encode_pairs, lr_at, save, train_loop

__all__ = ["encode_pairs", "lr_at", "main", "save", "train"]


def train(model, tokenizer, mix: world.Mix, *, steps: int, batch_size: int, lr: float,
          warmup: int, seed: int, log_every: int = 50, tag: str = "base") -> dict:
    """The worlds' loop (`worlds.common.pretrain.train_loop`) on this world's corpus, one batch a step."""
    corpus = world.Corpus(mix, seed=seed)
    vocab = tokenizer.get_vocab()

    def batches() -> list[dict]:
        return [encode_pairs(vocab, corpus.batch(batch_size), tokenizer.eos_token_id,
                             tokenizer.pad_token_id)]

    run = train_loop(model, batches, steps=steps, lr=lr, warmup=warmup, seed=seed,
                     log_every=log_every, tag=tag)
    return {"steps": steps, "batch_size": batch_size, "lr": lr, "warmup": warmup, "seed": seed,
            "final_loss": run["history"][-1]["loss"], "seconds": run["seconds"],
            "history": run["history"]}


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
    common = {"command": " ".join(["python -m boundlab.worlds.toyworld.pretrain", *(argv or sys.argv[1:])]),
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
