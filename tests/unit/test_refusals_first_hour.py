"""Refusals a new user meets first, each one line and exit 2: a model whose context cannot hold the
task's prompts, and a non-numeric value for a numeric key (not Hydra's multi-line block)."""

import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.cli import bad_value
from boundlab.config import ConfigError, ProbeMain, TrainMain
from boundlab.training.context_fit import check_context, model_positions

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path, script, *args):
    r = subprocess.run([sys.executable, str(ROOT / script), *args, f"hydra.run.dir={tmp_path / 'run'}"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    return r, lines


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_toy_model_with_math500_is_refused_in_one_line(tmp_path):
    r, lines = _run(tmp_path, "train.py", "task=math500", "backend.torch_threads=1")
    assert r.returncode == 2, r.stderr[-2000:]
    assert lines[-1].startswith("error: model=toy2 holds 128 positions, but task=math500 cannot fit: "), lines
    assert "choose a model with a longer context" in lines[-1]
    assert "Traceback" not in r.stderr and "Token indices sequence length" not in r.stderr
    assert not (tmp_path / "run" / "probes.jsonl").exists() and not (tmp_path / "run" / "run_info.json").exists()


class _Tok:
    def __call__(self, text, add_special_tokens=False, verbose=False):
        return {"input_ids": list(text)}


class _Task:
    name = "t"

    def __init__(self, prompts):
        from boundlab.tasks.base import Problem

        self.problems = [Problem(f"p{i}", q, "1") for i, q in enumerate(prompts)]

    def __len__(self):
        return len(self.problems)

    def render(self, p, tok):
        return p.question


def test_context_check_counts_prompt_plus_new_tokens(tmp_path):
    (tmp_path / "config.json").write_text('{"max_position_embeddings": 20}')
    assert model_positions(tmp_path) == 20
    task = _Task(["a" * 10, "b" * 12])
    check_context("m", tmp_path, _Tok(), task, {"probe.max_new_tokens": 8})  # 12 + 8 = 20 fits
    with pytest.raises(ConfigError, match=r"longest prompt is 12 tokens \(problem p1\) and "
                                          r"algo.max_completion_length=9 more"):
        check_context("m", tmp_path, _Tok(), task, {"probe.max_new_tokens": 8, "algo.max_completion_length": 9})
    with pytest.raises(ConfigError, match=r"its longest prompt alone is 25 tokens"):
        check_context("m", tmp_path, _Tok(), _Task(["c" * 25]), {"probe.max_new_tokens": 1})
    (tmp_path / "config.json").write_text('{"text_config": {"max_position_embeddings": 64}}')
    assert model_positions(tmp_path) == 64
    assert model_positions(tmp_path / "nowhere") is None


@pytest.mark.parametrize("script,arg,line", [
    ("train.py", "probe.n=abc", "error: probe.n=abc: must be an integer"),
    ("probe.py", "probe.n=abc", "error: probe.n=abc: must be an integer"),
    ("train.py", "probe.temperature=hot", "error: probe.temperature=hot: must be a number"),
])
def test_non_numeric_value_for_a_numeric_key_is_one_line(tmp_path, script, arg, line):
    r, lines = _run(tmp_path, script, arg)
    assert r.returncode == 2 and lines == [line], r.stderr
    assert not (tmp_path / "run").exists()


def test_bad_value_leaves_good_values_sweeps_and_interpolations_alone():
    ok = ["probe.n=8", "algo.learning_rate=1e-4", "probe.temperature=0.7", "probe.n=null",
          "probe.n=${oc.env:N}", "-m", "probe.n=choice(4,8)", "logger.tags=[a,b]", "algo=grpo",
          "+x.y=abc", "train.max_steps=10"]
    assert bad_value(ok, TrainMain) is None
    assert bad_value(["probe.n=8,abc"], ProbeMain) == "probe.n=abc: must be an integer"
    assert bad_value(["train.max_steps=1.5"], TrainMain) == "train.max_steps=1.5: must be an integer"


def test_a_prompt_that_fits_says_how_many_new_tokens_would():
    from types import SimpleNamespace

    from boundlab.config import ConfigError
    from boundlab.worlds.toyworld.paths import base_model_dir  # the first toy model: 64 positions
    from boundlab.training.context_fit import check_context
    from boundlab.tasks.base import Problem, Task

    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base_model_dir())
    task = Task("t", [Problem("p0", "1+2*3", "7")], template="Q:{question};")
    longest = len(tok("Q:1+2*3;", add_special_tokens=False)["input_ids"])
    with pytest.raises(ConfigError) as e:
        check_context("toy", base_model_dir(), tok, task, {"probe.max_new_tokens": 80,
                                                         "algo.max_completion_length": 80})
    room = 64 - longest
    assert f"set probe.max_new_tokens<={room} and algo.max_completion_length<={room}" in str(e.value)
    check_context("toy", base_model_dir(), tok, task, {"probe.max_new_tokens": room})  # fits: no error
