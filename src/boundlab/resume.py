"""`python train.py resume=RUN_DIR [overrides]`: continue a run with the run's own saved config.

Where this departs from a plain Hydra run, and why:

- Hydra does not compose a resumed run. Hydra creates `hydra.run.dir` (and writes `.hydra/*.yaml`
  there) before the task function runs, so a mistyped path became a fresh full run and a real one
  had its config files overwritten. train.py hands its argv here first whenever it holds
  `resume=`; the path is checked before anything is created, and the training function is called
  directly with the config from RUN_DIR/.hydra/config.yaml (merged into the typed schema, so a
  field added to the code since keeps its default).
- The run's config wins. Overrides given on resume are refused in one line, unless the key is on
  the allow-list below (settings of the execution that cannot change what is trained or measured)
  or the override only restates the run's own value (so a requeued job may repeat its original
  command line with `resume=` added). Allowed changes apply to this process only: the original
  `.hydra/config.yaml`, `hydra.yaml` and `overrides.yaml` are never written; each resume appends
  one line (time, argv, host, pid, what it changed) to RUN_DIR/.hydra/resumes.jsonl instead.
- A SLURM requeue resumes itself (boundlab.rundir.slurm): the same job restarted by SLURM in the run
  dir it made. `requeue_argv` turns a batch script's own command line (`hydra.run.dir=RUN_DIR ...`)
  into `resume=RUN_DIR ...` (Hydra's settings dropped: the run's saved hydra.yaml has them), so the
  script needs no requeue branch; `requeued_job` does the same inside a Hydra job (submitit's requeue
  runs the job again through Hydra) when the config composes to the digest the job recorded. Each is
  one line in `resumes.jsonl` like any resume, with the SLURM job and restart count.
- The `${hydra:...}` interpolations of the saved config resolve against the saved
  `.hydra/hydra.yaml`, with the run dir as it is now (a moved run dir stays usable), and for a
  sweep job with the sweep dir the job really ran in (hydra.yaml keeps `${now:...}` unresolved, so
  re-resolving it would name a new sweep and a new W&B group).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from boundlab.rundir import HYDRA_CONFIG, HYDRA_DIR, HYDRA_RUNTIME, RESUMES_FILE
# finished_line: what a resumed, finished run prints; training prints it too, so it lives below both.
from boundlab.rundir.checkpoints import finished_line  # noqa: F401
from boundlab.rundir.io import dumps as strict_dumps

if TYPE_CHECKING:
    from hydra.conf import HydraConf
    from omegaconf import DictConfig

    from boundlab.config import TrainMain

# Settings a resume may change: they decide how fast or where things run, not what is trained,
# sampled or scored. Everything else a run's results depend on, including some that look harmless:
#   sampler.batch_size   sets the chunks and each chunk's sampling seed, so it changes the samples;
#   sampler.hf.engine    the compact decoder and generate draw other samples (and key them apart);
#   train.probe_mode     inline probing shares the training process (its RNG before isolation);
#   sampler.device, sampler.vllm.tensor_parallel_size, backend.*  change the numerics;
#   store.path           another store holds other cached samples and verdicts;
#   logger.* but mode    project/entity/run_id would split the W&B run; name=none would drop W&B.
# Thread counts are allowed: null already means "one per core", so they vary by machine anyway.
ALLOWED: dict[str, tuple[str, ...] | None] = {
    "backend.torch_threads": None,
    "sampler.torch_threads": None,
    "verify.workers": None,
    "logger.mode": ("online", "offline"),  # where W&B writes; "disabled" would lose the run's id
    # Where the vLLM rollout server runs (the same server serves the same model): a requeued
    # multi-node job may get another service node.
    "rollout.host": None,
    "rollout.port": None,
    "rollout.base_url": None,
}



class ResumeError(ValueError):
    """A resume that cannot go ahead as asked (one line, exit 2)."""


def requested(argv: Sequence[str]) -> bool:
    """Whether argv asks for a resume (train.py then calls main() here instead of Hydra)."""
    return any(a.lstrip("+").startswith("resume=") and a.split("=", 1)[1] not in ("null", "~")
               for a in argv)


def resume_arg(argv: Sequence[str]) -> str | None:
    """The value of `resume=` in argv (also `+resume=`/`++resume=`), or None. `resume=null` is
    Hydra's null: a new run."""
    found = [a.split("=", 1)[1] for a in argv if a.lstrip("+").startswith("resume=")]
    if not found:
        return None
    if len(found) > 1:
        raise ResumeError(f"resume= given {len(found)} times; give one run dir")
    return None if found[0] in ("null", "~") else found[0]


