"""The probe: sample n completions per problem, verify them, store them, compute pass@k.

Work is cut into generate-sized chunks. While the model samples chunk i+1, a background thread
verifies and stores chunk i (verification runs in worker processes, so the GIL is not the limit).
Each chunk is committed to the store in one transaction: a probe killed at any point resumes from
the stored counts and never samples a finished completion twice.
"""

from __future__ import annotations

import hashlib
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from tqdm.auto import tqdm

from boundlab.probe import adaptive as A
from boundlab.probe.answer_stats import AnswerStats, answer_stats
from boundlab.probe.context import ProbeContext
from boundlab.probe.curves import Curve, compute_curve, curve_from_matrix
from boundlab.probe.entropy import EntropyStats, probe_entropy
from boundlab.probe.spec import ProbeSpec
from boundlab.probe.store import SampleRow, Store, probe_key
from boundlab.probe.verdicts import before_sampling, probe_settings, with_timeout_note
from boundlab.sampling.base import Completion, GenSettings, Sampler
from boundlab.tasks.base import Problem, Task
from boundlab.tasks.jsonl import DataError, iter_jsonl
from boundlab.verify.base import Verifier


@dataclass
class ProbeResult:
    key: str
    model_name: str
    task_name: str
    problem_ids: list[str]
    n: np.ndarray
    c: np.ndarray
    # Correct with a valid chain of thought (toy world); None when not checkable.
    c_strict: np.ndarray | None
    curve: Curve
    curve_strict: Curve | None
    new_samples: int = 0
    seconds: float = 0.0
    notes: tuple[str, ...] = ()
    # Box share and truncated share of these samples (math verifier only; see answer_stats).
    answers: AnswerStats | None = None
    # Adaptive probes: each problem's state (stop reason, round), in problem order; None: fixed n.
    adaptive: list[A.ProblemState] | None = None
    # The entropy view (boundlab.probe.entropy): the summary over the samples the counts use, and
    # each problem's per-sample entropies (NaN: not recorded), in problem order; None: none recorded.
    entropy: EntropyStats | None = None
    entropy_values: list[np.ndarray] | None = None

    @property
    def kmax(self) -> int:
        return self.curve.kmax

    @property
    def solvable(self) -> set[str]:
        return {pid for pid, c in zip(self.problem_ids, self.c) if c > 0}


def sampling_settings(gen: GenSettings, seed: int, prompt_style: str) -> dict[str, Any]:
    """How two probes of the same model and task sample (n excluded: it can grow). The probe key
    adds the verifier (`probe_settings`)."""
    return {"temperature": gen.temperature, "top_p": gen.top_p, "max_new_tokens": gen.max_new_tokens,
            "stop": list(gen.stop), "seed": seed, "prompt": prompt_style}


def _plan(task: Task, prompts: dict[str, str], done: dict[str, int], next_idx: dict[str, int],
          n: int, rows_per_call: int) -> list[list[tuple[Problem, int, int]]]:
    """Chunks of (problem, first sample index, count), each about `rows_per_call` rows.

    Problems are ordered by prompt length so each batch pads little.
    """
    order = sorted(task.problems, key=lambda p: (len(prompts[p.problem_id]), p.problem_id))
    chunks: list[list[tuple[Problem, int, int]]] = []
    cur: list[tuple[Problem, int, int]] = []
    room = rows_per_call
    for p in order:
        start = next_idx.get(p.problem_id, 0)
        need = n - done.get(p.problem_id, 0)
        while need > 0:
            take = min(need, room)
            cur.append((p, start, take))
            start += take
            need -= take
            room -= take
            if room == 0:
                chunks.append(cur)
                cur, room = [], rows_per_call
    if cur:
        chunks.append(cur)
    return chunks


