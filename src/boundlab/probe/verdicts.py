"""Stored verdicts: which verifier made them, and what a probe does with those it cannot reuse.

- A probe's key covers the verifier (`probe_settings`): its name, the version of its logic, every
  setting that can change a verdict and the versions of the libraries that judge
  (`Verifier.identity()`). Each verifier is built from its own config block, so its identity holds
  only its own settings: changing `verify.math.max_answer_chars` makes a new math probe (and
  leaves code probes' keys alone); the old verdicts are never silently reused. When the blocks were
  introduced the code identity lost `extraction` (a math setting that had leaked into it), so code
  probes got new keys once and re-verify their stored completions under them (below), sampling
  nothing; math, exact and toy identities came out the same.
- A probe whose key is new only because the verifier changed does not sample again: the
  completions stored for the same model, task and sampling settings are re-verified under the new
  verifier and stored under the new key with their sample indices (`reverify_stored`). Their texts
  are the model's; only the verdicts were stale.
- A verifier whose `timeout` is not a verdict (math: math-verify could not decide within its budget,
  which can depend on load) has its stored timeouts re-checked whenever the probe is run again
  (`recheck_timeouts`), and the timeouts that remain are counted in the summary
  (`timeout_note`): none of them is final without the summary saying so.
- A probe stored with `probe.keep_text=compact` keeps no text for most wrong samples, so a changed
  verifier cannot judge them again. Such a donor is not used, not even in part (re-verifying only
  the texts it kept would count mostly correct samples: a silently wrong pass@k); the new probe
  samples afresh, and says so in one line. Timeouts always keep their text, so their re-check works.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

from boundlab.probe.store import SampleRow, Store, dropped_error
from boundlab.tasks.base import Task

_CHUNK_ROWS = 512


def verifier_identity(verifier: Any) -> dict[str, Any]:
    identity = getattr(verifier, "identity", None)
    if identity is None:  # not a boundlab Verifier: its name is all we know
        return {"name": getattr(verifier, "name", type(verifier).__name__)}
    return identity()


def probe_settings(sampling: dict[str, Any], verifier: Any) -> dict[str, Any]:
    """The settings part of a probe key: how the samples were drawn and who judged them."""
    return {**sampling, "verifier": verifier_identity(verifier)}


def describe(verifier: Any) -> str:
    ident = verifier_identity(verifier)
    return f"{ident['name']} v{ident.get('version', '?')}"


def timeouts_final(verifier: Any) -> bool:
    return bool(getattr(verifier, "timeouts_are_final", True))


def _rescore(verifier: Any, task: Task, rows: Sequence[SampleRow]) -> list[SampleRow]:
    """`rows` judged again by `verifier`: same problem, index, text and token count; a row the
    verifier could not judge at all (`sandbox_error`) is left out, as a fresh probe leaves it."""
    out: list[SampleRow] = []
    dropped = sum(r.text is None for r in rows)
    if dropped:  # never judge a '' in place of the model's text
        raise dropped_error(dropped, "re-verification")
    for start in range(0, len(rows), _CHUNK_ROWS):
        chunk = rows[start:start + _CHUNK_ROWS]
        per: dict[str, list[SampleRow]] = defaultdict(list)
        for r in chunk:
            per[r.problem_id].append(r)
        items = [(task.by_id(pid), [r.text for r in rs]) for pid, rs in per.items()]
        if getattr(verifier, "reads_cut_off", False):
            # A completion stored as stopped at max_new_tokens stays cut off when judged again
            # (otherwise a fallback could score its unfinished text).
            cut = [[bool(r.info and r.info.get("finish") == "length") for r in rs]
                   for rs in per.values()]
            judged = verifier.score_many(items, cut_off=cut)
        else:
            judged = verifier.score_many(items)
        for (pid, rs), verdicts in zip(per.items(), judged):
            for r, v in zip(rs, verdicts):
                if v.outcome == "sandbox_error":
                    continue
                info = dict(v.info) if v.info else {}
                if r.info and "finish" in r.info:  # how sampling ended, not a verdict
                    info["finish"] = r.info["finish"]
                out.append(SampleRow(pid, r.idx, r.text, v.extracted, v.correct, v.strict,
                                     v.outcome, r.n_tokens, info or None))
    return out


def reverify_stored(store: Store, key: str, model_fp: str, task_fp: str,
                    settings: dict[str, Any], task: Task, verifier: Any,
                    n: int | None = None) -> str | None:
    """Fill probe `key` from another probe of the same model, task and sampling settings that a
    different verifier judged: its first n completions per problem, re-verified. Returns the one
    line to print, or None when there was nothing to take."""
    sampling = {k: v for k, v in settings.items() if k != "verifier"}
    donors = [p for p in store.probes_of(model_fp, task_fp) if p["key"] != key
              and {k: v for k, v in p["settings"].items() if k != "verifier"} == sampling]
    if not donors:
        return None
    ids = {p.problem_id for p in task.problems}
    total = 0
    sources = []
    for donor in sorted(donors, key=lambda p: -sum(store.counts_done(p["key"]).values())):
        rows = [r for r in store.samples_missing_from(key, donor["key"], n) if r.problem_id in ids]
        if not rows:
            continue
        dropped = sum(r.text is None for r in rows)
        if dropped:
            print(f"[boundlab] probe {donor['key']} was stored with probe.keep_text=compact: "
                  f"{dropped} of its {len(rows)} completions have no text, so verifier "
                  f"{describe(verifier)} cannot judge them again; sampling afresh instead",
                  flush=True)
            continue
        total += store.add_samples(key, _rescore(verifier, task, rows))
        sources.append(donor["key"])
    if not total:
        return None
    return (f"re-verified {total} stored completions under verifier {describe(verifier)} "
            f"(sampled for probe {', '.join(sources)}; the verifier changed, not the samples)")



def _open_timeouts(store: Store, key: str, task: Task, verifier: Any,
                   n: int | None) -> list[SampleRow]:
    """The probe's stored `timeout` samples on this task's problems, when a timeout is not the
    verifier's last word (else none)."""
    if timeouts_final(verifier):
        return []
    ids = {p.problem_id for p in task.problems}
    return [r for r in store.with_outcome(key, "timeout", n) if r.problem_id in ids]

