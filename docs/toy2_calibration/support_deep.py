"""Support diagnostic: which B4/H2 problems have no strict success at n=1024 (the audit's seed), and do
they have any at n=4096 (a fresh seed)?  python docs/toy2_calibration/support_deep.py BASE_DIR OUT.json"""
import json, sys, time, torch
from pathlib import Path
torch.set_num_threads(1)
from boundlab.worlds.toyworld2.audit import _load, _verdicts
from boundlab.worlds.toyworld2.task import toy2_problems
model, tok = _load(Path(sys.argv[1]))
out = {}
t0 = time.time()
for tier in ["B4", "H2"]:
    ps = toy2_problems("test", tiers=[tier], per_tier=50)
    vs = _verdicts(model, tok, ps, 1024, 1)  # the audit's support seed (seed + 1)
    cs = [sum(bool(v.strict) for v in row) for row in vs]
    zero = [p for p, c in zip(ps, cs) if c == 0]
    deep = _verdicts(model, tok, zero, 4096, 7)
    dc = [sum(bool(v.strict) for v in row) for row in deep]
    out[tier] = {"n1024_zero": [p.problem_id for p in zero], "n1024_counts": cs,
                 "questions": [p.question for p in zero], "n4096_strict": dc}
    print(tier, len(zero), "zero at 1024;", "strict at 4096:", dc, f"{time.time()-t0:.0f}s", flush=True)
Path(sys.argv[2]).write_text(json.dumps(out, indent=1))