def allowed_text() -> str:
    return ", ".join(k + (f" ({'|'.join(v)})" if v else "") for k, v in ALLOWED.items())


def load_run_config(run_dir: Path) -> tuple[DictConfig, HydraConf | None]:
    """(config, hydra node) of a run dir, typed by TrainMain, the hydra node set as HydraConfig.
    The config stays a DictConfig until main() hands it to training: the hydra node is built from
    its unresolved values, and overrides are selected and applied with OmegaConf."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from boundlab.config import TrainMain, check_keys, migrate_saved, register_configs
    import boundlab.builtins  # noqa: F401 - ${toy_model:...} and every plug-in the saved config names

    register_configs()
    cfg_file = run_dir / HYDRA_CONFIG
    try:
        # Runs from before the algo.<family>, verify.<verifier>, sampler.vllm and task blocks.
        saved = migrate_saved(OmegaConf.load(cfg_file), cfg_file)
        cfg = OmegaConf.merge(OmegaConf.structured(TrainMain), saved)
        check_keys(cfg)
    except (OmegaConfBaseException, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ResumeError(f"resume={run_dir}: {cfg_file} is not a train.py config ({first})") from None
    return cfg, _set_hydra_node(run_dir, cfg)


def _set_hydra_node(run_dir: Path, cfg: DictConfig) -> HydraConf | None:
    # A DictConfig, not TrainMain: its unresolved `${...}` values are written into the hydra node.
    from hydra.conf import HydraConf
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import setup_globals
    from hydra.types import RunMode
    from omegaconf import OmegaConf, open_dict

    setup_globals()  # the `hydra:` and `now:` resolvers, as Hydra registers them for a job
    hfile = run_dir / HYDRA_RUNTIME
    if not hfile.is_file():
        return None
    node = OmegaConf.create({"hydra": OmegaConf.structured(HydraConf)})
    OmegaConf.set_struct(node.hydra, False)  # as Hydra composes it: groups add keys (hydra.env)
    try:
        root = OmegaConf.merge(node, OmegaConf.load(hfile))
    except Exception as e:  # noqa: BLE001 - one line, whatever is wrong with the file
        raise ResumeError(f"resume={run_dir}: cannot read {hfile} ({str(e).splitlines()[0]})") from None
    with open_dict(root):
        # The task config beside it, for `${algo.name}` in hydra.sweep.subdir.
        for key, value in OmegaConf.to_container(cfg, resolve=False).items():
            root[key] = value
    h = root.hydra
    old_out = h.runtime.output_dir
    h.runtime.output_dir = str(run_dir)
    h.run.dir = str(run_dir)
    if h.mode == RunMode.MULTIRUN:
        try:
            sub = Path(str(OmegaConf.select(root, "hydra.sweep.subdir")))
            out = Path(str(old_out))
            if sub.parts and out.parts[-len(sub.parts):] == sub.parts:
                h.sweep.dir = str(out.parents[len(sub.parts) - 1])
        except Exception:  # noqa: BLE001 - keep the saved sweep.dir; only the W&B group name needs it
            pass
    HydraConfig.instance().set_config(root)
    return HydraConfig.get()


def check_overrides(cfg: DictConfig, hydra_node: HydraConf | None, overrides: Sequence[str],
                    run_dir: Path) -> dict[str, Any]:
    """The allowed changes in `overrides`, as {key: value}; raise ResumeError on anything else.
    `cfg` is the saved DictConfig: override keys are dotted paths, looked up with OmegaConf.select."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    from boundlab.config import MOVED_KEYS

    keep = f"a resumed run keeps its own config ({run_dir}/.hydra/config.yaml); only these may change: {allowed_text()}"
    flags = [a for a in overrides if a.startswith("-")]
    if flags:
        raise ResumeError(f"resume={run_dir} takes no Hydra flags (got {' '.join(flags)}): a resume is "
                          f"one run in its own dir")
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as e:
        raise ResumeError(f"resume={run_dir}: {str(e).splitlines()[0]}") from None
    choices = dict(hydra_node.runtime.choices) if hydra_node is not None else {}
    changes: dict[str, Any] = {}
    for ov in parsed:
        name = ov.key_or_group + (f"@{ov.package}" if ov.package else "")
        if ov.key_or_group == "hydra" or ov.key_or_group.startswith(("hydra.", "hydra/")):
            raise ResumeError(f"resume={run_dir}: {ov.input_line}: Hydra settings cannot be given on "
                              f"resume (the run dir and its launcher are fixed)")
        if ov.is_sweep_override():
            raise ResumeError(f"resume={run_dir}: {ov.input_line}: a sweep cannot resume one run")
        if ov.type.name == "DEL":
            raise ResumeError(f"resume={run_dir}: {ov.input_line}: nothing can be removed on resume; {keep}")
        value = ov.value()
        if name in choices:  # a config group: only restating the run's own choice is accepted
            if str(value) == str(choices[name]):
                continue
            raise ResumeError(f"resume={run_dir}: cannot change {name} on resume (the run used "
                              f"{name}={choices[name]}, given {value}); {keep}")
        key = old = ov.key_or_group
        if OmegaConf.select(cfg, key, default=_ABSENT) is _ABSENT and key in MOVED_KEYS:
            # A key that moved (config.migrate): the saved config was migrated, and a requeued job's
            # command line may still restate the old key; its value is compared at the new key.
            key = MOVED_KEYS[key]
        if OmegaConf.select(cfg, key, default=_ABSENT) is _ABSENT:
            raise ResumeError(f"resume={run_dir}: unknown config key '{key}'")
        try:
            own = OmegaConf.select(cfg, key, throw_on_missing=True)
            own = OmegaConf.to_container(own, resolve=True) if OmegaConf.is_config(own) else own
        except Exception:  # noqa: BLE001 - an unresolvable value is not the same value
            own = _ABSENT
        if _same(own, value):
            continue  # restates the run's own value
        if old != key:
            raise ResumeError(f"resume={run_dir}: config key '{old}' moved to '{key}': write "
                              f"{key}={ov.input_line.split('=', 1)[1]}")
        if key not in ALLOWED:
            raise ResumeError(f"resume={run_dir}: cannot change {key} on resume (the run has "
                              f"{own!r}, given {value!r}); {keep}")
        if ALLOWED[key] is not None and value not in ALLOWED[key]:
            raise ResumeError(f"resume={run_dir}: {key}={value} is not allowed on resume "
                              f"(one of {', '.join(ALLOWED[key])})")
        changes[key] = value
    return changes