def _verify_and_store(verifier: Verifier, store: Store, key: str,
                      chunk: list[tuple[Problem, int, int]],
                      completions: list[list[Completion]], keep_text: str = "all") -> int:
    items = [(p, [c.text for c in comps]) for (p, _, _), comps in zip(chunk, completions)]
    cut = [[c.finish == "length" for c in comps] for comps in completions]
    if getattr(verifier, "reads_cut_off", False) and any(map(any, cut)):
        # A completion stopped at max_new_tokens has no final answer unless it stated one.
        verdicts = verifier.score_many(items, cut_off=cut)
    else:
        verdicts = verifier.score_many(items)
    rows = []
    for (p, start, _), comps, vs in zip(chunk, completions, verdicts):
        for j, (comp, v) in enumerate(zip(comps, vs)):
            if v.outcome == "sandbox_error":
                # Our failure, not the model's (the verifier already retried): keep the sample out
                # of n. Later samples of this problem still land, so a rerun tops n back up.
                continue
            info = dict(v.info) if v.info else {}
            if comp.finish != "eos":
                info["finish"] = comp.finish
            rows.append(SampleRow(p.problem_id, start + j, comp.text, v.extracted, v.correct,
                                  v.strict, v.outcome, comp.n_tokens, info or None,
                                  entropy=comp.entropy))
    return store.add_samples(key, rows, keep_text)


def sample_into_store(task: Task, sampler: Sampler, verifier: Verifier, store: Store, key: str,
                      n: int, gen: GenSettings, seed: int, tokenizer: Any = None,
                      progress: bool = True, desc: str = "sampling", keep_text: str = "all") -> int:
    """Bring every problem of `task` to n stored samples under `key`. Returns new samples."""
    visual = task.has_images()
    # A visual task renders through the sampler's processor (its chat template places the images).
    render_with = (getattr(sampler, "processor", None) if visual else None) or tokenizer
    prompts = {p.problem_id: task.render(p, render_with) for p in task.problems}
    if visual and not getattr(sampler, "accepts_images", False):
        from boundlab.config import ConfigError

        raise ConfigError(f"task {task.name!r} shows images, but sampler {sampler.name!r} takes none: "
                          f"use sampler=hf with a vision-language model (model.vision=true)")
    done = store.counts_done(key)
    chunks = _plan(task, prompts, done, store.next_index(key), n, sampler.rows_per_call)
    total = sum(cnt for ch in chunks for _, _, cnt in ch)
    if total == 0:
        return 0
    already = sum(min(done.get(p.problem_id, 0), n) for p in task.problems)
    bar = tqdm(total=len(task) * n, initial=already, desc=desc, unit="sample", disable=not progress,
               dynamic_ncols=True)
    pending: Future | None = None
    written = 0
    with ThreadPoolExecutor(max_workers=1) as pool:
        for chunk in chunks:
            # A seed per chunk that depends on what is sampled, not on how far an earlier run got.
            chunk_seed = _chunk_seed(seed, chunk)
            # Images go along only for a visual task, so text samplers keep their signature.
            extra = {"images": [p.images for p, _, _ in chunk]} if visual else {}
            comps = sampler.generate([(prompts[p.problem_id], cnt) for p, _, cnt in chunk], gen,
                                     chunk_seed, **extra)
            if pending is not None:
                written += pending.result()
            pending = pool.submit(_verify_and_store, verifier, store, key, chunk, comps, keep_text)
            bar.update(sum(cnt for _, _, cnt in chunk))
        if pending is not None:
            written += pending.result()
    bar.close()
    return written


