"""Why r2's unsupported B4/H2 problems have no strict success: per problem, which decisions the base
takes and what happens after it takes them all (n = 1024, seed 11).
    python docs/toy2_calibration/support_why.py [BASE_DIR]   (default /work/tw2run2/base)"""
import json, sys, collections, torch
from pathlib import Path
torch.set_num_threads(1)
from boundlab.worlds.toyworld2.audit import _load, _verdicts
from boundlab.worlds.toyworld2.task import toy2_problems
model, tok = _load(Path(sys.argv[1] if len(sys.argv) > 1 else "/work/tw2run2/base"))
qs = ['7*(7+2)+5','2*9*(3+1)','5*1*(5+6)','3*(3+3)*5','2*2*(9+3)', '2+6*4*2+8','4*3+4*3*2','1*5+9*2*2','2+6*4*2+9']
allp = {p.question: p for t in ["B4","H2"] for p in toy2_problems("test", tiers=[t], per_tier=50)}
ps = [allp[q] for q in qs]
vs = _verdicts(model, tok, ps, 1024, 11)
for p, row in zip(ps, vs):
    strat = collections.Counter(v.info["strategy"] for v in row)
    # decision outcomes: for first decision cell, took?
    firsts = collections.Counter()
    for v in row:
        d = v.info["decisions"]
        firsts[tuple(bool(x[1]) for x in d)] += 1
    took_all = sum(1 for v in row if v.info["decisions"] and all(x[1] for x in v.info["decisions"]))
    slips_after = collections.Counter(v.info["strategy"] for v in row if v.info["decisions"] and all(x[1] for x in v.info["decisions"]))
    print(p.question, p.meta["tier"], "strict", sum(bool(v.strict) for v in row), dict(strat.most_common(5)))
    print("   decisions taken pattern", dict(firsts.most_common(6)), "| all-taken outcomes", dict(slips_after))
