"""The fairness audit of the second-edition toy world: does the base sample each right strategy at a
known, nonzero rate, and can no luck pass for reasoning?

    python -m boundlab.worlds.toyworld2.audit                          # the shipped base and teacher
    python -m boundlab.worlds.toyworld2.audit --base DIR --n 64 --per-tier 8 --support-n 128 --out a.json
    python -m boundlab.worlds.toyworld2.audit --base-audit a.json     # reuse a.json's base part, add the teacher

Printed and saved (JSON, `--out`; the shipped models' audit is `assets/audit.json`):

1. decision rates per cell (kind/position/shape/left operand) with Clopper-Pearson 95% intervals,
   against the corpus target (the cell's share in the base's corpus, from its train_info.json): pass
   when the lower bound is > 0 and the rate is within 2x of the target. `on_path` cells count only decisions whose earlier decisions were right (the second
   decision *given* the first was right), which is what composition needs;
2. composition: each H tier's measured strict pass@1 against the product of its cells' on-path rates
   and the measured clean-finish rate;
3. support: c_strict > 0 per problem at `--support-n` samples on the B and H2 tiers (pass: >= 95%);
4. luck per tier: answer-only minus strict pass@k at k = n (pass: <= 0.03), and lucky-only pass@n
   (correct answer, not strict; pass: <= 0.05);
5. the teacher: strict pass@1 per tier, and the perplexity under the base of its X traces against
   that of the base's own canonical traces on H1.

Sampling is at T = 1 (the probe's own settings), by the compact decoder as the probe samples the
toy world (`boundlab.sampling.compact`), one torch thread by default.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from collections import defaultdict
from pathlib import Path

import torch

from boundlab.probe.binom import betainc, clopper_pearson  # noqa: F401 - re-exported
from boundlab.tasks.base import Problem
from boundlab.worlds.common.measure import pass_at_k, sample
from boundlab.worlds.toyworld2.paths import assets_dir, base_model_dir, teacher_model_dir
from boundlab.worlds.toyworld2.task import toy2_problems
from boundlab.worlds.toyworld2.verifier import judge
from boundlab.worlds.toyworld2.expr import Decision
from boundlab.worlds.toyworld2.world import TIERS, BaseMix, canonical_trace, prompt

# The corpus target of each decision cell is its share in the base's corpus (`world.BaseMix`, read
# from the model's train_info.json): a base is fair when it samples what its corpus holds, within 2x.
SUPPORT_TIERS = ("B3", "B4", "H2")
MAX_NEW_TOKENS = 108


def _load(model_dir: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return (AutoModelForCausalLM.from_pretrained(model_dir).eval(),
            AutoTokenizer.from_pretrained(model_dir))


def _verdicts(model, tok, problems: list[Problem], n: int, seed: int) -> list[list]:
    texts = sample(model, tok, [prompt(p.question) for p in problems], n,
                   max_new_tokens=MAX_NEW_TOKENS, seed=seed)
    return [[judge(p, t) for t in ts] for p, ts in zip(problems, texts)]


def corpus_mix(model_dir: Path) -> BaseMix:
    """The BaseMix a model was pretrained on (its train_info.json), else the code's default."""
    info = Path(model_dir) / "train_info.json"
    if info.exists():
        mix = json.loads(info.read_text()).get("mix")
        if mix:
            return BaseMix(**mix)
    return BaseMix()


def _target(cell: str, mix: BaseMix) -> float:
    kind, pos, shape, left = cell.split("|")[0].split("/")
    return mix.share(Decision(kind, int(pos), shape, left))


def decision_rates(verdicts_by_problem: list[list], mix: BaseMix | None = None) -> dict[str, dict]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for vs in verdicts_by_problem:
        for v in vs:
            for cell, took, on_path in v.info["decisions"]:
                for key in ([cell, f"{cell}|on_path"] if on_path else [cell]):
                    counts[key][0] += int(took)
                    counts[key][1] += 1
    out = {}
    for cell, (k, n) in sorted(counts.items()):
        lo, hi = clopper_pearson(k, n)
        target = _target(cell, mix or BaseMix())
        out[cell] = {"took": k, "n": n, "rate": k / n, "ci": [lo, hi], "target": target,
                     "ok": lo > 0 and target / 2 <= k / n <= 2 * target}
    return out


