"""The device check (issue 16): every GPU path BoundLab has, exercised once, as one JSON document.

    scripts/gpu_check.sh                 # on a GPU machine: all parts (< 8 min on one H100/H200)
    scripts/gpu_check.sh --dry-run       # here (no CUDA): GPU parts skipped with a line, CPU analogues run

Parts (each a real entry point in a subprocess, its own store and run dir under --work):
- probe_compare: SmolLM2-135M-Instruct on the first 30 MATH500 problems with sampler=hf and sampler=vllm
  at the same settings: pass@k of each with its CI, samples/s of each (sampling only, model load
  excluded), and whether the two curves' CIs overlap at every k. Dry run: the hf probe at a tiny size,
  and the prompt tokens vLLM would get compared with the hf sampler's (no GPU needed for that).
- grpo_vllm: 5 GRPO steps with rollout=vllm_colocate on SmolLM2, probed inline on save.
- zero2_bf16: 2 steps under `accelerate launch` with DeepSpeed ZeRO-2 in bf16, probing detached.
- watcher: `probe.py watch=` on that run with sampler=vllm: the base and the checkpoint probed.
Dry run: the GPU commands are composed and validated as the GPU machine would (CUDA and vLLM
assumed), and the toy world's GRPO + detached watcher run on CPU as the analogue of the last three.
Numbers are measured and printed, never asserted here; `ok` says whether each command exited 0 and
produced what it should.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
PROBE_SETTINGS = ["model=smollm2_135m", "task=math500", "probe.limit=30", "probe.n=32", "probe.temperature=0.6",
                  "probe.top_p=0.95", "probe.max_new_tokens=512", "probe.bootstrap_iters=200", "logger=none"]
SMOL_TRAIN = ["model=smollm2_135m", "task=math500", "train.train_limit=30", "algo=grpo", "algo.rollouts=8",
              "algo.per_device_train_batch_size=32", "algo.max_completion_length=256", "algo.learning_rate=1e-6",
              "probe=quick", "probe.limit=30", "probe.n=8", "probe.temperature=0.6", "probe.max_new_tokens=256",
              "logger=wandb", "logger.mode=offline"]


def _env(work: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "src"), BOUNDLAB_STORE=str(work / "store.sqlite"),
                WANDB_MODE="offline", WANDB_SILENT="true", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1",
                TOKENIZERS_PARALLELISM="false")


def _run(cmd: list[str], work: Path, timeout: float, env: dict | None = None) -> dict[str, Any]:
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env or _env(work), capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, str(e.stdout or ""), f"timed out after {timeout:.0f} s"
    res = {"cmd": " ".join(cmd[1:] if cmd[0] == sys.executable else cmd), "rc": rc,
           "wall_s": round(time.time() - t0, 1)}
    if rc != 0:
        res["tail"] = (out[-1500:] + "\n" + (err if isinstance(err, str) else "")[-2500:]).strip()
    return res


def _skip(why: str) -> dict[str, Any]:
    print(f"[gpu_check] skipped: {why}", file=sys.stderr, flush=True)
    return {"skipped": why}


# -- a probe in a child process, timed around sampling only ---------------------------------------

def probe_child(overrides: list[str]) -> None:
    """`gpu_check.py --probe-child OVERRIDES`: probe once, print one JSON line (the parent reads it)."""
    from hydra import compose, initialize_config_dir

    import boundlab.builtins  # noqa: F401
    from boundlab.config import check_keys, register_configs
    from boundlab.probe.app import probe_configured
    from boundlab.probe.context import ProbeContext
    from boundlab.validate import validate

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="probe", overrides=overrides)
    check_keys(cfg)
    validate(cfg)
    with ProbeContext.from_config(cfg) as ctx:  # the task, store and verifier probe.py would build
        result, _ = probe_configured(ctx, cfg)
    cur = result.curve
    samples = int(result.new_samples)
    print("GPU_CHECK_RESULT " + json.dumps({
        "sampling_s": round(result.seconds, 2), "samples": samples,
        "samples_per_s": round(samples / result.seconds, 1) if result.seconds > 0 else None,
        "passk": {int(k): [round(float(p), 4), round(float(lo), 4), round(float(hi), 4)]
                  for k, p, lo, hi in zip(cur.ks, cur.pass_at_k, cur.ci_low, cur.ci_high)
                  if int(k) & (int(k) - 1) == 0}}))


def _child_json(cmd: list[str], work: Path, timeout: float) -> dict[str, Any]:
    t0 = time.time()
    env = _env(work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"rc": 124, "wall_s": round(time.time() - t0, 1), "tail": f"timed out after {timeout:.0f} s"}
    res: dict[str, Any] = {"rc": p.returncode, "wall_s": round(time.time() - t0, 1)}
    for line in p.stdout.splitlines():
        if line.startswith("GPU_CHECK_RESULT "):
            res.update(json.loads(line.split(" ", 1)[1]))
    if p.returncode != 0 or "passk" not in res:
        res["tail"] = (p.stdout[-1500:] + "\n" + p.stderr[-2500:]).strip()
    return res


def _overlap(a: dict, b: dict) -> dict[str, Any]:
    """Per k (both measured): whether the two CIs overlap."""
    ks = sorted(set(a) & set(b), key=int)
    per_k = {k: bool(a[k][1] <= b[k][2] and b[k][1] <= a[k][2]) for k in ks}
    return {"per_k": per_k, "all_overlap": all(per_k.values()) if per_k else None}


def part_probe_compare(work: Path, gpu: bool) -> dict[str, Any]:
    child = [sys.executable, __file__, "--probe-child"]
    out: dict[str, Any] = {"settings": PROBE_SETTINGS}
    if gpu:
        hf = _child_json(child + PROBE_SETTINGS + ["sampler=hf", "sampler.device=cuda", "sampler.batch_size=512",
                                                   f"store.path={work / 'cmp_hf.sqlite'}"], work / "cmp_hf", 300)
        vl = _child_json(child + PROBE_SETTINGS + ["sampler=vllm", f"store.path={work / 'cmp_vllm.sqlite'}"],
                         work / "cmp_vllm", 300)
        out.update(hf=hf, vllm=vl)
        if "passk" in hf and "passk" in vl:
            out["agree_within_ci"] = _overlap(hf["passk"], vl["passk"])
        return out
    tiny = ["model=smollm2_135m", "task=math500", "probe.limit=2", "probe.n=2", "probe.max_new_tokens=16",
            "probe.bootstrap_iters=20", "logger=none", "sampler.torch_threads=1",
            f"store.path={work / 'cmp_hf.sqlite'}"]
    out["settings"] = tiny
    out["hf_cpu_tiny"] = _child_json(child + tiny, work / "cmp_hf", 240)
    out["vllm"] = _skip("probe_compare/vllm needs CUDA and vLLM; the hf probe ran at a tiny size on CPU")
    out["vllm_prompt_tokens_equal_hf"] = _prompt_tokens_equal()
    return out


def _prompt_tokens_equal() -> Any:
    """The 30 problems' prompt tokens as build_requests hands them to vLLM vs the hf sampler's."""
    from hydra import compose, initialize_config_dir

    from boundlab.config import register_configs
    from boundlab.models import load_tokenizer, resolve_model_path
    from boundlab.sampling.base import GenSettings
    from boundlab.probe.spec import load_task
    from boundlab.sampling.vllm import build_requests

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="probe", overrides=PROBE_SETTINGS)
    tok = load_tokenizer(cfg.model, resolve_model_path(cfg.model))
    task = load_task(cfg)  # the task cut to probe.limit, as the probe samples it
    texts = [task.render(p, tok) for p in task.problems]

    class Params(dict):
        def __init__(self, **kw):
            super().__init__(**kw)

    prompts, _ = build_requests(tok, [(t, 1) for t in texts], GenSettings(), 0, Params)
    from boundlab.models import load_model
    from boundlab.sampling.hf import HFSampler

    model = load_model(cfg.model, "cpu", resolve_model_path(cfg.model), whole=True)
    enc = HFSampler(model, tok, engine="generate")._encode(texts)  # left-padded: strip the padding
    hf = [row[m.bool()].tolist() for row, m in zip(enc["input_ids"], enc["attention_mask"])]
    return [p["prompt_token_ids"] for p in prompts] == hf and len(texts) == 30


# -- training parts -------------------------------------------------------------------------------

def _validated(primary: str, overrides: list[str]) -> str:
    """Compose and validate a GPU command's config here, as a GPU machine would (CUDA and vLLM assumed)."""
    import importlib.util
    from unittest import mock

    import torch
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from boundlab.config import check_keys, register_configs
    from boundlab.validate import validate

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name=primary, overrides=[o for o in overrides if not o.startswith("hydra.")])
    check_keys(cfg)
    real = importlib.util.find_spec
    with mock.patch.object(torch.cuda, "is_available", lambda: True), \
            mock.patch.object(importlib.util, "find_spec",
                              lambda name, *a: object() if name == "vllm" else real(name, *a)):
        validate(cfg)
    return "composes and validates (CUDA and vLLM assumed)"