_ABSENT = object()


def _same(a: Any, b: Any) -> bool:
    # True == 1 in Python; a boolean setting restated as 1 is not the same value.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def record(run_dir: Path, argv: Sequence[str], changes: dict[str, Any]) -> None:
    from boundlab.rundir import slurm

    line = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "argv": list(argv),
            "host": socket.gethostname(), "pid": os.getpid(), "changed": changes}
    job = slurm.current_job()
    if job is not None:
        line["slurm"] = {**job, "restart": slurm.restart_count()}
    with (run_dir / HYDRA_DIR / RESUMES_FILE).open("a") as f:
        f.write(strict_dumps(line) + "\n")


def _is_hydra_setting(arg: str) -> bool:
    key = arg.lstrip("+~").split("=", 1)[0]
    return key == "hydra" or key.startswith(("hydra.", "hydra/"))


def requeue_argv(argv: Sequence[str]) -> list[str]:
    """`argv`, or, when this process is a SLURM requeue of the job that made the run dir argv names
    (`hydra.run.dir=`), that run's resume: `resume=RUN_DIR` and the rest of the original command
    line (restated values are accepted; Hydra's settings are dropped, its saved hydra.yaml has them)."""
    from boundlab.rundir import slurm
    from boundlab.rundir.lock import main_rank
    from boundlab.rundir.owner import output_dir_from_argv

    if requested(argv) or "-m" in argv or "--multirun" in argv:
        return list(argv)
    named = output_dir_from_argv(argv, "train")
    if named is None or not slurm.is_requeue_of(named[1]):
        return list(argv)
    run_dir = named[1]
    if main_rank():
        print(f"[boundlab] {slurm.describe()} restarted in the run dir it made: resuming it "
              f"(train.py resume={run_dir})", flush=True)
    rest = [a for a in argv if not _is_hydra_setting(a) and not a.lstrip("+").startswith("resume=")]
    return [f"resume={run_dir}", *rest]


