"""Pretrain the second-edition toy world's base model and its teacher, on CPU, reproducibly.

    python -m boundlab.worlds.toyworld2.pretrain --seed 0                 # both, into the shipped assets/
    python -m boundlab.worlds.toyworld2.pretrain --out /tmp/tw2 --which base --steps 300

The base is trained from scratch on the base corpus (`world.BaseMix`: every decision drawn
independently, `#` read as `+`); the teacher starts from the base and is fine-tuned on canonical
traces of every tier, `#` included (the out-of-support family only it knows).

Killed runs resume: every `--save-every` steps the model, the optimizer and the corpus RNG are saved
under `<out>/<which>.partial/`, and a rerun of the same command continues from there, bit-identical
to an uninterrupted run (same batches, same updates). The loss covers completion tokens and EOS.
The loop is the worlds' one (`boundlab.worlds.common.pretrain`); this module holds the corpus and settings.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

from boundlab.worlds.toyworld2 import world
from boundlab.worlds.toyworld2.paths import assets_dir
from boundlab.worlds.toyworld2.tokenizer import build_tokenizer
from boundlab.worlds.common.model import build_model
from boundlab.worlds.common.pretrain import encode_pairs, train_loop
from boundlab.worlds.common.pretrain import save as _save

MAX_POSITIONS = 128


def encode(vocab: dict[str, int], pairs: list[tuple], eos_id: int, pad_id: int
           ) -> dict[str, torch.Tensor]:
    """`encode_pairs`, plus the execution-practice masks: a (prompt, completion, spans) row gets no
    loss on the completion characters in `spans` (one token per character)."""
    batch = encode_pairs(vocab, [(p[0], p[1]) for p in pairs], eos_id, pad_id)
    for i, row in enumerate(pairs):
        for start, end in (row[2] if len(row) > 2 else ()):
            off = len(row[0])
            batch["labels"][i, off + start: off + end] = -100
    return batch


def train(model, tokenizer, corpus: world.Corpus, *, steps: int, batch_size: int, lr: float,
          warmup: int, seed: int, partial: Path | None = None, save_every: int = 250,
          log_every: int = 50, tag: str = "base", micro: int = 32) -> dict:
    """The worlds' loop (`worlds.common.pretrain.train_loop`) on this world's corpus: length-sorted
    micro-batches (less padding), each weighted by its share of the batch's completion tokens, the
    same gradient as one padded batch for about 2/3 of the compute; resumable from `partial`."""
    vocab = tokenizer.get_vocab()

    def batches() -> list[dict]:
        pairs = sorted(corpus.batch(batch_size), key=lambda pc: len(pc[0]) + len(pc[1]))
        return [encode(vocab, pairs[i: i + micro], tokenizer.eos_token_id, tokenizer.pad_token_id)
                for i in range(0, len(pairs), micro)]

    run = train_loop(model, batches, steps=steps, lr=lr, warmup=warmup, seed=seed,
                     rng=corpus.rng, partial=partial, save_every=save_every, log_every=log_every,
                     tag=tag)
    history = run["history"]
    return {"steps": steps, "batch_size": batch_size, "lr": lr, "warmup": warmup, "seed": seed,
            "final_loss": history[-1]["loss"] if history else None,
            "seconds_this_process": run["seconds"], "resumed_from": run["resumed_from"],
            "history": history}


def save(model, tokenizer, out: Path, info: dict) -> None:
    _save(model, tokenizer, out, info, max_new_tokens=MAX_POSITIONS - 20)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=assets_dir())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--which", choices=["base", "teacher", "both"], default="both")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2400)
    ap.add_argument("--teacher-steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--teacher-lr", type=float, default=1e-3)
    ap.add_argument("--save-every", type=int, default=250)
    # The shipped models were pretrained on assets/mix.json, so `--seed 0` alone reproduces them.
    ap.add_argument("--mix", type=Path, default=assets_dir() / "mix.json",
                    help="JSON with BaseMix fields (default_prec, default_bracket, cells), and "
                         "optionally corpus_tiers, practice ({share, tiers, forced}) and ambiguous "
                         "(default: the shipped models' assets/mix.json)")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    tokenizer = build_tokenizer()
    if not args.mix.is_file():
        sys.exit(f"pretrain: --mix {args.mix} is not a file")
    spec = json.loads(args.mix.read_text())
    corpus_tiers = spec.pop("corpus_tiers", None) or world.CORPUS_TIERS
    practice_spec = spec.pop("practice", None)
    practice = world.Practice(**practice_spec) if practice_spec else None
    ambiguous = float(spec.pop("ambiguous", 0.0))
    mix = world.BaseMix(**spec)
    common = {"command": " ".join(["python -m boundlab.worlds.toyworld2.pretrain", *(argv or sys.argv[1:])]),
              "threads": args.threads, "torch": torch.__version__}

    if args.which in ("base", "both"):
        torch.manual_seed(args.seed)
        model = build_model(tokenizer, max_positions=MAX_POSITIONS)
        partial = args.out / "base.partial"
        info = train(model, tokenizer,
                     world.Corpus(args.seed, mix, tiers=corpus_tiers, practice=practice,
                                  ambiguous=ambiguous),
                     steps=args.steps,
                     batch_size=args.batch_size, lr=args.lr, warmup=100, seed=args.seed,
                     partial=partial, save_every=args.save_every, tag="base")
        info.update(common, role="base", mix={"default_prec": mix.default_prec,
                    "default_bracket": mix.default_bracket, "cells": mix.cells},
                    corpus_tiers=corpus_tiers, practice=practice_spec, ambiguous=ambiguous,
                    params=sum(p.numel() for p in model.parameters()))
        save(model, tokenizer, args.out / "base", info)
        shutil.rmtree(partial, ignore_errors=True)
        print(f"[base] saved to {args.out / 'base'}")

    if args.which in ("teacher", "both"):
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(args.out / "base")
        partial = args.out / "teacher.partial"
        info = train(model, tokenizer, world.Corpus(args.seed + 1, teacher=True, tiers=corpus_tiers),
                     steps=args.teacher_steps, batch_size=args.batch_size, lr=args.teacher_lr,
                     warmup=20, seed=args.seed + 1, partial=partial, save_every=args.save_every,
                     tag="teacher")
        info.update(common, role="teacher", init="base", corpus_tiers=corpus_tiers,
                    params=sum(p.numel() for p in model.parameters()))
        save(model, tokenizer, args.out / "teacher", info)
        shutil.rmtree(partial, ignore_errors=True)
        print(f"[teacher] saved to {args.out / 'teacher'}")


if __name__ == "__main__":
    main()