def _run_dir_facts(run_dir: Path) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    ck = run_dir / "checkpoints"
    facts["checkpoints"] = sorted(p.name for p in ck.glob("checkpoint-*")) if ck.is_dir() else []
    pj = run_dir / "probes.jsonl"
    if pj.is_file():
        rows = [json.loads(x) for x in pj.read_text().splitlines() if x.strip()]
        facts["probes"] = [(r.get("kind"), r.get("step")) for r in rows]
    try:
        from boundlab.tracking.reader import read_offline_run

        hist = read_offline_run(run_dir).history
        rewards = [h["train/reward"] for h in hist if "train/reward" in h]
        facts["train_reward"] = [round(float(r), 4) for r in rewards]
    except Exception as e:  # noqa: BLE001 - reported, not fatal: the run's own files say the rest
        facts["wandb"] = f"not read: {type(e).__name__}: {str(e)[:120]}"
    return facts


def part_grpo_vllm(work: Path, gpu: bool) -> dict[str, Any]:
    run_dir = work / "grpo_vllm"
    ov = SMOL_TRAIN + ["rollout=vllm_colocate", "backend=gpu", "train.max_steps=5", "train.save_steps=5",
                       "sampler=hf", "sampler.device=cuda", f"hydra.run.dir={run_dir}"]
    if not gpu:
        return {"config": _validated("train", ov), **_skip("grpo_vllm needs CUDA and vLLM")}
    # TRL's colocated engine runs vLLM with an "external launcher": torch.distributed must be set up
    # even for one process (what `accelerate launch` would export).
    env = dict(_env(work), RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29511")
    res = _run([sys.executable, "train.py", *ov], work, 420, env)
    return {**res, **_run_dir_facts(run_dir)}


def part_zero2_and_watcher(work: Path, gpu: bool) -> dict[str, Any]:
    import importlib.util

    run_dir = work / "zero2"
    ov = SMOL_TRAIN + ["rollout=hf", "backend=zero2", "train.max_steps=2", "train.save_steps=2",
                       "train.probe_mode=detached", f"hydra.run.dir={run_dir}"]
    watch = [f"watch={run_dir}", "watch_poll_s=2", "watch_timeout_s=300", "sampler=vllm"]
    out: dict[str, Any] = {}
    if not gpu:
        out["zero2_bf16"] = {"config": _validated("train", ov), **_skip("zero2_bf16 needs CUDA and DeepSpeed")}
        out["watcher"] = {"config": _validated("probe", watch), **_skip("watcher (sampler=vllm) needs CUDA")}
        return out
    if importlib.util.find_spec("deepspeed") is None:
        out["zero2_bf16"] = _skip("zero2_bf16: DeepSpeed is not installed (pip install 'boundlab[gpu]')")
        ov = [o for o in ov if o != "backend=zero2"] + ["backend=gpu"]
        cmd = [sys.executable, "train.py", *ov]
    else:
        cmd = ["accelerate", "launch", "--config_file", "launch/accelerate/zero2.yaml", "--num_processes", "1",
               "train.py", *ov]
    res = _run(cmd, work, 300)
    if "zero2_bf16" not in out:
        out["zero2_bf16"] = {**res, **_run_dir_facts(run_dir)}
    w = _run([sys.executable, "probe.py", *watch], work, 300)
    out["watcher"] = {**w, **_run_dir_facts(run_dir)}
    return out


def part_cpu_analogue(work: Path) -> dict[str, Any]:
    """The toy world: GRPO for 2 steps with hf rollouts, probing detached, then the watcher."""
    run_dir = work / "toy_detached"
    ov = ["algo=grpo", "debug=smoke", "train.max_steps=2", "train.save_steps=2", "backend.torch_threads=1",
          "sampler.torch_threads=1", "train.probe_mode=detached", "logger=wandb", "logger.mode=offline",
          f"hydra.run.dir={run_dir}"]
    train = _run([sys.executable, "train.py", *ov], work, 240)
    watch = _run([sys.executable, "probe.py", f"watch={run_dir}", "watch_poll_s=1", "watch_timeout_s=120"], work, 180)
    return {"train": train, "watcher": watch, **_run_dir_facts(run_dir)}


def _environment() -> dict[str, Any]:
    import importlib.metadata as md

    import torch

    def ver(name: str) -> str | None:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return None

    env = {name: ver(name) for name in ("torch", "transformers", "trl", "vllm", "deepspeed", "accelerate")}
    env["cuda"] = torch.cuda.is_available()
    env["gpu"] = torch.cuda.get_device_name(0) if env["cuda"] else None
    return env


PARTS: dict[str, Callable[[Path, bool], dict[str, Any]]] = {
    "probe_compare": part_probe_compare, "grpo_vllm": part_grpo_vllm, "zero2_watcher": part_zero2_and_watcher,
}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--probe-child"]:
        probe_child(argv[1:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: skip the GPU parts, run the CPU analogues")
    ap.add_argument("--only", default=None, help=f"comma-separated parts ({', '.join(PARTS)}, cpu_analogue)")
    ap.add_argument("--work", default=None, help="folder for stores and run dirs (default: a fresh one)")
    args = ap.parse_args(argv)
    import torch

    import boundlab.builtins  # noqa: F401 - every task, sampler and resolver the configs name

    torch.set_num_threads(1)
    gpu = not args.dry_run
    if gpu and not torch.cuda.is_available():
        print("error: no CUDA device visible; run with --dry-run on a machine without a GPU", file=sys.stderr)
        return 2
    work = Path(args.work or ROOT / "outputs" / "gpu_check" / time.strftime("%Y%m%d-%H%M%S")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    names = args.only.split(",") if args.only else list(PARTS) + ([] if gpu else ["cpu_analogue"])
    unknown = [n for n in names if n not in PARTS and n != "cpu_analogue"]
    if unknown:
        print(f"error: unknown part(s) {unknown}; known: {', '.join(PARTS)}, cpu_analogue", file=sys.stderr)
        return 2
    t0 = time.time()
    report: dict[str, Any] = {"mode": "gpu" if gpu else "dry-run", "work": str(work), "env": _environment()}
    for name in names:
        print(f"[gpu_check] {name} ...", file=sys.stderr, flush=True)
        t = time.time()
        try:
            # stdout is the JSON document alone: what the parts print (a model conversion) goes to stderr.
            with contextlib.redirect_stdout(sys.stderr):
                report[name] = part_cpu_analogue(work) if name == "cpu_analogue" else PARTS[name](work, gpu)
        except Exception as e:  # noqa: BLE001 - one part's failure is a result; the others still run
            report[name] = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
        report[name]["part_s"] = round(time.time() - t, 1)
    report["total_s"] = round(time.time() - t0, 1)
    print(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
