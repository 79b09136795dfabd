"""BoundLab vs lm-evaluation-harness: the same model, prompts and sampling settings, side by side.

lm-eval (its Hugging Face backend, `--model hf`, a custom `generate_until` task with `repeats: n`)
runs in its own virtual environment, which this script builds once in a cache folder (a real venv,
not `--system-site-packages`; torch and transformers pinned to the main environment's versions) and
reuses after. lm-eval is never installed into the test environment.

    python bench/peer_lmeval.py --setup-only                 # build (or check) the venv, print JSON
    python bench/peer_lmeval.py --per-tier 8 --n 64 256 --self-seed 1   # 40 toy2 problems, two rows
    python bench/peer_lmeval.py --n 64 --engines auto generate          # both BoundLab engines

What happens, per n:
1. The task's prompts are written by the probe's own export (`probe.py export=FILE` calls the same
   `export_prompts`), and lm-eval's task reads that very JSONL (`doc_to_text: prompt`), so the prompts
   are the same bytes; the script checks each context lm-eval logged against our prompt.
2. lm-eval samples n completions per problem (`--log_samples`), timed as a subprocess (the whole CLI:
   interpreter start, imports, model load, dataset, sampling, its own metric, writing files) and,
   inside it, `HFLM.generate_until` alone (a wrapper times the method; nothing else changes).
3. Its completions are scored in this environment by our verifier (`score_samples_file`, the path of
   `probe.py samples=FILE`), and BoundLab probes the same model in-process (`probe_model`: sample,
   verify, store, curves), each into a temporary store.
4. Both sides get pass@1 and pass@n with percentile-bootstrap CIs over problems (the probe's), and
   the paired bootstrap CI of their difference (`bootstrap_diff_ci`), strict and answer-only. At
   k = n a problem's pass@k is 0 or 1, so that CI rests on the few problems one side solved and the
   other did not: the script lists them with their c and gives an exact sign test. `--self-seed S`
   adds a second BoundLab probe (seed S) compared with the first: the spread of two draws of one
   sampler, the yardstick for the BoundLab vs lm-eval differences.

samples/s: BoundLab = samples / the probe's wall (sampling with verification overlapped, store,
curves; model already loaded). lm-eval = samples / (generate_until wall + our scoring wall), and
end to end samples / (CLI wall + our scoring wall). Venv setup is never included.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

LMEVAL_VERSION = "0.4.13"  # 0.4.9 imports AutoModelForVision2Seq, which transformers 5 removed
TORCH_VERSION = "2.13.0"  # the CPU wheel on disk; pip must never resolve another (CUDA) torch
TASK_NAME = "boundlab_peer"
DEFAULT_VENV = Path(os.environ.get("BOUNDLAB_CACHE", Path.home() / ".cache" / "boundlab")) / "peer-lmeval"

# Runs inside the lm-eval venv: times HFLM.generate_until, then hands over to lm-eval's own CLI.
WRAPPER = r'''
import json, sys, time
import torch
torch.set_num_threads(int(sys.argv[2]))
import lm_eval.models.huggingface as H
orig = H.HFLM.generate_until
spent = {"generate_until_s": 0.0, "requests": 0}
def timed(self, requests, *a, **k):
    t = time.perf_counter()
    out = orig(self, requests, *a, **k)
    spent["generate_until_s"] += time.perf_counter() - t
    spent["requests"] += len(requests)
    return out
H.HFLM.generate_until = timed
from lm_eval.__main__ import cli_evaluate
timing_file = sys.argv[1]
sys.argv = ["lm_eval", "run"] + sys.argv[3:]
try:
    cli_evaluate()
finally:
    spent["torch_threads"] = torch.get_num_threads()
    with open(timing_file, "w") as f:
        json.dump(spent, f)
'''


# -- pure helpers (tested without lm-eval: tests/unit/test_peer_lmeval.py) ------------------------

def task_yaml(data_file: str | Path, n: int, temperature: float, top_p: float, max_new_tokens: int,
              eos: str, name: str = TASK_NAME) -> str:
    """lm-eval's task config: our exported prompts, verbatim, sampled n times with our settings.

    `until` holds only the EOS text (lm-eval adds it anyway; without `until` a task would stop at
    its fewshot delimiter). `top_k: 0` as our sampler passes it: transformers' default top-k of 50
    would otherwise cut the distribution. The metric is lm-eval's own exact match on the first of
    the n completions (its `take_first` default for repeats) after a regex takes the answer, shown
    beside ours; our verifier scores every completion afterwards."""
    if n < 1 or max_new_tokens < 1:
        raise ValueError(f"need n >= 1 and max_new_tokens >= 1, got n={n}, max_new_tokens={max_new_tokens}")
    if temperature <= 0:
        raise ValueError(f"repeats need sampling: temperature must be > 0, got {temperature}")
    # JSON is valid YAML: no quoting rules to get wrong for paths or the EOS text.
    cfg = {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(Path(data_file).resolve())}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "prompt",
        "doc_to_target": "answer",
        "num_fewshot": 0,
        "repeats": int(n),
        "generation_kwargs": {"until": [eos], "do_sample": True, "temperature": float(temperature),
                              "top_p": float(top_p), "top_k": 0, "max_gen_toks": int(max_new_tokens)},
        "filter_list": [{"name": "answer-first", "filter": [
            {"function": "regex", "regex_pattern": r"A:(\d+)$"}, {"function": "take_first"}]}],
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}],
    }
    return json.dumps(cfg, indent=2) + "\n"


def lmeval_completions(records: Iterable[dict[str, Any]], prompts: dict[str, str],
                       n: int) -> dict[str, list[str]]:
    """{problem_id: [completion, ...]} from lm-eval's logged samples (`--log_samples` lines).

    Every completion in `resps` is kept (lm-eval's filters keep only the first for its metric).
    Fails on a context that is not our prompt byte for byte, an unknown or repeated problem, or a
    problem without exactly n completions: a silent mismatch would make the comparison meaningless."""
    out: dict[str, list[str]] = {}
    for rec in records:
        doc = rec.get("doc") or {}
        pid = doc.get("problem_id")
        if pid not in prompts:
            raise ValueError(f"lm-eval sample for unknown problem {pid!r} (doc_id {rec.get('doc_id')})")
        if pid in out:
            raise ValueError(f"lm-eval logged problem {pid!r} twice")
        args = rec.get("arguments") or {}
        contexts = [a.get("arg_0") for a in args.values()] if isinstance(args, dict) else [a[0] for a in args]
        for ctx in contexts:
            if ctx != prompts[pid]:
                raise ValueError(f"{pid}: lm-eval's context {ctx!r} is not our prompt {prompts[pid]!r}")
        texts = [t for group in rec.get("resps", []) for t in (group if isinstance(group, list) else [group])]
        if len(texts) != n or not all(isinstance(t, str) for t in texts):
            raise ValueError(f"{pid}: expected {n} completions from lm-eval, got {len(texts)}")
        out[pid] = texts
    missing = sorted(set(prompts) - set(out))
    if missing:
        raise ValueError(f"lm-eval logged no samples for {len(missing)} problem(s), e.g. {missing[:3]}")
    return out


def ci_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two intervals [lo, hi] share a point."""
    return max(a[0], b[0]) <= min(a[1], b[1])


def sign_test(only_a: int, only_b: int) -> float:
    """Exact two-sided sign (McNemar) test p-value for discordant pairs: problems solved (c > 0)
    by one side only. At k = n each problem's pass@k is 0 or 1, so the paired bootstrap over
    problems rests on these few pairs alone; this says how surprising the split is under equal
    distributions."""
    from math import comb

    m = only_a + only_b
    if only_a < 0 or only_b < 0:
        raise ValueError(f"need counts >= 0, got {only_a}, {only_b}")
    if m == 0:
        return 1.0
    tail = sum(comb(m, i) for i in range(min(only_a, only_b) + 1)) / 2 ** m
    return min(1.0, 2 * tail)


# -- the venv -------------------------------------------------------------------------------------

def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_venv(venv: Path, log) -> dict[str, Any]:
    """Build the lm-eval venv once (reused while its marker matches the pins; otherwise pip brings
    the existing one to the pins)."""
    import accelerate
    import peft
    import transformers

    # lm-eval's `hf` extra brings transformers, accelerate and peft: the main env's versions.
    pins = {"lm_eval": LMEVAL_VERSION, "torch": TORCH_VERSION, "transformers": transformers.__version__,
            "accelerate": accelerate.__version__, "peft": peft.__version__}
    marker = venv / "boundlab-pins.json"
    if marker.exists() and venv_python(venv).exists() and json.loads(marker.read_text()) == pins:
        return {"venv": str(venv), "reused": True, "setup_s": 0.0, **pins}
    t = time.perf_counter()
    venv.parent.mkdir(parents=True, exist_ok=True)
    if not venv_python(venv).exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    constraints = venv / "boundlab-constraints.txt"
    constraints.write_text("".join(f"{k}=={v}\n" for k, v in pins.items() if k != "lm_eval"))
    log(f"installing lm-eval[hf]=={LMEVAL_VERSION} into {venv} (torch {TORCH_VERSION}, "
        f"transformers {pins['transformers']})")
    subprocess.run([str(venv_python(venv)), "-m", "pip", "install", "-q", "-c", str(constraints),
                    f"lm-eval[hf]=={LMEVAL_VERSION}", f"torch=={TORCH_VERSION}"], check=True)
    check = subprocess.run([str(venv_python(venv)), "-c",
                            "import lm_eval, torch, transformers; from lm_eval.models.huggingface import HFLM;"
                            "print(lm_eval.__version__, torch.__version__.split('+')[0], transformers.__version__)"],
                           capture_output=True, text=True)
    got = check.stdout.split()
    if check.returncode != 0 or got != [LMEVAL_VERSION, TORCH_VERSION, pins["transformers"]]:
        raise SystemExit(f"the lm-eval venv at {venv} does not import as pinned: "
                         f"{check.stdout.strip()} {check.stderr.strip()[-400:]}")
    marker.write_text(json.dumps(pins))
    return {"venv": str(venv), "reused": False, "setup_s": round(time.perf_counter() - t, 1), **pins}


# -- the two sides --------------------------------------------------------------------------------

def run_lmeval(venv: Path, model_dir: str, task_dir: Path, out_dir: Path, batch: int, threads: int,
               seed: int) -> dict[str, Any]:
    wrapper = task_dir / "timed_lm_eval.py"
    wrapper.write_text(WRAPPER)
    timing = out_dir / "timing.json"
    env = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               HF_HOME=str(out_dir / "hf_home"), TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONPATH", None)  # nothing of BoundLab or the main env inside lm-eval's run
    cmd = [str(venv_python(venv)), str(wrapper), str(timing), str(threads),
           "--model", "hf", "--model_args", f"pretrained={model_dir},dtype=float32",
           "--tasks", TASK_NAME, "--include_path", str(task_dir), "--device", "cpu",
           "--batch_size", str(batch), "--log_samples", "--output_path", str(out_dir / "results"),
           "--seed", f"{seed},{seed},{seed},{seed}"]
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"lm-eval failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    spent = json.loads(timing.read_text())
    samples = sorted((out_dir / "results").rglob(f"samples_{TASK_NAME}_*.jsonl"))
    results = sorted((out_dir / "results").rglob("results_*.json"))
    if len(samples) != 1 or len(results) != 1:
        raise SystemExit(f"expected one samples and one results file under {out_dir}, got "
                         f"{[str(p) for p in samples + results]}")
    res = json.loads(results[0].read_text())
    own = res["results"][TASK_NAME]
    return {"cli_wall_s": wall, "generate_until_s": spent["generate_until_s"],
            "requests": spent["requests"], "torch_threads": spent["torch_threads"],
            "samples_file": samples[0],
            "own_exact_match_first": own.get("exact_match,answer-first"),
            "own_exact_match_first_stderr": own.get("exact_match_stderr,answer-first")}


def side_stats(res: Any, k_list: list[int], ci: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, cur in (("strict", res.curve_strict), ("answer", res.curve)):
        for k in k_list:
            out[f"{label}_pass@{k}"] = round(cur.at(k), 4)
            out[f"{label}_pass@{k}_ci"] = [round(float(cur.ci_low[k - 1]), 4),
                                           round(float(cur.ci_high[k - 1]), 4)]
    return out


def compare(ours: Any, theirs: Any, k_list: list[int], iters: int, ci: float,
            names: tuple[str, str] = ("boundlab", "lmeval")) -> dict[str, Any]:
    from boundlab.probe.estimator import bootstrap_diff_ci

    if list(ours.problem_ids) != list(theirs.problem_ids):
        raise ValueError("the two sides hold different problems")
    out: dict[str, Any] = {}
    for label, a, b in (("strict", ours.curve_strict, theirs.curve_strict),
                        ("answer", ours.curve, theirs.curve)):
        for k in k_list:
            d, lo, hi = bootstrap_diff_ci(a.per_problem[:, k - 1], b.per_problem[:, k - 1],
                                          iters=iters, alpha=1 - ci)
            out[f"{label}_pass@{k}"] = {
                f"{names[0]}_minus_{names[1]}": round(d, 4), "diff_ci": [round(lo, 4), round(hi, 4)],
                "diff_ci_includes_0": bool(lo <= 0 <= hi),
                "cis_overlap": ci_overlap((float(a.ci_low[k - 1]), float(a.ci_high[k - 1])),
                                          (float(b.ci_low[k - 1]), float(b.ci_high[k - 1])))}
        ca = ours.c_strict if label == "strict" else ours.c
        cb = theirs.c_strict if label == "strict" else theirs.c
        only_a, only_b = int(((ca > 0) & (cb == 0)).sum()), int(((ca == 0) & (cb > 0)).sum())
        out[f"{label}_solved"] = {f"{names[0]}_only": only_a, f"{names[1]}_only": only_b,
                                  "both": int(((ca > 0) & (cb > 0)).sum()),
                                  "sign_test_p": round(sign_test(only_a, only_b), 4),
                                  # c on each side where only one side solved the problem
                                  "discordant_c": {pid: [int(x), int(y)] for pid, x, y in
                                                   zip(ours.problem_ids, ca, cb) if (x > 0) != (y > 0)}}
        out[f"{label}_correct_samples"] = [int(ca.sum()), int(cb.sum())]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setup-only", action="store_true", help="build or check the lm-eval venv, then stop")
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--n", type=int, nargs="+", default=[64])
    ap.add_argument("--per-tier", type=int, default=8, help="toy2 test problems per tier (5 tiers)")
    ap.add_argument("--batch", type=int, default=256, help="rows per generate call, both sides")
    ap.add_argument("--threads", type=int, default=1, help="torch threads, each side")
    ap.add_argument("--engines", nargs="+", default=["auto"], choices=["auto", "generate"],
                    help="BoundLab's sampler engine, one probe each (auto: the compact decoder, as "
                         "probe.py; generate: transformers' generate, as lm-eval). The first one "
                         "gives the headline samples/s")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--self-seed", type=int, default=None,
                    help="also probe BoundLab again with this seed (first engine) and compare it with "
                         "the first probe: how far two draws of one sampler differ, the yardstick "
                         "for the BoundLab vs lm-eval differences")
    ap.add_argument("--keep", type=Path, default=None, help="copy lm-eval's logged samples here")
    args = ap.parse_args()
    log = lambda msg: print(f"[peer_lmeval] {msg}", file=sys.stderr, flush=True)  # noqa: E731

    setup = ensure_venv(args.venv, log)
    if args.setup_only:
        print(json.dumps({"benchmark": "peer_lmeval", "setup": setup}, indent=2))
        return

    import torch

    torch.set_num_threads(args.threads)
    import boundlab.builtins  # noqa: F401 - the task and verifier registries
    from types import SimpleNamespace

    from boundlab.models import load_model, load_tokenizer, resolve_model_path
    from boundlab.probe.context import ProbeContext
    from boundlab.probe.runner import export_prompts, probe_model, score_samples_file
    from boundlab.probe.spec import ProbeSpec
    from boundlab.probe.store import Store
    from boundlab.sampling.base import GenSettings
    from boundlab.sampling.hf import HFSampler
    from boundlab.tasks import build_task
    from boundlab.worlds.toyworld2.paths import base_model_dir
    from boundlab.verify import build_verifier

    ci, iters = 0.95, 1000
    probe_cfg = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 108}  # conf/probe/toy2.yaml
    gen = GenSettings(probe_cfg["temperature"], probe_cfg["top_p"], probe_cfg["max_new_tokens"])
    model_cfg = SimpleNamespace(name="toy2", path=str(base_model_dir()), gguf_package=None,
                                dtype="float32", trust_remote_code=False, allow_download=False)
    task = build_task(SimpleNamespace(name="toy2", split="test", template=None, chat=False,
                                      system=None, verifier=None, path=None,
                                      toy2={"tiers": ["H1", "H2", "B3", "B4", "X"], "per_tier": args.per_tier}))
    resolved = resolve_model_path(model_cfg)
    t = time.perf_counter()
    model, tok = load_model(model_cfg, "cpu", resolved), load_tokenizer(model_cfg, resolved)
    load_s = time.perf_counter() - t
    prompts = {p.problem_id: task.render(p) for p in task.problems}
    result: dict[str, Any] = {
        "benchmark": "peer_lmeval", "model": "toy2 base", "model_dir": resolved, "task": "toy2",
        "problems": len(task), "tiers": "H1 H2 B3 B4 X", "per_tier": args.per_tier,
        "sampling": {**probe_cfg, "top_k": 0, "stop": "EOS only"}, "batch_rows": args.batch,
        "torch_threads_each_side": args.threads, "boundlab_engines": args.engines, "setup": setup,
        "boundlab_model_load_s": round(load_s, 2), "ci": ci, "bootstrap_iters": iters,
        "timing_note": ("boundlab: probe_model wall (sample + verify overlapped + store + curves), "
                        "model loaded; lmeval: HFLM.generate_until wall + our verifier scoring its "
                        "completions (score_samples_file); lmeval samples_per_s_end_to_end adds lm-eval's CLI start, "
                        "imports, model load, dataset build, its metric and file writing; venv setup "
                        "excluded"),
        "rows": []}

    with tempfile.TemporaryDirectory(prefix="peer-lmeval-") as d:
        tmp = Path(d)
        data = export_prompts(task, tmp / "prompts.jsonl")  # what `probe.py export=FILE` writes
        for n in args.n:
            k_list = [1, n]
            task_dir = tmp / f"task-{n}"
            task_dir.mkdir()
            (task_dir / f"{TASK_NAME}.yaml").write_text(task_yaml(data, n, gen.temperature, gen.top_p,
                                                                  gen.max_new_tokens, tok.eos_token))
            log(f"n = {n}: lm-eval on {len(task)} problems ...")
            le = run_lmeval(args.venv, resolved, task_dir, tmp / f"lmeval-{n}", args.batch,
                            args.threads, args.seed)
            records = [json.loads(line) for line in le["samples_file"].read_text().splitlines() if line]
            per = lmeval_completions(records, prompts, n)
            comp_file = tmp / f"lmeval-{n}-completions.jsonl"
            with comp_file.open("w") as f:
                for pid in prompts:
                    for text in per[pid]:
                        f.write(json.dumps({"problem_id": pid, "completion": text}) + "\n")
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / comp_file.name).write_text(comp_file.read_text())
            verifier = build_verifier("toy2")
            store = Store(tmp / f"store-lmeval-{n}.sqlite")
            t = time.perf_counter()
            theirs, _ = score_samples_file(task, comp_file, verifier, store, iters, ci, progress=False)
            score_s = time.perf_counter() - t
            store.close()

            samples = len(task) * n
            theirs_sps = samples / (le["generate_until_s"] + score_s)
            row: dict[str, Any] = {"n": n, "samples_each_side": samples}
            lmeval_block = {
                "generate_until_s": round(le["generate_until_s"], 2), "our_scoring_s": round(score_s, 2),
                "cli_wall_s": round(le["cli_wall_s"], 2), "samples_per_s": round(theirs_sps, 1),
                "samples_per_s_end_to_end": round(samples / (le["cli_wall_s"] + score_s), 1),
                "torch_threads": le["torch_threads"], "requests": le["requests"],
                "own_exact_match_first_sample": le["own_exact_match_first"],
                "own_exact_match_first_sample_stderr": le["own_exact_match_first_stderr"],
                **side_stats(theirs, k_list, ci)}
            for engine in args.engines:
                log(f"n = {n}: BoundLab probe (engine {engine}) ...")
                store = Store(tmp / f"store-boundlab-{n}-{engine}.sqlite")
                sampler = HFSampler(model, tok, batch_size=args.batch, engine=engine)
                t = time.perf_counter()
                ours = probe_model(ProbeContext(task, store, verifier, progress=False),
                                   ProbeSpec(n, gen, args.seed, bootstrap_iters=iters, ci=ci), sampler,
                                   "peer-bench", tok, "toy2")
                probe_s = time.perf_counter() - t
                store.close()
                ours_sps = samples / probe_s
                tag = "" if engine == args.engines[0] else f"_{engine}"
                if not tag:
                    row["BoundLab vs lm-eval samples/s"] = [round(ours_sps, 1), round(theirs_sps, 1)]
                    row["boundlab_over_lmeval"] = round(ours_sps / theirs_sps, 2)
                row[f"boundlab{tag}"] = {"engine": engine, "probe_s": round(probe_s, 2),
                                         "samples_per_s": round(ours_sps, 1),
                                         "over_lmeval": round(ours_sps / theirs_sps, 2),
                                         **side_stats(ours, k_list, ci)}
                row[f"agreement{tag}"] = compare(ours, theirs, k_list, iters, ci)
                if engine == args.engines[0]:
                    first = ours
            if args.self_seed is not None:
                log(f"n = {n}: BoundLab probe again, seed {args.self_seed} ...")
                store = Store(tmp / f"store-boundlab-{n}-self.sqlite")
                sampler = HFSampler(model, tok, batch_size=args.batch, engine=args.engines[0])
                again = probe_model(ProbeContext(task, store, verifier, progress=False),
                                    ProbeSpec(n, gen, args.self_seed, bootstrap_iters=iters, ci=ci), sampler,
                                    "peer-bench", tok, "toy2")
                store.close()
                row["boundlab_self"] = {
                    "seed": args.self_seed, **side_stats(again, k_list, ci),
                    "vs_first_probe": compare(again, first, k_list, iters, ci,
                                              (f"seed{args.self_seed}", f"seed{args.seed}"))}
            verifier.close()
            row["lmeval"] = lmeval_block
            result["rows"].append(row)
            log(json.dumps({"n": n, "BoundLab vs lm-eval samples/s": row["BoundLab vs lm-eval samples/s"]}))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
