"""probe.py on the visual benchmarks' fixtures, through the front door: hand-written completions
scored by the `typed` verifier into the store (pass@k checked by hand), the prompts exported with
their image files, and a missing image folder refused in one line (exit 2)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data/visual_benchmarks"

# problem -> completions; the comment is the number judged correct (see tests/unit/test_answer_types.py).
VISTA = {
    "mathvista-1": ["<think>second bar</think> \\boxed{1.2}", "\\boxed{1.24}", "\\boxed{1.3}", "no idea"],  # 2
    "mathvista-2": ["\\boxed{1000}", "\\boxed{1000.0}", "\\boxed{1000.5}", "\\boxed{999}"],  # 2
    "mathvista-3": ["\\boxed{C}", "the answer is (C).", "\\boxed{145^\\circ}", "\\boxed{B. 145°}"],  # 3
    "mathvista-5": ["\\boxed{B}", "\\boxed{102}", "A is the first option.", "\\boxed{D}"],  # 0
    "mathvista-10": ["\\boxed{E}", "\\boxed{E}", "\\boxed{A}", "\\boxed{A}"],  # 2
    "mathvista-20": ["\\boxed{3.142}", "\\boxed{3.1}", "\\boxed{3.145}", "\\boxed{\\pi}"],  # 1
    "mathvista-30": ["\\boxed{[2, 3]}", "\\boxed{[3, 2]}", "Answer: [2, 3]", "\\boxed{2}"],  # 2
}
VISION = {
    "mathvision-4": ["\\boxed{6}", "\\boxed{7}"],  # 1
    "mathvision-6": ["\\boxed{D}", "the answer is D."],  # 2
    "mathvision-39": ["\\boxed{Red}", "\\boxed{blue}"],  # 1
    "mathvision-91": ["\\boxed{12 m}", "\\boxed{10}"],  # 1
    "mathvision-200": ["\\boxed{\\sqrt{12}}", "\\boxed{2\\sqrt{2}}"],  # 1
    "mathvision-59": ["\\boxed{D}", "\\boxed{E}"],  # 0
}


def _run(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, str(ROOT / "probe.py"), *overrides, "logger=none",
                           "verify.workers=1", "probe.bootstrap_iters=100"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def _samples(tmp_path: Path, table: dict[str, list[str]]) -> Path:
    f = tmp_path / "completions.jsonl"
    f.write_text("".join(json.dumps({"problem_id": pid, "completion": c}) + "\n"
                         for pid, cs in table.items() for c in cs))
    return f


def _passk(run_dir: Path) -> dict[int, float]:
    with (run_dir / "passk.csv").open() as f:
        return {int(r["k"]): float(r["pass_at_k"]) for r in csv.DictReader(f)}


def test_mathvista_samples_are_scored_by_answer_type(tmp_path):
    d = DATA / "mathvista"
    proc = _run(tmp_path, "task=mathvista", f"task.path={d / 'testmini.jsonl'}", f"task.visual.image_dir={d}",
                f"samples={_samples(tmp_path, VISTA)}", f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    c = [2, 2, 3, 0, 2, 1, 2]
    # pass@k = mean over problems of 1 - C(4-c, k) / C(4, k)
    pass2 = sum(1 - {0: 6, 1: 3, 2: 1, 3: 0}[x] / 6 for x in c) / 7
    got = _passk(tmp_path / "run")
    assert abs(got[1] - sum(c) / 28) < 1e-9 and abs(got[2] - pass2) < 1e-9 and abs(got[4] - 6 / 7) < 1e-9
    assert "solvable (c > 0): 6 of 7" in proc.stdout


def test_mathvision_choices_and_math_verify(tmp_path):
    d = DATA / "mathvision"
    proc = _run(tmp_path, "task=mathvision", f"task.path={d / 'testmini.jsonl'}", f"task.visual.image_dir={d}",
                f"samples={_samples(tmp_path, VISION)}", f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = _passk(tmp_path / "run")
    assert abs(got[1] - 6 / 12) < 1e-9 and abs(got[2] - 5 / 6) < 1e-9


def test_export_carries_the_image_files(tmp_path):
    d = DATA / "mathvision"
    out = tmp_path / "prompts.jsonl"
    proc = _run(tmp_path, "task=mathvision", f"task.path={d / 'testmini.jsonl'}", f"task.visual.image_dir={d}",
                f"export={out}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["images"] for r in rows] == [[str((d / "images" / f"{i}.png").absolute())]
                                           for i in (4, 6, 39, 91, 200, 59)]
    assert rows[1]["messages"][0] == {"role": "system", "content": "You are a helpful assistant."}
    assert rows[1]["messages"][1]["content"].endswith("Choices: A, B, C, D, E You FIRST think about the "
                                                      "reasoning process as an internal monologue and then "
                                                      "provide the final answer. The reasoning process MUST BE "
                                                      "enclosed within <think> </think> tags. The final answer "
                                                      "MUST BE put in \\boxed{}.")


def test_missing_image_folder_is_one_line(tmp_path):
    d = DATA / "mathvista"
    proc = _run(tmp_path, "task=mathvista", f"task.path={d / 'testmini.jsonl'}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "task=mathvista needs task.visual.image_dir: your own copy of the benchmark (nothing is downloaded), "
        "e.g. task.path=/data/mathvista/testmini.jsonl task.visual.image_dir=/data/mathvista")