def sample_adaptive(task: Task, sampler: Sampler, verifier: Verifier, store: Store, key: str,
                    plan: A.AdaptivePlan, gen: GenSettings, seed: int, tokenizer: Any = None,
                    progress: bool = True, desc: str = "sampling", keep_text: str = "all") -> int:
    """Rounds (boundlab.probe.adaptive): each samples the open problems up to the round's n, in
    the batched sampler (`sample_into_store` over the open problems only). The state is recomputed
    from the store before every round, so a killed probe resumes mid-round. Returns new samples."""
    ids = [p.problem_id for p in task.problems]
    written = 0
    while True:
        st = A.states(store, key, ids, plan)
        done = store.counts_done(key)
        todo = {s.problem_id: s.target for s in st if s.reason == A.OPEN}
        if not todo:
            st = A.final_states(plan, st, done)
            todo = {s.problem_id: s.target for s in st if s.reason == A.OPEN}
        store.put_adaptive_states(key, [(s.problem_id, s.n, s.c, s.reason, s.round) for s in st])
        if not todo:
            return written
        target = min(todo.values())
        sub = task.with_problems([p for p in task.problems if todo.get(p.problem_id) == target])
        got = sample_into_store(sub, sampler, verifier, store, key, target, gen, seed, tokenizer,
                                progress, desc=f"{desc} (adaptive, {len(sub)} open, n = {target})",
                                keep_text=keep_text)
        if got == 0:  # every sample withheld (e.g. sandbox errors): a rerun tops it up
            return written
        written += got


def _chunk_seed(seed: int, chunk: Sequence[tuple[Problem, int, int]]) -> int:
    p, start, _ = chunk[0]
    digest = hashlib.sha256(f"{seed}:{p.problem_id}:{start}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def result_from_store(store: Store, key: str, task: Task, n: int | None = None,
                      bootstrap_iters: int = 1000, ci: float = 0.95, model_name: str = "",
                      seconds: float = 0.0, new_samples: int = 0,
                      adaptive: A.AdaptivePlan | None = None) -> ProbeResult:
    """Counts and curves for `task`'s problems from the store (first n samples of each)."""
    ids = [p.problem_id for p in task.problems]
    if adaptive is not None:
        return _adaptive_result(store, key, task, adaptive, bootstrap_iters, ci, model_name,
                                seconds, new_samples)
    counts = store.counts(key, ids, n_max=n)
    missing = [pc.problem_id for pc in counts if pc.n == 0]
    if missing:
        raise ValueError(f"{len(missing)} problem(s) have no samples in probe {key}, "
                         f"e.g. {missing[:3]}")
    n_arr = np.array([pc.n for pc in counts])
    c_arr = np.array([pc.c for pc in counts])
    notes = []
    if n_arr.min() != n_arr.max():
        notes.append(f"samples per problem range from {n_arr.min()} to {n_arr.max()}: "
                     f"pass@k curves go up to the smallest n, k = {n_arr.min()}")
    strict_known = all(pc.c_strict is not None for pc in counts)
    c_strict = np.array([pc.c_strict for pc in counts]) if strict_known else None
    curve = compute_curve(n_arr, c_arr, bootstrap_iters=bootstrap_iters, ci=ci)
    curve_strict = (compute_curve(n_arr, c_strict, bootstrap_iters=bootstrap_iters, ci=ci)
                    if c_strict is not None else None)
    ent, ent_values = probe_entropy(store, key, ids, n)
    return ProbeResult(key, model_name, task.name, ids, n_arr, c_arr, c_strict, curve, curve_strict,
                       new_samples, seconds, tuple(notes), answer_stats(store, key, ids, n),
                       entropy=ent, entropy_values=ent_values if ent is not None else None)


