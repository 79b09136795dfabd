"""The temperature control matched on decision-token entropy (`match_entropy.tokens=decision`).

On the toy2 base against itself: sampled at T0 = 0.7 against its own decision-token entropy at
T = 1.0, the search must come back near T = 1; each search point's entropy must be the decision-token
entropy recomputed here, independently, from the store's texts under the model loaded again.
Bad input: one line each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from boundlab.worlds.toyworld2.paths import base_model_dir

ROOT = Path(__file__).resolve().parents[2]


def run_probe(tmp_path, *overrides, check=True):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), *overrides], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"probe.py failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_toy2_base_against_itself_on_decision_tokens(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import boundlab.builtins  # noqa: F401
    from boundlab.probe.decision_entropy import probe_split
    from boundlab.probe.entropy_match import CLOSEST, MATCHED
    from boundlab.probe.store import Store
    from boundlab.tasks import build_task
    from boundlab.worlds.toyworld2.decisions import decision_offsets

    torch.set_num_threads(1)
    base = base_model_dir()
    run_dir = tmp_path / "run"
    proc = run_probe(tmp_path, "probe.limit=16", "probe.n=4", "probe.temperature=0.7",
                     "probe.bootstrap_iters=100", f"match_entropy.of={base}",
                     "match_entropy.base_temperature=1.0", "match_entropy.problems=16",
                     "match_entropy.n=8", "match_entropy.tol=0.05", "match_entropy.tokens=decision",
                     "sampler.torch_threads=1", "logger=none", f"hydra.run.dir={run_dir}")
    out = json.loads((run_dir / "entropy_match.json").read_text())
    s = out["search"]
    assert s["tokens"] == "decision" and "matching decision-token entropy" in proc.stdout
    assert s["status"] in (MATCHED, CLOSEST), s
    assert abs(s["chosen_temperature"] - 1.0) <= 0.15, s
    pts = {p["temperature"]: p for p in s["points"]}
    assert pts[0.7]["entropy"] < s["target_entropy"] < pts[2.1]["entropy"]
    # Recomputed here: the same texts, the model loaded again, each point at its temperature.
    task = build_task(SimpleNamespace(name="toy2", split="test", template=None, chat=False,
                                      system=None, verifier=None, path=None))
    model, tok = AutoModelForCausalLM.from_pretrained(base).eval(), AutoTokenizer.from_pretrained(base)
    store = Store(tmp_path / "store.sqlite", writable=False)
    for t in (0.7, 2.1):
        ids = {pc.problem_id for pc in store.counts(pts[t]["key"])}
        assert len(ids) == 16
        sub = task.with_problems([p for p in task.problems if p.problem_id in ids])
        split = probe_split(store, pts[t]["key"], sub, model, tok, t,
                            lambda p, text: decision_offsets(p.question, text), 1.0, 8)
        assert split.decision_tokens > 16
        assert split.decision == pytest.approx(pts[t]["entropy"], rel=1e-4)
        assert s["splits"][pts[t]["key"]]["rest_tokens"] == split.rest_tokens
        # the decision tokens carry far more entropy per token than the rest
        assert split.decision > 3 * split.rest
    store.close()


@pytest.mark.parametrize("overrides, says", [
    (["match_entropy.tokens=some"], "match_entropy.tokens=some: must be one of all, decision"),
    (["match_entropy.tokens=decision", "task=toy_arith", "model=toy", "probe=toy"],
     "match_entropy.tokens=decision: needs task=toy2"),
])
def test_bad_input_is_one_line(tmp_path, overrides, says):
    proc = run_probe(tmp_path, f"match_entropy.of={base_model_dir()}", *overrides, "logger=none",
                     f"hydra.run.dir={tmp_path / 'r'}", check=False)
    assert proc.returncode == 2, proc.stderr
    err = [line for line in proc.stderr.splitlines()
           if line.strip() and not line.startswith("[boundlab] note:")]
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], proc.stderr
