"""The fairness audit of the visual toy world's VLM: toyworld2's audit (`toyworld2.audit`: decision
rates per cell against the corpus targets, composition, support, luck), on the VLM's samples.

    python -m boundlab.worlds.toyvision.audit                                  # the shipped VLM
    python -m boundlab.worlds.toyvision.audit --base DIR --n 64 --per-tier 8 --support-n 128 --out a.json

The samples are drawn as the probe draws them: the hf sampler with the model's processor and the
problems' pictures (`toy_vision`), at T = 1, by the compact decoder. The corpus targets are the
VLM's own corpus mix (its train_info.json's `mix`: the text base's, with the bracket share that
`pretrain --bracket-share` set). No teacher is audited: the visual world ships none (see `pretrain`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from boundlab.sampling.base import GenSettings
from boundlab.tasks.base import Problem
from boundlab.worlds.toyvision.paths import assets_dir, base_model_dir
from boundlab.worlds.toyvision.task import TEMPLATE, default_render_dir, visual
from boundlab.worlds.toyworld2 import audit as A
from boundlab.worlds.toyworld2.task import toy2_problems
from boundlab.worlds.toyworld2.verifier import judge


def load(model_dir: Path):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    return AutoModelForImageTextToText.from_pretrained(model_dir).eval(), AutoProcessor.from_pretrained(model_dir)


def verdicts(model, processor, problems: list[Problem], n: int, seed: int) -> list[list]:
    from boundlab.sampling.hf import HFSampler

    sampler = HFSampler(model, None, batch_size=512, processor=processor, entropy=False)
    s = GenSettings(temperature=1.0, top_p=1.0, max_new_tokens=A.MAX_NEW_TOKENS)
    out: list[list] = []
    per_call = max(1, 512 // n)
    for i in range(0, len(problems), per_call):
        chunk = problems[i: i + per_call]
        comps = sampler.generate([(TEMPLATE, n) for _ in chunk], s, seed + i,
                                 images=[p.images for p in chunk])
        out.extend([judge(p, c.text) for c in cs] for p, cs in zip(chunk, comps))
    return out


def run_audit(base: Path, n: int = 256, per_tier: int = 50, support_n: int = 1024,
              support_per_tier: int = 50, seed: int = 0, render_dir: Path | None = None) -> dict:
    t0 = time.time()
    folder = render_dir or default_render_dir()
    problems = visual(toy2_problems("test", per_tier=per_tier), folder)
    model, proc = load(base)
    vs = verdicts(model, proc, problems, n, seed)
    rates = A.decision_rates([row for p, row in zip(problems, vs) if p.meta["tier"] != "X"],
                             A.corpus_mix(base))
    tiers = A.tier_summary(problems, vs, n)
    res: dict = {"base": str(base), "base_sha256": A.weights_sha256(base), "n": n,
                 "per_tier": per_tier, "seed": seed, "decision_rates": rates, "tiers": tiers,
                 "composition": A.composition(rates, tiers, problems)}
    sup = visual(toy2_problems("test", tiers=list(A.SUPPORT_TIERS), per_tier=support_per_tier), folder)
    res["support"] = A.support(model, proc, sup, support_n, seed + 1, verdicts=verdicts)
    res["checks"] = A.checks(res)
    res["seconds"] = round(time.time() - t0, 1)
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    A.add_args(ap, base_model_dir())
    ap.add_argument("--render-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    res = run_audit(args.base, args.n, args.per_tier, args.support_n, args.support_per_tier, args.seed,
                    args.render_dir)
    A.save(res, args.out or (assets_dir() / "audit.json" if args.base == base_model_dir() else None))


if __name__ == "__main__":
    main()
