"""Per problem of B3 and B4 (the audit's support sample: 50 each, n = 1024, the audit's seed + 1, so the
same samples as `audit --seed 0`): strict successes, how often the bracket was honoured, and what
followed an honoured bracket.
    python docs/toy2_calibration/support_b.py BASE_DIR OUT.json"""
import collections, json, sys, torch
from pathlib import Path
torch.set_num_threads(1)
from boundlab.worlds.toyworld2.audit import _load, _verdicts
from boundlab.worlds.toyworld2.task import toy2_problems
model, tok = _load(Path(sys.argv[1]))
probs = toy2_problems("test", tiers=["B3", "B4", "H2"], per_tier=50)
out = []
for tier in ("B3", "B4"):
    ps = [p for p in probs if p.meta["tier"] == tier]
    for p, row in zip(ps, _verdicts(model, tok, ps, 1024, 1)):
        took = [v for v in row if v.info.get("decisions") and v.info["decisions"][0][1]]
        out.append({"tier": tier, "question": p.question, "strict": sum(bool(v.strict) for v in row),
                    "bracket_honoured": len(took),
                    "after_honoured": dict(collections.Counter(v.info["strategy"] for v in took))})
        r = out[-1]
        if r["strict"] == 0:
            print(tier, p.question, r, flush=True)
Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
for tier in ("B3", "B4"):
    rows = [r for r in out if r["tier"] == tier]
    print(tier, "supported", sum(r["strict"] > 0 for r in rows), "/", len(rows),
          "honoured rate", sum(r["bracket_honoured"] for r in rows) / (1024 * len(rows)))