def requeued_job(cfg: DictConfig, run_dir: str | Path) -> DictConfig:
    """Inside a Hydra job: `cfg`, or for a SLURM requeue of the job that made `run_dir` (submitit
    requeues a job by running it through Hydra again) the same config as that run's resume. A config
    that no longer composes to what the job started with is refused in one line."""
    from omegaconf import OmegaConf

    from boundlab.rundir import lock, slurm
    from boundlab.rundir.owner import ForeignRunDir

    if cfg.resume is not None or not slurm.is_requeue_of(run_dir):
        return cfg
    run_dir = Path(run_dir).resolve()
    if not slurm.same_config(run_dir, OmegaConf.to_yaml(cfg, resolve=False)):
        raise ForeignRunDir(f"{slurm.describe()} restarted in the run dir it made ({run_dir}), but its "
                          f"config no longer composes to the one it started with (a config file "
                          f"changed?): resume it explicitly with python train.py resume={run_dir}")
    if lock.main_rank():
        print(f"[boundlab] {slurm.describe()} restarted in the run dir it made: resuming it "
              f"(train.py resume={run_dir})", flush=True)
    cfg.resume = str(run_dir)
    with lock.training_locks(run_dir, cfg.train.probe_mode):  # recorded by the holder only, as resume.main does
        if lock.main_rank():
            record(run_dir, [Path(sys.argv[0]).name if sys.argv else "train.py", *sys.argv[1:]], {})
    return cfg


def prepare(argv: Sequence[str]) -> tuple[DictConfig, Path, dict[str, Any]]:
    """Check argv's resume= and overrides; return (config to run, run dir, allowed changes).
    Creates nothing. The config is the DictConfig (validate() reads it as train.py's own)."""
    from omegaconf import OmegaConf

    given = resume_arg(argv)
    if given is None:
        raise ResumeError("no resume= run dir given")
    if "-m" in argv or "--multirun" in argv:
        raise ResumeError(f"resume={given} cannot be combined with -m/--multirun: a resume is one run")
    run_dir = Path(given).expanduser()
    if not run_dir.exists():
        raise ResumeError(f"resume={given}: no such run dir (nothing was created)")
    if not (run_dir / HYDRA_CONFIG).is_file():
        raise ResumeError(f"resume={given}: not a training run dir (no .hydra/config.yaml in it)")
    run_dir = run_dir.resolve()
    cfg, hydra_node = load_run_config(run_dir)
    rest = [a for a in argv if not a.lstrip("+").startswith("resume=")]
    changes = check_overrides(cfg, hydra_node, rest, run_dir)
    for key, value in changes.items():
        try:
            OmegaConf.update(cfg, key, value, merge=False)
        except Exception as e:  # noqa: BLE001 - the schema's type check, in one line
            raise ResumeError(f"resume={run_dir}: {key}={value!r}: {str(e).splitlines()[0]}") from None
    cfg.resume = str(run_dir)
    return cfg, run_dir, changes


def main(argv: Sequence[str], train: Callable[[TrainMain, Path], Any] | None = None) -> int:
    """train.py's path for `resume=`: check, lock, record, train. Exit status 0, or 2 with one line."""
    from boundlab.cli import friendly_errors
    from boundlab.rundir import lock

    def go() -> int:
        try:
            cfg, run_dir, changes = prepare(argv)
        except ResumeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        from boundlab.config import TrainMain, as_typed
        from boundlab.validate import validate

        validate(cfg)  # the run's own config on this machine (e.g. backend=gpu where CUDA is gone)
        typed = as_typed(cfg, TrainMain)  # typed once, as train.py does
        if train is None:
            from boundlab.training.app import run as train_fn
        else:
            train_fn = train
        with lock.training_locks(run_dir, typed.train.probe_mode):
            if lock.main_rank():
                record(run_dir, [Path(sys.argv[0]).name if sys.argv else "train.py", *argv], changes)
            _as_hydra_job()
            train_fn(typed, run_dir)
        return 0

    return friendly_errors(go)()


def _as_hydra_job() -> None:
    """What Hydra does around a job, as the run had it: its logging (console, and RUN_DIR/train.log
    appended to), `hydra.job.env_set`, and `hydra.job.chdir`."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import configure_log

    if HydraConfig.initialized():
        h = HydraConfig.get()
        configure_log(h.job_logging, h.verbose)
        os.environ.update({str(k): str(v) for k, v in (h.job.env_set or {}).items()})
        if h.job.chdir:
            os.chdir(h.runtime.output_dir)