def _adaptive_result(store: Store, key: str, task: Task, plan: A.AdaptivePlan,
                     bootstrap_iters: int, ci: float, model_name: str, seconds: float,
                     new_samples: int) -> ProbeResult:
    """An adaptive probe's result: curves from `adaptive.matrix`; n, c per problem are the samples
    its design used (its look when certified, else the cap or its budget extension)."""
    ids = [p.problem_id for p in task.problems]
    st = A.final_states(plan, A.states(store, key, ids, plan), store.counts_done(key))
    if any(s.reason == A.OPEN for s in st):
        raise ValueError(f"adaptive probe {key} is not finished: rerun the same command")
    per: dict[str, Any] = {}
    for nv in sorted({s.n for s in st}):
        group = [s.problem_id for s in st if s.n == nv]
        per.update({pc.problem_id: pc for pc in store.counts(key, group, n_max=nv)})
    counts = [per[pid] for pid in ids]
    n_arr = np.array([pc.n for pc in counts])
    c_arr = np.array([pc.c for pc in counts])
    strict_known = all(pc.c_strict is not None for pc in counts)
    c_strict = np.array([pc.c_strict for pc in counts]) if strict_known else None
    curve = curve_from_matrix(A.matrix(store, key, ids, plan, strict=False), n_arr, c_arr,
                              bootstrap_iters, ci)
    curve_strict = (curve_from_matrix(A.matrix(store, key, ids, plan, strict=True), n_arr,
                                      c_strict, bootstrap_iters, ci)
                    if c_strict is not None else None)
    notes = (A.describe(plan, st, plan.cap * len(ids)),)
    ent, ent_values = probe_entropy(store, key, ids, int(n_arr.max()))
    return ProbeResult(key, model_name, task.name, ids, n_arr, c_arr, c_strict, curve, curve_strict,
                       new_samples, seconds, notes, answer_stats(store, key, ids, int(n_arr.max())),
                       adaptive=st, entropy=ent,
                       entropy_values=ent_values if ent is not None else None)


def probe_model(ctx: ProbeContext, spec: ProbeSpec, sampler: Sampler, model_fp: str,
                tokenizer: Any = None, model_name: str = "", meta: dict | None = None) -> ProbeResult:
    """Probe one model on `ctx.task` as `spec` says: resume or extend what `ctx.store` holds, judge
    with `ctx.verifier`, then compute curves. With `spec.adaptive` (n must be its cap), sample in
    rounds (boundlab.probe.adaptive). `spec.keep_text` (probe.keep_text, boundlab.probe.store) is
    not part of the key: it changes which texts are stored, never a verdict, count or pass@k."""
    task, verifier, store = ctx.task, ctx.verifier, ctx.store
    n, gen, seed, adaptive = spec.n, spec.gen, spec.seed, spec.adaptive
    style = "chat" if (task.chat and tokenizer is not None and getattr(tokenizer, "chat_template", None)) else "raw"
    settings = probe_settings(sampling_settings(gen, seed, style), verifier)
    engine = getattr(sampler, "key_engine", lambda _: None)(gen)
    if engine is not None:
        # Another engine draws other samples: its store never mixes with generate's.
        settings["engine"] = engine
    if adaptive is not None:
        if adaptive.cap != n:
            raise ValueError(f"adaptive cap {adaptive.cap} != probe.n {n}")
        # Part of the key: an adaptive store never mixes with a fixed-n one or another design's.
        settings["adaptive"] = adaptive.key_settings()
    key = probe_key(model_fp, task.fingerprint(), settings)
    store.ensure_probe(key, model_fp, task.fingerprint(), settings, model_name, task.name, meta)
    t0 = time.time()
    most = n if adaptive is None or adaptive.budget is None else adaptive.budget_cap
    before_sampling(store, key, model_fp, task.fingerprint(), settings, task, verifier, most)
    desc = f"probe {model_name or 'model'} on {task.name}"
    if adaptive is None:
        new = sample_into_store(task, sampler, verifier, store, key, n, gen, seed, tokenizer,
                                ctx.progress, desc=desc, keep_text=spec.keep_text)
    else:
        new = sample_adaptive(task, sampler, verifier, store, key, adaptive, gen, seed, tokenizer,
                              ctx.progress, desc=desc, keep_text=spec.keep_text)
    return with_timeout_note(result_from_store(store, key, task, n, spec.bootstrap_iters, spec.ci,
                                               model_name, time.time() - t0, new, adaptive), store,
                             task, verifier, most)


# -- external samples ---------------------------------------------------------------------------
def read_samples_file(path: str | Path, task: Task) -> dict[str, list[str]]:
    """{problem_id: [completion, ...]} from a JSONL of {"problem_id", "completion"} lines."""
    per: dict[str, list[str]] = {}
    for lineno, obj in iter_jsonl(path):
        for field_name in ("problem_id", "completion"):
            if field_name not in obj:
                raise DataError(f"{path}:{lineno}: missing field {field_name!r}")
        pid = str(obj["problem_id"])
        if not task.has(pid):
            raise DataError(f"{path}:{lineno}: unknown problem_id {pid!r} for task {task.name!r}")
        if not isinstance(obj["completion"], str):
            raise DataError(f"{path}:{lineno}: 'completion' must be a string")
        per.setdefault(pid, []).append(obj["completion"])
    if not per:
        raise DataError(f"{path}: no samples")
    return per


