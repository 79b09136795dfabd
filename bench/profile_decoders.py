"""Where a decoding run's time goes: torch.profiler over the sampler alone (no verify/store), toy2 base,
4 problems x 256 samples, 108 new tokens, 256 rows, one thread, for the compact decoder (`auto`) and
`compact-cb`. Prints self-CPU seconds per op class: linear matmuls (aten::mm), attention over the
KV cache (aten::bmm), the rest. A profile, not a timing to compare runs by (bench_probe.py is that).

    python bench/profile_decoders.py
"""
import torch, sys, json
torch.set_num_threads(1)
import boundlab.builtins
from types import SimpleNamespace
from transformers import AutoModelForCausalLM, AutoTokenizer
from boundlab.worlds.toyworld2.paths import base_model_dir
from boundlab.sampling.hf import HFSampler
from boundlab.sampling.base import GenSettings
from boundlab.tasks import build_task
d=base_model_dir(); m=AutoModelForCausalLM.from_pretrained(d).eval(); tok=AutoTokenizer.from_pretrained(d)
task=build_task(SimpleNamespace(name="toy2", split="test", template=None, chat=False, system=None, verifier=None, path=None))
task=task.with_problems(task.problems[:4])
P=[task.render(p) for p in task.problems]
g=GenSettings(1.0,1.0,108)
from torch.profiler import profile, ProfilerActivity
for eng in ("auto", "compact-cb"):
    s=HFSampler(m,tok,batch_size=256,engine=eng)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        if eng=="auto": [s.generate([(p,256)],g,0) for p in P]
        else: s.generate([(p,256) for p in P],g,0)
    tot={}
    for e in prof.key_averages():
        if not e.key.startswith("aten::"): continue
        k = e.key if e.key in ("aten::mm","aten::bmm","aten::index_copy_","aten::fill_","aten::_softmax") else "other aten ops"
        tot[k]=tot.get(k,0)+e.self_cpu_time_total/1e6
    print(eng, {k: round(v,2) for k,v in sorted(tot.items(), key=lambda x:-x[1])}, "aten total", round(sum(tot.values()),2))
