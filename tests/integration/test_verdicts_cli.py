"""probe.py twice on one store with a changed verifier setting (issue 10, item 7): a new probe key
and fresh verdicts, never the stale ones; the completions are re-verified, not sampled again."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from boundlab.verify.math import MathVerifier

ROOT = Path(__file__).resolve().parents[2]


def probe(tmp_path, *overrides):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), "task=jsonl",
                           f"task.path={tmp_path / 'problems.jsonl'}",
                           f"samples={tmp_path / 'samples.jsonl'}", "logger=none",
                           "probe.bootstrap_iters=10", *overrides],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    key = re.search(r"\(probe ([0-9a-f]{20})\)", proc.stdout).group(1)
    pass1 = re.search(r"pass@1\s+([0-9.]+)", proc.stdout).group(1)
    return proc.stdout, key, pass1


def test_changed_max_answer_chars_is_a_new_probe_with_fresh_verdicts(tmp_path):
    (tmp_path / "problems.jsonl").write_text(
        json.dumps({"problem_id": "a", "question": "What is 1/2?", "answer": r"\frac{1}{2}"}) + "\n"
        + json.dumps({"problem_id": "b", "question": "What is 2+2?", "answer": "4"}) + "\n")
    (tmp_path / "samples.jsonl").write_text("".join(
        json.dumps({"problem_id": pid, "completion": c}) + "\n"
        for pid, c in [("a", r"So \boxed{0.5}"), ("a", r"So \boxed{\frac{1}{2}}"),
                       ("b", r"So \boxed{4}"), ("b", r"So \boxed{4.0}")]))
    out1, key1, p1 = probe(tmp_path, "verify.math.max_answer_chars=512", f"hydra.run.dir={tmp_path / 'r1'}")
    assert p1 == "1.0000" and "scored 4 new completions" in out1
    # Same store, a setting that changes a verdict: \frac{1}{2} (11 characters) is too long now.
    out2, key2, p2 = probe(tmp_path, "verify.math.max_answer_chars=3", f"hydra.run.dir={tmp_path / 'r2'}")
    assert key2 != key1 and p2 == "0.7500"
    assert (f"[boundlab] re-verified 4 stored completions under verifier math v{MathVerifier.version} "
            f"(sampled for probe {key1}; the verifier changed, not the samples)\n") in out2
    # Back to the first setting: its own stored verdicts, nothing re-verified or scored.
    out3, key3, p3 = probe(tmp_path, "verify.math.max_answer_chars=512", f"hydra.run.dir={tmp_path / 'r3'}")
    assert key3 == key1 and p3 == "1.0000"
    assert "re-verified" not in out3 and "all samples came from the store" in out3
    # A setting that cannot change a verdict keeps the key.
    _, key4, _ = probe(tmp_path, "verify.math.max_answer_chars=512", "verify.workers=1",
                       f"hydra.run.dir={tmp_path / 'r4'}")
    assert key4 == key1