def score_samples_file(task: Task, path: str | Path, verifier: Verifier, store: Store,
                       bootstrap_iters: int = 1000, ci: float = 0.95, progress: bool = True,
                       chunk_rows: int = 512, keep_text: str = "all") -> tuple[ProbeResult, Task]:
    """Score completions made by any engine. Only problems present in the file are scored."""
    t0 = time.time()
    per = read_samples_file(path, task)
    sub = task.with_problems([p for p in task.problems if p.problem_id in per])
    file_fp = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    model_fp = "samples:" + file_fp
    settings = probe_settings({"source": "external", "file": str(Path(path).name)}, verifier)
    key = probe_key(model_fp, task.fingerprint(), settings)
    store.ensure_probe(key, model_fp, task.fingerprint(), settings, f"samples:{Path(path).name}",
                       task.name)
    before_sampling(store, key, model_fp, task.fingerprint(), settings, sub, verifier)
    # idx is the completion's position among the file's lines for its problem.
    nxt = store.next_index(key)
    todo = [(p, nxt.get(p.problem_id, 0)) for p in sub.problems
            if nxt.get(p.problem_id, 0) < len(per[p.problem_id])]
    total = sum(len(per[p.problem_id]) - start for p, start in todo)
    bar = tqdm(total=total, desc="scoring", unit="sample", disable=not progress or total == 0)
    new = 0
    chunk: list[tuple[Problem, int, int]] = []
    comps: list[list[Completion]] = []
    rows = 0
    for p, start in todo:
        texts = per[p.problem_id][start:]
        chunk.append((p, start, len(texts)))
        comps.append([Completion(t, -1, "external") for t in texts])
        rows += len(texts)
        if rows >= chunk_rows:
            new += _verify_and_store(verifier, store, key, chunk, comps, keep_text)
            bar.update(rows)
            chunk, comps, rows = [], [], 0
    if chunk:
        new += _verify_and_store(verifier, store, key, chunk, comps, keep_text)
        bar.update(rows)
    bar.close()
    res = result_from_store(store, key, sub, None, bootstrap_iters, ci,
                            f"samples:{Path(path).name}", time.time() - t0, new)
    if len(sub) < len(task):
        res.notes = res.notes + (f"{len(sub)} of {len(task)} problems have samples; only those are scored",)
    return with_timeout_note(res, store, sub, verifier), sub


def export_prompts(task: Task, path: str | Path, tokenizer: Any = None,
                   model_name: str | None = None) -> Path:
    """One line per problem, for sampling with another engine:

    - `messages`: the chat turns (system, when the task has one, then user) of a chat task, as the
      task's template defines them: what a chat API (`/v1/chat/completions`, an engine's `chat`)
      takes, which then applies the model's own chat template;
    - `prompt`: the exact string our samplers feed the model, written only when it is known: for a
      chat task, when a tokenizer is given (`prompt_model` names its model); for a task without chat
      wrapping, always (it is the same for every model);
    - `answer`, and the problem's tags (`meta`);
    - `images`: a visual task's image files (absolute paths), to be shown with the user turn."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for p in task.problems:
            row: dict[str, Any] = {"problem_id": p.problem_id}
            if task.chat:
                row["messages"] = task.messages(p)
            if not task.chat or tokenizer is not None:
                row["prompt"] = task.render(p, tokenizer)
                if task.chat:
                    row["prompt_model"] = model_name
            row["answer"] = p.answer
            row["meta"] = p.meta
            if p.images:  # a visual task: the engine must show these files with the user turn
                row["images"] = p.images
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return path
