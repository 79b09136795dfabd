"""scripts/gpu_check.sh --dry-run on a machine without CUDA: one JSON document on stdout, every GPU part
skipped with a line on stderr (its command's config composed and validated as the GPU machine would
see it), the hf probe run for real at a tiny size, and the prompt tokens vLLM would get equal to the hf
sampler's. The toy-world analogue (cpu_analogue) is left out here: the detached-watcher tests run it."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _no_cuda():
    import torch

    return not torch.cuda.is_available()


@pytest.mark.skipif(not _no_cuda(), reason="a GPU is visible: the script runs for real there")
def test_dry_run_skips_gpu_parts_and_prints_json(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([str(ROOT / "scripts/gpu_check.sh"), "--dry-run", "--work", str(tmp_path),
                        "--only", "probe_compare,grpo_vllm,zero2_watcher"],
                       env=env, capture_output=True, text=True, timeout=400)
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(p.stdout)
    assert report["mode"] == "dry-run" and report["env"]["cuda"] is False
    cmp = report["probe_compare"]
    assert cmp["hf_cpu_tiny"]["rc"] == 0 and cmp["hf_cpu_tiny"]["samples"] == 4
    assert set(cmp["hf_cpu_tiny"]["passk"]) == {"1", "2"}
    assert cmp["vllm_prompt_tokens_equal_hf"] is True
    for part in (report["grpo_vllm"], report["zero2_watcher"]["zero2_bf16"], report["zero2_watcher"]["watcher"]):
        assert part["config"] == "composes and validates (CUDA and vLLM assumed)", part
        assert "skipped" in part
    skips = [ln for ln in p.stderr.splitlines() if ln.startswith("[gpu_check] skipped: ")]
    assert len(skips) == 4, p.stderr


@pytest.mark.skipif(not _no_cuda(), reason="a GPU is visible")
def test_without_dry_run_and_without_cuda_is_one_line():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([str(ROOT / "scripts/gpu_check.sh")], env=env, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stderr) == (2, "error: no CUDA device visible; run with --dry-run on a machine "
                                           "without a GPU\n")
