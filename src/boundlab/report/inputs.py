"""What a report is about: the base, the models, the training runs, the teacher, and the task.

Every input names a probe in the store, directly (a key or a unique key prefix, or a model name) or
through a training run dir (`probes.jsonl`: its base probe, its checkpoints' probes) or a sweep dir
(the run dirs inside it). The report reads the store only; nothing here samples.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from boundlab.config import ConfigError, TaskConfig
from boundlab.probe.store import Store
from boundlab.rundir.io import read_json, read_jsonl

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from boundlab.report.schema import ReportMain

from boundlab.rundir import HYDRA_CONFIG, PROBES_FILE, RUN_INFO


@dataclass
class RunDir:
    path: Path
    label: str
    algo: str
    # probes.jsonl rows: kind base|checkpoint, step, probe_key, ...
    rows: list[dict[str, Any]]
    # The run's composed config (.hydra/config.yaml), when there is one.
    config: Any = None
    # False when the label says what the run is (algorithm, seed) rather than its folder's name: the
    # final checkpoint's step is then added to the model's label.
    named: bool = True

    @property
    def base_key(self) -> str | None:
        return next((r["probe_key"] for r in self.rows if r.get("kind") == "base"), None)

    @property
    def null(self) -> tuple[str, Any] | None:
        """(probe key, sampling seed) of the run's base-vs-base null probe (`probe.null_seed_offset`)."""
        r = next((r for r in self.rows if r.get("kind") == "null"), None)
        return None if r is None else (r["probe_key"], r.get("seed"))

    def checkpoints(self) -> list[tuple[int, str]]:
        """(step, probe key) of every probed checkpoint, by step (the last probe of a step wins)."""
        by_step = {int(r["step"]): r["probe_key"] for r in self.rows if r.get("kind") == "checkpoint"}
        return sorted(by_step.items())


@dataclass
class Entry:
    """One probe in the report: the base, a model, or the teacher."""
    label: str
    key: str
    model_name: str
    task_name: str
    task_fp: str
    # Where it came from, in words (for the report's models table).
    source: str
    meta: dict[str, Any] = field(default_factory=dict)
    run: RunDir | None = None
    step: int | None = None


@dataclass
class Inputs:
    base: Entry
    models: list[Entry]
    runs: list[RunDir]
    teacher: Entry | None = None
    notes: list[str] = field(default_factory=list)


# -- run and sweep dirs -------------------------------------------------------------------------
def is_run_dir(path: Path) -> bool:
    return (path / PROBES_FILE).is_file() or ((path / HYDRA_CONFIG).is_file()
                                              and (path / RUN_INFO).is_file())


def sweep_run_dirs(path: Path) -> list[Path]:
    """The run dirs directly inside a sweep dir, by job number (`<num>_<algo>`), then name."""
    subs = [p for p in path.iterdir() if p.is_dir() and is_run_dir(p)] if path.is_dir() else []

    def order(p: Path) -> tuple:
        m = re.match(r"^(\d+)", p.name)
        return (int(m.group(1)) if m else 1 << 30, p.name)

    return sorted(subs, key=order)


def sweep_job_notes(path: Path, subs: list[Path]) -> list[str]:
    """One note per job the sweep defined (its multirun.yaml) that left no probes here: a failed,
    killed or never-launched job is named, never silently missing from the comparison."""
    from boundlab.rundir.sweeps import sweep_jobs

    jobs = sweep_jobs(path)
    have = {p.resolve() for p in subs}
    notes = []
    for j in jobs or []:
        if j.dir is not None and Path(j.dir).resolve() in have:
            continue
        why = f"{j.status}: {j.reason}" if j.reason else j.status
        notes.append(f"sweep {path}: job {j.num} ({' '.join(j.overrides)}) has no probes ({why}); "
                     f"it is not in the comparison")
    return notes


def read_run(path: str | Path) -> RunDir:
    path = Path(path).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"run dir not found: {path}")
    if not is_run_dir(path):
        raise ConfigError(f"{path} is not a training run dir (no {PROBES_FILE})")
    # repair=False: the run's trainer or watcher may be writing this file now (see rundir.io).
    rows = read_jsonl(path / PROBES_FILE, repair=False)
    config = None
    if (path / HYDRA_CONFIG).is_file():
        from omegaconf import OmegaConf

        from boundlab.config import migrate_saved

        config = migrate_saved(OmegaConf.load(path / HYDRA_CONFIG), path / HYDRA_CONFIG)  # config.migrate
    info = read_json(path / RUN_INFO, {})
    algo = info.get("algo") or _select(config, "algo.name") or "?"
    if _TIMESTAMPED.match(path.name):
        # A default run dir (`07-37-33_grpo`) names when it started, not what it is.
        seed = info.get("seed", _select(config, "train.seed"))
        label = str(algo) + ("" if seed is None else f" seed {seed}")
        return RunDir(path, label, str(algo), rows, config, named=False)
    label = path.name if algo in path.name else f"{path.name} ({algo})"
    return RunDir(path, label, str(algo), rows, config)