def tier_summary(problems: list[Problem], verdicts: list[list], n: int) -> dict[str, dict]:
    by: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(problems):
        by[p.meta["tier"]].append(i)
    out = {}
    for tier in TIERS:
        idx = by.get(tier)
        if not idx:
            continue
        c = [sum(v.correct for v in verdicts[i]) for i in idx]
        s = [sum(bool(v.strict) for v in verdicts[i]) for i in idx]
        lucky = [sum(v.correct and not v.strict for v in verdicts[i]) for i in idx]
        strategies: dict[str, int] = defaultdict(int)
        for i in idx:
            for v in verdicts[i]:
                strategies[v.info["strategy"]] += 1
        total = n * len(idx)
        answer_n = sum(pass_at_k(n, x, n) for x in c) / len(idx)
        strict_n = sum(pass_at_k(n, x, n) for x in s) / len(idx)
        lucky_n = sum(pass_at_k(n, x, n) for x in lucky) / len(idx)
        out[tier] = {"problems": len(idx), "n": n,
                     "strict_pass@1": sum(s) / total, "answer_pass@1": sum(c) / total,
                     f"strict_pass@{n}": strict_n, f"answer_pass@{n}": answer_n,
                     f"lucky_pass@{n}": lucky_n, "luck_gap": answer_n - strict_n,
                     "luck_ok": answer_n - strict_n <= 0.03 and lucky_n <= 0.05,
                     "strategy": {k: v / total for k, v in sorted(strategies.items())}}
    return out


def composition(rates: dict[str, dict], tiers: dict[str, dict], problems: list[Problem]
                ) -> dict[str, dict]:
    """Predicted strict pass@1 of each H tier = mean over its problems of the product of their
    cells' on-path rates, times the tier's clean-finish rate (measured on E)."""
    clean = tiers.get("E", {}).get("strict_pass@1", 1.0)
    out = {}
    for tier in ("H1", "H2", "H3"):
        ps = [p for p in problems if p.meta["tier"] == tier]
        if not ps or tier not in tiers:
            continue
        preds = []
        for p in ps:
            prod = 1.0
            for cell in p.meta["cells"]:
                r = rates.get(f"{cell}|on_path") or rates.get(cell)
                prod *= r["rate"] if r else 0.0
            preds.append(prod * clean)
        pred = sum(preds) / len(preds)
        meas = tiers[tier]["strict_pass@1"]
        out[tier] = {"measured": meas, "predicted": pred,
                     "ratio": (meas / pred) if pred else None}
    return out


