"""Issue 22 through the front door: `probe.py task=jsonl samples=...`, one completion per problem.

Every case of the issue's "Why" is a problem here; the probe must judge each one as a reader would,
print the box share, and store each verdict's outcome.
"""

import csv
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# problem_id: (gold, completion, correct, outcome)
CASES = {
    "golden": ("2", r"Therefore, the answer is $\frac{1+\sqrt{5}}{2}$.", False, "wrong"),
    "sqrt3": ("3", r"$\sqrt{3}$", False, "wrong"),
    "interval": ("1", r"The set is $[0,1)$.", False, "wrong"),
    "hedge": ("5", r"It is \boxed{3} or maybe \boxed{5}.", False, "hedge"),
    "multi": ("1, 2", r"The solutions are $\boxed{1}$ and $\boxed{2}$.", True, "correct"),
    "fraction": ("10/9", r"So the final answer is \(\frac{10}{9}\).", True, "correct"),
    "thousand": ("1000", "So there are 1 000 of them.", True, "correct"),
}


def test_issue_cases_through_probe_samples(tmp_path):
    problems = tmp_path / "problems.jsonl"
    samples = tmp_path / "samples.jsonl"
    with problems.open("w") as fp, samples.open("w") as fs:
        for pid, (gold, completion, _, _) in CASES.items():
            fp.write(json.dumps({"problem_id": pid, "question": "q", "answer": gold}) + "\n")
            fs.write(json.dumps({"problem_id": pid, "completion": completion}) + "\n")
    run_dir = tmp_path / "run"
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), "task=jsonl",
                           f"task.path={problems}", f"samples={samples}", "logger=none",
                           "verify.workers=1", f"hydra.run.dir={run_dir}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    with (run_dir / "problems.csv").open() as f:
        solved = {r["problem_id"]: int(r["c"]) for r in csv.DictReader(f)}
    assert solved == {pid: int(ok) for pid, (_, _, ok, _) in CASES.items()}
    db = sqlite3.connect(tmp_path / "store.sqlite")
    outcomes = dict(db.execute("SELECT problem_id, outcome FROM samples"))
    assert outcomes == {pid: outcome for pid, (_, _, _, outcome) in CASES.items()}
    # 2 of the 7 completions hold a box; none was cut off (external samples carry no finish flag).
    assert "  answers: 28.6% with a box, 0.0% truncated (cut off with no final answer; 0 of 7)" \
        in proc.stdout.splitlines()


def test_real_model_never_gets_the_toy_probe_silently(tmp_path):
    problems = tmp_path / "problems.jsonl"
    samples = tmp_path / "samples.jsonl"
    problems.write_text(json.dumps({"problem_id": "a", "question": "q", "answer": "3"}) + "\n")
    samples.write_text(json.dumps({"problem_id": "a", "completion": r"\boxed{3}"}) + "\n")
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1")
    base = [sys.executable, str(ROOT / "probe.py"), "model=hf", "model.path=/nowhere", "task=jsonl",
            f"task.path={problems}", f"samples={samples}", "logger=none", "verify.workers=1"]
    note = ("[boundlab] model=hf is not a toy-world model: probe settings from probe=real "
            "(max_new_tokens=1024), not the toy world's probe=toy2 (name probe=... to choose)")
    proc = subprocess.run(base + [f"hydra.run.dir={tmp_path / 'r1'}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == note
    # Chosen by name, the toy settings are kept (a choice, not a silent default).
    proc = subprocess.run(base + ["probe=toy", f"hydra.run.dir={tmp_path / 'r2'}"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert note not in proc.stdout
