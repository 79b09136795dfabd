"""Pretrain the visual toy world's VLM on CPU, reproducibly.

    python -m boundlab.worlds.toyvision.pretrain --seed 0 --bracket-share 0.013   # the shipped assets/base
    python -m boundlab.worlds.toyvision.pretrain --out /tmp/tv --steps 20      # a short run

The model (`model.build_vlm`) starts with toyworld2's shipped base as its language model and a new
vision tower and projector, trained in two stages.

1. Reading (`--read-steps`, the tower and projector only, no language model in the loop): each of
   the 16 image features is regressed (MSE) onto the language model's own input embedding of the
   character in its cell (a blank cell: the space's). After it the language model sees, in the
   image tokens' places, nearly the characters of the text world's prompt.
2. The corpus: the whole model on toyworld2's base corpus (the mix, tier shares and
practice recorded in that base's train_info.json; `--bracket-share` replaces the mix's bracket
share, recorded in the VLM's own train_info.json, whose `mix` is what the audit's targets read),
each prompt's question replaced by its picture:
`Q:<image>;` + the same completion. The tower and projector learn at `--lr`, the language model at
`--lm-lr` (it must learn to take its question from image tokens, and keeps the corpus's decision
rates, which the audit measures). Loss: completion tokens and EOS, execution-practice spans masked
as in toyworld2. The shipped VLM uses `--bracket-share 0.013`: on the text base's 0.016 it honoured
B3's bracket at 0.022 (the text base: 0.018) and its B3 strict pass@256 saturated (0.98 in the audit).

Stage 2 runs in the worlds' one loop (`boundlab.worlds.common.pretrain`). Killed runs resume from
`<out>/base.partial/` (model, optimizer, corpus RNG), bit-identical to an uninterrupted run; `--seed 0` twice gives identical weights (a test checks both on a few steps).
No teacher is trained: the visual world's X family (`a#b = 10a+b`) stays out of the base's support
by design, as in the text world; distillation into the VLM is not wired (train.py allows visual tasks
with algo=grpo / dr_grpo only), so a VLM teacher would have no consumer yet. The recipe would be the
text world's: this VLM fine-tuned on toyworld2's teacher corpus (canonical traces, `#` included).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import torch

from boundlab.worlds.toyvision import render
from boundlab.worlds.toyvision.model import IMAGE_TOKEN, build_processor, build_tokenizer, build_vlm
from boundlab.worlds.toyvision.paths import assets_dir
from boundlab.worlds.toyvision.task import TEMPLATE
from boundlab.worlds.toyworld2 import world
from boundlab.worlds.toyworld2.paths import base_model_dir as text_base_dir
from boundlab.worlds.common.pretrain import lr_at, train_loop
from boundlab.worlds.common.pretrain import save as _save


def corpus_from(text_base: Path, seed: int, bracket_share: float | None = None
                ) -> tuple[world.Corpus, dict]:
    """toyworld2's base corpus as recorded in the text base's train_info.json; `bracket_share`, when
    given, replaces its mix's `default_bracket` (the share of bracket problems whose trace honours
    the bracket), and the returned spec records the mix actually used."""
    info = json.loads((Path(text_base) / "train_info.json").read_text())
    practice = info.get("practice")
    mix = dict(info.get("mix") or {})
    if bracket_share is not None:
        if not 0 < bracket_share < 1:
            raise ValueError(f"bracket share must be in (0, 1), got {bracket_share}")
        listed = sorted(c for c in mix.get("cells", {}) if c.startswith("bracket/"))
        if listed:  # a listed cell ignores default_bracket: the knob would not reach it
            raise ValueError(f"the text base's mix lists bracket cells {listed}; --bracket-share "
                             "replaces only default_bracket")
        mix["default_bracket"] = bracket_share
    spec = {"mix": mix, "corpus_tiers": info.get("corpus_tiers"),
            "practice": practice, "ambiguous": float(info.get("ambiguous") or 0.0)}
    corpus = world.Corpus(seed, world.BaseMix(**spec["mix"]), tiers=spec["corpus_tiers"],
                          practice=world.Practice(**practice) if practice else None,
                          ambiguous=spec["ambiguous"])
    return corpus, spec


class Encoder:
    """(prompt, completion[, masked spans]) rows -> the VLM's batch: every prompt is TEMPLATE (the
    same 19 tokens once the processor expands the image), so rows differ only in completion length."""

    def __init__(self, processor, distractors: int = 0):
        self.proc = processor
        self.tok = processor.tokenizer
        self.vocab = self.tok.get_vocab()
        self.distractors = distractors
        self.prompt_ids = processor(text=[TEMPLATE], images=[render.draw("1").convert("RGB")],
                                    return_tensors="pt")["input_ids"][0].tolist()

    def __call__(self, rows: list[tuple]) -> dict[str, torch.Tensor]:
        eos, pad = self.tok.eos_token_id, self.tok.pad_token_id
        head = "Q:"
        questions = [r[0][len(head):-1] for r in rows]  # world.prompt(q) == "Q:{q};"
        pixels = self.proc.image_processor(
            [render.draw(q, self.distractors).convert("RGB") for q in questions],
            return_tensors="pt")["pixel_values"]
        comps = [[self.vocab[ch] for ch in r[1]] + [eos] for r in rows]
        width = len(self.prompt_ids) + max(len(c) for c in comps)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        labels = torch.full((len(rows), width), -100, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        off = len(self.prompt_ids)
        for i, (r, c) in enumerate(zip(rows, comps)):
            ids[i, :off] = torch.tensor(self.prompt_ids)
            ids[i, off: off + len(c)] = torch.tensor(c)
            labels[i, off: off + len(c)] = torch.tensor(c)
            mask[i, : off + len(c)] = 1
            for start, end in (r[2] if len(r) > 2 else ()):
                labels[i, off + start: off + end] = -100
        return {"input_ids": ids, "attention_mask": mask, "labels": labels, "pixel_values": pixels}


def cell_targets(tokenizer, questions: list[str]) -> torch.Tensor:
    """Per picture, the token id of the character in each of its cells (blank: the space)."""
    vocab = tokenizer.get_vocab()
    n = render.GRID * render.GRID
    return torch.tensor([[vocab[c] for c in " " * (n - len(q)) + q] for q in questions])


def read(model, processor, corpus: world.Corpus, *, steps: int, batch_size: int, lr: float,
         distractors: int = 0, log_every: int = 50) -> dict:
    """Stage 1: the tower and projector learn to put each cell's character embedding in its image
    token's place. Returns the final loss and the share of cells whose feature is nearest to the
    right character's embedding (over the world's characters and the space)."""
    cfg = model.config
    table = model.get_input_embeddings().weight.detach().clone()
    vision = [p for n, p in model.named_parameters() if "language_model" not in n and "lm_head" not in n]
    opt = torch.optim.AdamW(vision, lr=lr, betas=(0.9, 0.98), weight_decay=0.0)
    chars = sorted(set(cell_targets(processor.tokenizer, ["0123456789+*#()"])[0].tolist()))
    allowed = torch.tensor(chars)
    t0, history, recent, acc = time.time(), [], [], 0.0
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, lr, min(20, steps // 10 + 1))
        qs = [corpus.pair()[0][2:-1] for _ in range(batch_size)]
        pixels = processor.image_processor([render.draw(q, distractors).convert("RGB") for q in qs],
                                           return_tensors="pt")["pixel_values"]
        feats = torch.stack(list(model.model.get_image_features(
            pixel_values=pixels, vision_feature_layer=cfg.vision_feature_layer,
            vision_feature_select_strategy=cfg.vision_feature_select_strategy).pooler_output))
        target_ids = cell_targets(processor.tokenizer, qs)
        loss = torch.nn.functional.mse_loss(feats, table[target_ids]) / table[allowed].var()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        recent.append(loss.item())
        if (step + 1) % log_every == 0 or step + 1 == steps:
            with torch.no_grad():
                near = torch.cdist(feats.reshape(-1, feats.shape[-1]), table[allowed]).argmin(-1)
                acc = float((allowed[near] == target_ids.reshape(-1)).float().mean())
            history.append({"step": step + 1, "loss": round(sum(recent) / len(recent), 5),
                            "cell_accuracy": round(acc, 4)})
            print(f"[read] step {step + 1}/{steps} loss {history[-1]['loss']:.5f} "
                  f"cells read {acc:.4f} {time.time() - t0:.0f}s", flush=True)
            recent = []
    return {"steps": steps, "batch_size": batch_size, "lr": lr, "final_loss": history[-1]["loss"]
            if history else None, "cell_accuracy": acc, "seconds": round(time.time() - t0, 1),
            "history": history}


def param_groups(model, lr: float, lm_lr: float) -> list[dict]:
    vision = [p for n, p in model.named_parameters() if "language_model" not in n and "lm_head" not in n]
    lm = [p for n, p in model.named_parameters() if "language_model" in n]
    return [{"params": vision, "base_lr": lr}, {"params": lm, "base_lr": lm_lr}]


def train(model, encoder: Encoder, corpus: world.Corpus, *, steps: int, batch_size: int, lr: float,
          lm_lr: float, warmup: int, seed: int, partial: Path | None = None, save_every: int = 100,
          log_every: int = 25, micro: int = 64) -> dict:
    """Stage 2, the worlds' loop (`worlds.common.pretrain.train_loop`): the tower and projector at `lr`,
    the language model at `lm_lr`; rows sorted by completion length into micro-batches."""
    def batches() -> list[dict]:
        rows = sorted(corpus.batch(batch_size), key=lambda r: len(r[1]))
        return [encoder(rows[i: i + micro]) for i in range(0, len(rows), micro)]

    run = train_loop(model, batches, steps=steps, lr=lr, warmup=warmup, seed=seed,
                     params=param_groups(model, lr, lm_lr), rng=corpus.rng, partial=partial,
                     save_every=save_every, log_every=log_every, tag="vlm")
    history = run["history"]
    return {"steps": steps, "batch_size": batch_size, "lr": lr, "lm_lr": lm_lr, "warmup": warmup,
            "seed": seed, "final_loss": history[-1]["loss"] if history else None,
            "seconds_this_process": run["seconds"], "resumed_from": run["resumed_from"],
            "history": history}


def save(model, processor, out: Path, info: dict) -> None:
    _save(model, processor.tokenizer, out, info, max_new_tokens=108, processor=processor)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=assets_dir())
    ap.add_argument("--text-base", type=Path, default=text_base_dir(),
                    help="the text model the language model starts from (and whose corpus is used)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--read-steps", type=int, default=400, help="stage 1 (reading) steps")
    ap.add_argument("--read-lr", type=float, default=3e-3)
    ap.add_argument("--steps", type=int, default=400, help="stage 2 (corpus) steps")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3, help="vision tower and projector")
    ap.add_argument("--lm-lr", type=float, default=3e-4, help="the language model")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--distractors", type=int, default=0)
    ap.add_argument("--bracket-share", type=float, default=None,
                    help="the corpus share of honoured brackets (replaces the text base's mix's "
                         "default_bracket; default: keep it)")
    ap.add_argument("--save-every", type=int, default=100)
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    if not (args.text_base / "train_info.json").is_file():
        sys.exit(f"pretrain: --text-base {args.text_base} has no train_info.json (a toyworld2 base)")
    torch.manual_seed(args.seed)
    tokenizer = build_tokenizer()
    processor = build_processor(tokenizer)
    model = build_vlm(args.text_base, tokenizer)
    corpus, spec = corpus_from(args.text_base, args.seed, args.bracket_share)
    partial = args.out / "base.partial"
    reading = None
    if not (partial / "state.pt").exists():  # a resumed run's partial state already holds stage 1
        # Its own corpus stream (seed + 1), so stage 2's batches do not depend on --read-steps.
        reading_corpus = corpus_from(args.text_base, args.seed + 1, args.bracket_share)[0]
        reading = read(model, processor, reading_corpus,
                       steps=args.read_steps, batch_size=args.batch_size, lr=args.read_lr,
                       distractors=args.distractors)
    info = train(model, Encoder(processor, args.distractors), corpus, steps=args.steps,
                 batch_size=args.batch_size, lr=args.lr, lm_lr=args.lm_lr, warmup=args.warmup,
                 seed=args.seed, partial=partial, save_every=args.save_every)
    lm_sha = __import__("hashlib").sha256((args.text_base / "model.safetensors").read_bytes()).hexdigest()
    info.update(command=" ".join(["python -m boundlab.worlds.toyvision.pretrain", *(argv or sys.argv[1:])]),
                threads=args.threads, torch=torch.__version__, role="base", distractors=args.distractors,
                text_base=str(args.text_base), text_base_sha256=lm_sha, corpus=spec,
                image_token=IMAGE_TOKEN, reading=reading, params=sum(p.numel() for p in model.parameters()))
    # The audit reads the corpus targets from `mix`, as for a toyworld2 base.
    info["mix"] = spec["mix"]
    save(model, processor, args.out / "base", info)
    shutil.rmtree(partial, ignore_errors=True)
    print(f"[vlm] saved to {args.out / 'base'}")


if __name__ == "__main__":
    main()