def support(model, tok, problems: list[Problem], n: int, seed: int, verdicts=None) -> dict[str, dict]:
    """`verdicts(model, tok, problems, n, seed)`: how to sample and judge (default: the text
    world's; the visual world passes its own)."""
    verdicts = verdicts or _verdicts
    out = {}
    for tier in SUPPORT_TIERS:
        ps = [p for p in problems if p.meta["tier"] == tier]
        if not ps:
            continue
        vs = verdicts(model, tok, ps, n, seed)
        cs = [sum(bool(v.strict) for v in row) for row in vs]
        share = sum(c > 0 for c in cs) / len(cs)
        out[tier] = {"problems": len(ps), "n": n, "supported": sum(c > 0 for c in cs),
                     "share": share, "ok": share >= 0.95,
                     "c_strict_median": sorted(cs)[len(cs) // 2],
                     f"strict_pass@{n}": sum(pass_at_k(n, c, n) for c in cs) / len(cs)}
    return out


def perplexity(model, tok, pairs: list[tuple[str, str]]) -> float:
    """exp(mean NLL per completion token, EOS included) of completions under `model`."""
    from boundlab.worlds.common.pretrain import encode_pairs

    nll, count = 0.0, 0
    for i in range(0, len(pairs), 64):
        b = encode_pairs(tok.get_vocab(), pairs[i: i + 64], tok.eos_token_id, tok.pad_token_id)
        # Right-padded rows, no attention to padding: plain causal LM loss summed per token.
        with torch.no_grad():
            logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits
        lp = torch.log_softmax(logits[:, :-1].float(), -1)
        lab = b["labels"][:, 1:]
        mask = lab != -100
        tok_lp = lp.gather(-1, lab.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        nll -= float(tok_lp[mask].sum())
        count += int(mask.sum())
    return math.exp(nll / count)


def weights_sha256(model_dir: Path) -> str:
    """The sha256 of a model folder's `model.safetensors`: what ties an audit to the weights."""
    h = hashlib.sha256()
    with open(Path(model_dir) / "model.safetensors", "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_audit(base: Path, teacher: Path | None, n: int = 256, per_tier: int = 50,
              support_n: int = 1024, support_per_tier: int = 50, seed: int = 0,
              base_audit: dict | None = None) -> dict:
    """`base_audit`: an earlier audit of the same weights (checked by sha256) whose base sections are
    kept as they are, so only the teacher is sampled; its n, per_tier and seed are used."""
    t0 = time.time()
    sha = weights_sha256(base)
    if base_audit is not None:
        if base_audit.get("base_sha256") != sha:
            raise SystemExit(f"audit: the earlier audit is of weights {base_audit.get('base_sha256')}, "
                             f"not of {base} ({sha}): it cannot be reused")
        res = {k: v for k, v in base_audit.items()
               if k not in ("teacher", "perplexity_under_base", "checks", "seconds")}
        res["base"] = str(base)
        n, per_tier, seed = res["n"], res["per_tier"], res["seed"]
        problems = toy2_problems("test", per_tier=per_tier)
        model, tok = _load(base)
    else:
        problems = toy2_problems("test", per_tier=per_tier)
        model, tok = _load(base)
        vs = _verdicts(model, tok, problems, n, seed)
        rates = decision_rates([row for p, row in zip(problems, vs) if p.meta["tier"] != "X"],
                               corpus_mix(base))
        tiers = tier_summary(problems, vs, n)
        res = {"base": str(base), "base_sha256": sha, "n": n, "per_tier": per_tier, "seed": seed,
               "decision_rates": rates, "tiers": tiers,
               "composition": composition(rates, tiers, problems)}
        sup_problems = toy2_problems("test", tiers=list(SUPPORT_TIERS), per_tier=support_per_tier)
        res["support"] = support(model, tok, sup_problems, support_n, seed + 1)
    if teacher is not None:
        tm, ttok = _load(teacher)
        tvs = _verdicts(tm, ttok, problems, max(8, n // 16), seed + 2)
        res["teacher"] = {t: {"strict_pass@1": d["strict_pass@1"]}
                          for t, d in tier_summary(problems, tvs, max(8, n // 16)).items()}
        res["teacher_sha256"] = weights_sha256(teacher)
        x_pairs = [(prompt(p.question), canonical_trace(p.question))
                   for p in problems if p.meta["tier"] == "X"]
        h1_pairs = [(prompt(p.question), canonical_trace(p.question))
                    for p in problems if p.meta["tier"] == "H1"]
        res["perplexity_under_base"] = {"teacher_X_traces": perplexity(model, tok, x_pairs),
                                        "canonical_H1_traces": perplexity(model, tok, h1_pairs)}
    res["checks"] = checks(res)
    res["seconds"] = round(time.time() - t0, 1)
    if base_audit is not None:
        res["seconds_base_sections"] = base_audit.get("seconds")
    return res


def checks(res: dict) -> dict[str, bool]:
    rates = res["decision_rates"]
    main = {c: r for c, r in rates.items() if "|" not in c and r["n"] >= 100}
    out = {"decision_rates_within_2x": all(r["ok"] for r in main.values()) and bool(main),
           "luck": all(t["luck_ok"] for t in res["tiers"].values()),
           "support": all(s["ok"] for s in res["support"].values()) and bool(res["support"])}
    n = res["n"]
    out["unsaturated_B_H2"] = all(res["tiers"][t][f"strict_pass@{n}"] < 0.95
                                  for t in ("B3", "B4", "H2") if t in res["tiers"])
    return out


def _print(res: dict) -> None:
    n = res["n"]
    print(f"== audit of {res['base']} (n={n}, {res['per_tier']} problems per tier)")
    print("decision rates (cell: rate [95% CI] of n, target, ok):")
    for cell, r in res["decision_rates"].items():
        print(f"  {cell:28s} {r['rate']:.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] of {r['n']:6d}"
              f"  target {r['target']}  {'ok' if r['ok'] else 'OFF'}")
    print(f"tiers (strict pass@1, answer pass@1, strict pass@{n}, answer pass@{n}, lucky pass@{n}):")
    for t, d in res["tiers"].items():
        print(f"  {t:3s} {d['strict_pass@1']:.4f} {d['answer_pass@1']:.4f} {d[f'strict_pass@{n}']:.4f}"
              f" {d[f'answer_pass@{n}']:.4f} {d[f'lucky_pass@{n}']:.4f}  luck {'ok' if d['luck_ok'] else 'OFF'}"
              f"  {d['strategy']}")
    print("composition (H tiers: measured vs predicted strict pass@1):")
    for t, d in res["composition"].items():
        print(f"  {t} measured {d['measured']:.5f} predicted {d['predicted']:.5f} ratio {d['ratio']}")
    print("support (c_strict > 0):")
    for t, d in res["support"].items():
        print(f"  {t} {d['supported']}/{d['problems']} at n={d['n']} ({d['share']:.3f}) "
              f"median c_strict {d['c_strict_median']}  strict pass@{d['n']} "
              f"{d['strict_pass@' + str(d['n'])]:.3f}  {'ok' if d['ok'] else 'OFF'}")
    if "teacher" in res:
        print("teacher strict pass@1:", {t: round(d["strict_pass@1"], 3) for t, d in res["teacher"].items()})
        print("perplexity under the base:", {k: round(v, 3) for k, v in res["perplexity_under_base"].items()})
    print("checks:", res["checks"], f"({res['seconds']} s)")


def add_args(ap: argparse.ArgumentParser, base: Path) -> None:
    """The options every audit shares (this one and the visual world's)."""
    ap.add_argument("--base", type=Path, default=base)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--per-tier", type=int, default=50)
    ap.add_argument("--support-n", type=int, default=1024)
    ap.add_argument("--support-per-tier", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON file (default: the assets' audit.json when auditing the shipped model)")


def save(res: dict, out: Path | None) -> None:
    """Print the audit and write it to `out` (None: print only)."""
    _print(res)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=1) + "\n")
        print(f"saved {out}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_args(ap, base_model_dir())
    ap.add_argument("--teacher", type=Path, default=None)
    ap.add_argument("--no-teacher", action="store_true")
    ap.add_argument("--base-audit", type=Path, default=None,
                    help="an earlier audit JSON of the same base weights (sha256-checked): keep its "
                         "base sections and sample only the teacher")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    teacher = None if args.no_teacher else (args.teacher or (
        teacher_model_dir() if args.base == base_model_dir() else None))
    base_audit = json.loads(args.base_audit.read_text()) if args.base_audit else None
    res = run_audit(args.base, teacher, args.n, args.per_tier, args.support_n,
                    args.support_per_tier, args.seed, base_audit=base_audit)
    save(res, args.out or (assets_dir() / "audit.json" if args.base == base_model_dir() else None))


if __name__ == "__main__":
    main()