def recheck_timeouts(store: Store, key: str, task: Task, verifier: Any,
                     n: int | None = None) -> str | None:
    """Judge the probe's stored `timeout` samples again, when a timeout is not the verifier's
    last word. Returns the one line to print, or None when there was nothing to re-check."""
    rows = _open_timeouts(store, key, task, verifier, n)
    if not rows:
        return None
    fresh = _rescore(verifier, task, rows)
    store.replace_verdicts(key, fresh)
    still = sum(r.outcome == "timeout" for r in fresh)
    right = sum(r.correct for r in fresh)
    return (f"re-checked {len(rows)} stored timeout verdict(s): {len(rows) - still} decided "
            f"({right} correct), {still} still timeout")


def timeout_note(store: Store, key: str, task: Task, verifier: Any,
                 n: int | None = None) -> str | None:
    """A summary note counting the probe's `timeout` samples (counted as wrong in pass@k)."""
    rows = _open_timeouts(store, key, task, verifier, n)
    if not rows:
        return None
    problems = len({r.problem_id for r in rows})
    return (f"{len(rows)} sample(s) of {problems} problem(s) are `timeout`: the verifier could not "
            f"decide within its budget; they count as wrong, and rerunning the same command "
            f"re-checks them")


def before_sampling(store: Store, key: str, model_fp: str, task_fp: str, settings: dict[str, Any],
                    task: Task, verifier: Any, n: int | None = None) -> None:
    """What a probe does with stored verdicts before it samples: take over the completions a
    different verifier judged, re-check stored timeouts. Says what it did, one line each."""
    for line in (reverify_stored(store, key, model_fp, task_fp, settings, task, verifier, n),
                 recheck_timeouts(store, key, task, verifier, n)):
        if line:
            print(f"[boundlab] {line}", flush=True)


def with_timeout_note(result: Any, store: Store, task: Task, verifier: Any,
                      n: int | None = None) -> Any:
    note = timeout_note(store, result.key, task, verifier, n)
    if note:
        result.notes = tuple(result.notes) + (note,)
    return result
