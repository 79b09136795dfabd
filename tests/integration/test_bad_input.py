"""The hostile-input suite through the real entry points: every bad input ends with exit code 2 and
one `error:` line on stderr that names the key, file (and line) or path, before any model is loaded.

Each case costs one `python probe.py` / `python train.py` start (2-5 s, no model), so all cases are
launched once per module, two at a time, and the tests below only read their results.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LIMIT_LINE = "must be >= 1 (the first N problems), or null for all; 0 and negative values have no meaning"


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _cases(d: Path) -> dict[str, tuple[str, list[str], str]]:
    """id -> (entry point, overrides, the expected last line of stderr)."""
    good = d / "good.jsonl"
    good.write_text(json.dumps({"problem_id": "a", "prompt": "1+1?", "answer": "2"}) + "\n")
    null_gold = d / "null_gold.jsonl"
    null_gold.write_text(json.dumps({"problem_id": "a", "prompt": "1+1?", "answer": "2"}) + "\n"
                         + json.dumps({"problem_id": "b", "prompt": "2+2?", "answer": None}) + "\n")
    empty = d / "empty.jsonl"
    empty.write_bytes(b"")
    latin1 = d / "latin1.jsonl"
    latin1.write_bytes('{"problem_id": "a", "prompt": "caf\u00e9", "answer": "1"}\n'.encode("latin-1"))
    samples_latin1 = d / "samples_latin1.jsonl"
    samples_latin1.write_bytes('{"problem_id": "aime24-0", "completion": "d\u00e9j\u00e0 \\\\boxed{204}"}\n'
                               .encode("latin-1"))
    corrupt_store = d / "corrupt.sqlite"
    corrupt_store.write_bytes(b"not a database at all " * 100)
    store_dir = d / "store_dir"
    store_dir.mkdir()
    from boundlab.worlds.toyworld import paths

    model = d / "torn_model"
    shutil.copytree(paths.base_model_dir(), model)
    weights = model / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 3])
    header = int.from_bytes(data[:8], "little")

    probe, train = "probe.py", "train.py"
    tiny = ["task=aime24", "probe.limit=2", "probe.n=1", "logger=none"]
    cases = {
        "probe.n=0": (probe, ["probe.n=0"],
                      "error: probe.n=0: must be >= 1 (samples per problem; pass@k is reported for k = 1..n)"),
        "probe.limit=-1": (probe, ["probe.limit=-1"], f"error: probe.limit=-1: {LIMIT_LINE}"),
        "probe.limit=0": (probe, ["probe.limit=0"], f"error: probe.limit=0: {LIMIT_LINE}"),
        # One setting cuts the probed task (probe.limit); its old twin is refused naming it.
        "task.limit=-1": (probe, ["task.limit=-1"],
                          "error: config key 'task.limit' moved to 'probe.limit': write probe.limit=-1"),
        "probe.temperature=-1": (probe, ["probe.temperature=-1"],
                                 "error: probe.temperature=-1.0: must be >= 0 (0 = greedy decoding: every "
                                 "sample is the same; > 0 samples)"),
        "probe.top_p=0": (probe, ["probe.top_p=0"],
                          "error: probe.top_p=0.0: must be in (0, 1] (1 = no nucleus truncation)"),
        "probe.ci=2": (probe, ["probe.ci=2"],
                       "error: probe.ci=2.0: must be a confidence level in (0, 1), e.g. 0.95"),
        "probe.bootstrap_iters=0": (probe, ["probe.bootstrap_iters=0"],
                                    "error: probe.bootstrap_iters=0: must be >= 1 (bootstrap resamples for "
                                    "the confidence intervals)"),
        "probe.max_new_tokens=0": (probe, ["probe.max_new_tokens=0"],
                                   "error: probe.max_new_tokens=0: must be >= 1"),
        "task=schema": (probe, ["task=schema"],
                        "error: task=schema: there is no such task (conf/task/schema.yaml); choose one of: "
                        + ", ".join(sorted(p.stem for p in (ROOT / "conf/task").glob("*.yaml")))),
        "algo=schema": (train, ["algo=schema"],
                        "error: algo=schema: there is no such algo (conf/algo/schema.yaml); choose one of: "
                        + ", ".join(sorted(p.stem for p in (ROOT / "conf/algo").glob("*.yaml")))),
        "null gold": (probe, ["task=jsonl", f"task.path={null_gold}", "probe.n=1"],
                      f"error: {null_gold}:2: 'answer' is null; every problem needs a gold answer "
                      f"(drop the line or fill it in)"),
        "empty task file": (probe, ["task=jsonl", f"task.path={empty}"],
                            f"error: {empty}: the file is empty; it needs one JSON object per line"),
        "non-UTF-8 task file": (probe, ["task=jsonl", f"task.path={latin1}"],
                                f"error: {latin1}:1: not UTF-8 text (byte 0xe9 at column 35); re-save the "
                                f"file as UTF-8"),
        "empty samples file": (probe, ["task=aime24", f"samples={empty}", "logger=none"],
                               f"error: {empty}: the file is empty; it needs one JSON object per line"),
        "non-UTF-8 samples file": (probe, ["task=aime24", f"samples={samples_latin1}", "logger=none"],
                                   f"error: {samples_latin1}:1: not UTF-8 text (byte 0xe9 at column 44); "
                                   f"re-save the file as UTF-8"),
        "store is a directory": (probe, [*tiny, f"store.path={store_dir}"],
                                 f"error: store.path={store_dir} is a directory, not a SQLite file: set "
                                 f"store.path={store_dir / 'store.sqlite'} (or BOUNDLAB_STORE)"),
        "store is corrupt": (probe, [*tiny, f"store.path={corrupt_store}"],
                             f"error: the probe store {corrupt_store} is corrupt (file is not a database): "
                             f"move it aside with mv {corrupt_store} {corrupt_store}.corrupt and rerun (its "
                             f"probes are sampled again), or after the mv salvage what is readable: sqlite3 "
                             f"{corrupt_store}.corrupt .recover | sqlite3 {corrupt_store}"),
        "torn safetensors": (probe, ["model=hf", f"model.path={model}", *tiny],
                             f"error: model file {weights} is corrupt: its tensors need {len(data) - 8 - header} "
                             f"bytes of data but it holds {len(data) // 3 - 8 - header} (truncated or "
                             f"overwritten); restore or re-download it (or re-save the model) and rerun"),
        "grpo rollouts=1": (train, ["algo=grpo", "algo.rollouts=1"],
                            "error: algo=grpo normalises each reward within the group of rollouts of its "
                            "prompt, so algo.rollouts must be >= 2 (got 1)"),
        "sft_distill kl.coef": (train, ["algo=sft_distill", "kl.coef=0.001"],
                                "error: algo=sft_distill has no KL penalty (the teacher is the target), so "
                                "kl.coef=0.001 would be ignored: drop the kl.* override(s)"),
        "onpolicy_distill kl.where": (train, ["algo=onpolicy_distill", "kl.where=loss"],
                                      "error: algo=onpolicy_distill has no KL penalty (the teacher is the "
                                      "target), so kl.where=loss would be ignored: drop the kl.* override(s)"),
        "task=jsonl without a path": (probe, ["task=jsonl"],
                                      "error: task=jsonl needs task.path=/path/to/problems.jsonl"),
        "export into a directory": (probe, ["task=aime24", f"export={store_dir}"],
                                    f"error: is a directory: {store_dir}"),
        "train.max_steps=0": (train, ["train.max_steps=0"], "error: train.max_steps=0: must be >= 1"),
    }
    if importlib.util.find_spec("vllm") is None:
        cases["sampler=vllm"] = (probe, ["sampler=vllm"],
                                 "error: sampler=vllm needs vLLM, which is not installed here: install it on "
                                 "a GPU machine (pip install 'boundlab[gpu]') or use sampler=hf")
    if not _cuda():
        cases["backend=gpu"] = (train, ["backend=gpu"],
                                "error: backend=gpu needs a CUDA GPU and torch sees none here: use backend=cpu "
                                "(or backend=zero2_cpu / zero3_cpu for the DeepSpeed path on CPU processes)")
    return cases


def _run(d: Path, case_id: str, entry: str, overrides: list[str]) -> subprocess.CompletedProcess:
    slug = "".join(c if c.isalnum() else "_" for c in case_id)
    env = dict(os.environ, BOUNDLAB_STORE=str(d / slug / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, str(ROOT / entry), *overrides, f"hydra.run.dir={d / slug / 'run'}",
           "sampler.torch_threads=1"]
    return subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_input")
    cases = _cases(d)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {cid: pool.submit(_run, d, cid, entry, ov) for cid, (entry, ov, _) in cases.items()}
        return d, cases, {cid: f.result() for cid, f in futures.items()}


CASE_IDS = ["probe.n=0", "probe.limit=-1", "probe.limit=0", "task.limit=-1", "probe.temperature=-1",
            "probe.top_p=0", "probe.ci=2", "probe.bootstrap_iters=0", "probe.max_new_tokens=0",
            "task=schema", "algo=schema", "null gold", "empty task file", "non-UTF-8 task file",
            "empty samples file", "non-UTF-8 samples file", "store is a directory", "store is corrupt",
            "torn safetensors", "grpo rollouts=1", "sft_distill kl.coef", "onpolicy_distill kl.where",
            "train.max_steps=0", "task=jsonl without a path", "export into a directory", "sampler=vllm",
            "backend=gpu"]


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_bad_input_is_one_line_and_exit_2(results, case_id):
    d, cases, procs = results
    if case_id not in cases:
        pytest.skip("this machine has what the case lacks (CUDA or vLLM)")
    _, _, line = cases[case_id]
    proc = procs[case_id]
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert [x for x in err if x.startswith("error:")] == [line]
    assert err[-1] == line
    # Nothing was loaded: no model, and (but for a samples file, read into an open store) not even
    # the store was created.
    assert "[boundlab] loaded" not in proc.stdout
    slug = "".join(c if c.isalnum() else "_" for c in case_id)
    assert (d / slug / "store.sqlite").exists() == ("samples file" in case_id)


def test_jsonl_task_prompts_keep_their_boxed_braces(tmp_path):
    """task=jsonl crashed on every prompt (str.format read `\\boxed{}`); export and score now work."""
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"problem_id": "a", "prompt": "1+1?", "answer": "2"}) + "\n"
                    + json.dumps({"problem_id": "b", "prompt": "Is {x} a set?", "answer": "3"}) + "\n")
    out = tmp_path / "prompts.jsonl"
    proc = _run(tmp_path, "export", "probe.py", ["task=jsonl", f"task.path={good}", "task.chat=false",
                                                 f"export={out}"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    prompts = [json.loads(x)["prompt"] for x in out.read_text().splitlines()]
    assert prompts == ["1+1?\nPlease reason step by step, and put your final answer within \\boxed{}.",
                       "Is {x} a set?\nPlease reason step by step, and put your final answer within \\boxed{}."]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"problem_id": pid, "completion": c}) + "\n" for pid, c in
                               [("a", "so \\boxed{2}"), ("a", "The answer is None"), ("b", "\\boxed{3}"),
                                ("b", "\\boxed{4}")]))
    proc = _run(tmp_path, "score", "probe.py", ["task=jsonl", f"task.path={good}", f"samples={samples}",
                                                "logger=none"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    problems = (tmp_path / "score" / "run" / "problems.csv").read_text().splitlines()
    assert problems == ["problem_id,n,c", "a,2,1", "b,2,1"]