# train.py's default run dir name: the start time (%H-%M-%S), then `_` and the algorithm.
_TIMESTAMPED = re.compile(r"^\d{2}-\d{2}-\d{2}(_.*)?$")


def _select(cfg: DictConfig | None, key: str) -> Any:
    """A value of a run's saved config (untyped: a file, not a schema); None when absent."""
    if cfg is None:
        return None
    from omegaconf import OmegaConf

    try:
        return OmegaConf.select(cfg, key)
    except Exception:  # noqa: BLE001 - an interpolation that cannot resolve here
        return None


# -- probes in the store ------------------------------------------------------------------------
def _probe_list(store: Store, limit: int = 15) -> str:
    probes = store.list_probes()
    if not probes:
        return f"the store {store.path} holds no probes"
    lines = [f"  {p['key']}  {p['model_name'] or '-'}  on {p['task_name'] or '-'}" for p in probes[-limit:]]
    more = f"\n  ... and {len(probes) - limit} more" if len(probes) > limit else ""
    return f"probes in {store.path}:\n" + "\n".join(lines) + more


def find_probe(store: Store, spec: str, task_fp: str | None = None) -> dict[str, Any]:
    """A probe by key, unique key prefix (6+ characters) or model name (narrowed to `task_fp` when
    several probes share the name)."""
    info = store.probe_info(spec)
    if info is not None:
        return info
    probes = store.list_probes()
    if len(spec) >= 6:
        hits = [p for p in probes if p["key"].startswith(spec)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise ConfigError(f"{spec!r} is the start of {len(hits)} probe keys; give more of it")
    hits = [p for p in probes if p["model_name"] == spec]
    if len(hits) > 1 and task_fp is not None:
        hits = [p for p in hits if p["task_fp"] == task_fp] or hits
    if len(hits) > 1 and len({json.dumps({**p["settings"], "verifier": None, "fp": p["model_fp"],
                                          "task": p["task_fp"]}, sort_keys=True) for p in hits}) == 1:
        # The same samples judged by several verifiers (a verifier change re-verifies them under
        # a new key): the newest verifier's verdicts.
        hits = hits[-1:]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        lines = "\n".join(f"  {p['key']}  on {p['task_name']}  {json.dumps(p['settings'], sort_keys=True)}"
                          for p in hits)
        raise ConfigError(f"model name {spec!r} matches {len(hits)} probes; name one by its key:\n{lines}")
    raise ConfigError(f"{spec!r} is not a run dir, a sweep dir, a probe key or a model name in the "
                      f"store.\n{_probe_list(store)}")


def _entry(store: Store, key: str, label: str, source: str, run: RunDir | None = None,
           step: int | None = None) -> Entry:
    info = store.probe_info(key)
    if info is None:
        hint = ""
        if run is not None:
            used = _select(run.config, "store.path")
            hint = (f" The run recorded it in {used}: pass store.path={used}."
                    if used and str(used) != str(store.path) else "")
        raise ConfigError(f"probe {key} ({source}) is not in the store {store.path}.{hint}")
    return Entry(label, key, info["model_name"] or "", info["task_name"] or "", info["task_fp"],
                 source, info["meta"], run, step)


def _label_for(info: dict[str, Any]) -> str:
    name = info["model_name"] or ""
    # Tracker probes are named "base" and "step N": not unique across runs.
    if not name or name == "base" or name.startswith("step "):
        return f"{name or 'probe'} {info['key'][:8]}"
    return name


def _base_of_runs(runs: list[RunDir], where: str) -> str:
    keys = {r.base_key for r in runs}
    if None in keys:
        bad = next(r.path for r in runs if r.base_key is None)
        raise ConfigError(f"{where}: run {bad} has no base probe in its {PROBES_FILE} yet")
    if len(keys) != 1:
        raise ConfigError(f"{where}: its runs start from different base probes {sorted(keys)}; "
                          f"pick one run dir as the base")
    return keys.pop()


def _final(store: Store, run: RunDir, label: str | None = None) -> Entry | None:
    ck = run.checkpoints()
    if not ck:
        return None
    step, key = ck[-1]
    if label is None and not run.named:
        label = f"{run.label} step {step}"
    return _entry(store, key, label or run.label, f"run {run.path}, final checkpoint (step {step})",
                  run, step)


def resolve_inputs(cfg: ReportMain, store: Store) -> Inputs:
    if not cfg.base:
        raise ConfigError("base is required: a training run dir, a sweep dir, a probe key or a "
                          "model name in the store (base=outputs/train/...)")
    notes: list[str] = []
    runs: list[RunDir] = []
    seen_runs: set[Path] = set()

    def add_run(p: Path) -> None:
        r = Path(p).expanduser().resolve()
        if r not in seen_runs:
            seen_runs.add(r)
            runs.append(read_run(r))

    for s in cfg.sweeps:
        subs = sweep_run_dirs(Path(s).expanduser())
        notes.extend(sweep_job_notes(Path(s).expanduser(), subs))
        if not subs:
            raise FileNotFoundError(f"sweep dir {s}: no run dirs inside (each holds {PROBES_FILE})")
        for p in subs:
            add_run(p)
    for r in cfg.runs:
        add_run(Path(r))

    # The base.
    spec = str(cfg.base)
    path = Path(spec).expanduser()
    if path.is_dir() and is_run_dir(path):
        brun = read_run(path)
        if brun.base_key is None:
            raise ConfigError(f"base={spec}: the run has no base probe in its {PROBES_FILE} yet")
        base = _entry(store, brun.base_key, "base", f"run {path}, base probe", brun)
    elif path.is_dir() and sweep_run_dirs(path):
        sruns = [read_run(p) for p in sweep_run_dirs(path)]
        base = _entry(store, _base_of_runs(sruns, f"base={spec}"), "base",
                      f"sweep {path}, base probe", sruns[0])
    elif path.is_dir():
        raise ConfigError(f"base={spec}: a folder, but neither a run dir nor a sweep dir")
    else:
        info = find_probe(store, spec)
        base = _entry(store, info["key"], "base", f"probe {info['key']}")
    base.label = f"base ({base.model_name})" if base.model_name and base.model_name != "base" else "base"

    models: list[Entry] = []
    for spec in cfg.models:
        p = Path(str(spec)).expanduser()
        if p.is_dir():
            e = _final(store, read_run(p))
            if e is None:
                raise ConfigError(f"models: run {p} has no probed checkpoint yet")
            models.append(e)
            continue
        info = find_probe(store, str(spec), base.task_fp)
        models.append(_entry(store, info["key"], _label_for(info), f"probe {info['key']}"))
    for r in runs:
        e = _final(store, r)
        if e is None:
            notes.append(f"run {r.path} has no probed checkpoint yet: it adds no model")
            continue
        models.append(e)

    # One entry per probe; the base is not a model of its own.
    uniq: list[Entry] = []
    for e in models:
        if e.key == base.key:
            notes.append(f"{e.label} is the base probe itself; left out of the models")
        elif all(e.key != u.key for u in uniq):
            uniq.append(e)
    labels: dict[str, int] = {}
    for e in uniq:
        if e.label.lower().startswith("base"):
            e.label = "model " + e.label  # plots draw labels starting with "base" as the reference
        if e.label in labels:
            labels[e.label] += 1
            e.label = f"{e.label} #{labels[e.label]}"
        else:
            labels[e.label] = 1

    teacher = None
    if cfg.teacher:
        p = Path(str(cfg.teacher)).expanduser()
        if p.is_dir():
            teacher = _final(store, read_run(p), "teacher")
            if teacher is None:
                raise ConfigError(f"teacher={cfg.teacher}: the run has no probed checkpoint")
        else:
            info = find_probe(store, str(cfg.teacher), base.task_fp)
            teacher = _entry(store, info["key"], "teacher", f"probe {info['key']}")
    if not uniq:
        notes.append("no models to compare: give models=[...], runs=[...] or sweeps=[...]")
    return Inputs(base, uniq, runs, teacher, notes)


# -- the task -----------------------------------------------------------------------------------
def _restricted(task: Any, ids: set[str]) -> Any:
    return task.with_problems([p for p in task.problems if p.problem_id in ids])


def resolve_task(cfg: ReportMain, inputs: Inputs, store: Store, ids: list[str]) -> tuple[Any, list[str]]:
    """The task the probes were made on, restricted to `ids`, and notes.

    From `cfg.task` when given; else the base run's config (its task and probe.limit); else the
    task named in the store, with its default options. The rebuilt task is checked against the
    probe's task fingerprint: a mismatch (another template, say) is reported, since prompts then
    differ from the sampled ones.
    """
    from boundlab.tasks import build_task

    notes: list[str] = []
    run = inputs.base.run or next((r for r in inputs.runs if r.config is not None), None)
    try:
        if cfg.task is not None:
            task, how = build_task(cfg.task), "the report's task config"
        elif run is not None and run.config is not None:
            task, how = build_task(run.config.task), f"the config of run {run.path}"
        else:
            name = inputs.base.task_name
            task = build_task(TaskConfig(name=name))  # the task's default options
            how = f"the task name {name!r} in the store"
    except (KeyError, ValueError, TypeError, FileNotFoundError) as e:
        raise ConfigError(f"cannot rebuild the probes' task ({e}); name it: task=<name> "
                          f"(and task.path=... for file-based tasks)") from None
    missing = sorted(set(ids) - {p.problem_id for p in task.problems})
    if missing:
        raise ConfigError(f"{len(missing)} probed problem(s) are not in the task rebuilt from {how}, "
                          f"e.g. {missing[:3]}; name the task: task=<name>")
    # The probe's fingerprint covers exactly its problem set, so compare on the probe's own ids.
    base_ids = {pc.problem_id for pc in store.counts(inputs.base.key)}
    if _restricted(task, base_ids).fingerprint() != inputs.base.task_fp:
        notes.append(f"the task rebuilt from {how} does not match the base probe's task fingerprint "
                     f"(another template, system prompt or data version?): perplexity prompts and "
                     f"case-study questions may differ from what was sampled")
    return _restricted(task, set(ids)), notes
