"""Run loggers: W&B, and a no-op logger with the same methods (`logger=none`).

One `RunLogger` per process. Entry points build it with `build_logger` and finish it in a `finally`
(or use it as a context manager). A probe worker that logs into a training run builds its own logger
with `run_id=` the training run's id: W&B resumes the run (`resume="allow"`). Offline, a resumed run
writes a new `offline-run-*/run-<id>.wandb` file (a *segment*); `wandb sync` uploads each. A logger
that calls `open_segment` records in the run dir what its segment logged and whether it closed its
file (`boundlab.tracking.segments`): what a resume reads instead of W&B's files.

Mode, in order of precedence: the `WANDB_MODE` environment variable; then `cfg.mode`; then "online"
only when credentials exist (`WANDB_API_KEY`, or a `~/.netrc` entry for the W&B host), else "offline".
An online init that fails (no network, bad entity) falls back to offline rather than losing the run.
"""

from __future__ import annotations

import logging
import netrc
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

if TYPE_CHECKING:
    from boundlab.config import LoggerConfig

log = logging.getLogger(__name__)

_MODES = ("online", "offline", "disabled")
# Spellings W&B accepts for WANDB_MODE.
_MODE_ALIASES = {"dryrun": "offline", "run": "online"}


# --------------------------------------------------------------------------------------------------
# Config helpers


def _plain(obj: Any) -> Any:
    """OmegaConf containers -> plain Python, so W&B stores JSON-friendly config."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - hydra-core is a dependency
        return obj
    if isinstance(obj, (DictConfig, ListConfig)):
        return OmegaConf.to_container(obj, resolve=True)
    return obj


def _normalize_mode(mode: str, source: str) -> str:
    m = _MODE_ALIASES.get(mode.strip().lower(), mode.strip().lower())
    if m not in _MODES:
        raise ValueError(f"{source}={mode!r}: expected one of {', '.join(_MODES)}")
    return m


def has_wandb_credentials(env: Mapping[str, str] | None = None) -> bool:
    """True if W&B could log in without asking: WANDB_API_KEY, or a netrc entry for the W&B host."""
    env = os.environ if env is None else env
    if env.get("WANDB_API_KEY"):
        return True
    host = urlparse(env.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname or "api.wandb.ai"
    path = Path(env["NETRC"]) if env.get("NETRC") else Path.home() / ".netrc"
    if not path.is_file():
        return False
    try:
        auth = netrc.netrc(str(path)).authenticators(host)
        return bool(auth and auth[2])
    except netrc.NetrcParseError:
        # Python rejects a netrc that others can read; W&B reads it anyway. Match W&B.
        try:
            return host in path.read_text(errors="replace")
        except OSError:
            return False
    except OSError:
        return False


def resolve_mode(cfg_mode: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The W&B mode to use: WANDB_MODE wins, then cfg.mode, then online-if-credentials-else-offline."""
    env = os.environ if env is None else env
    if env.get("WANDB_MODE"):
        return _normalize_mode(env["WANDB_MODE"], "WANDB_MODE")
    if cfg_mode:
        return _normalize_mode(cfg_mode, "logger.mode")
    return "online" if has_wandb_credentials(env) else "offline"


def _is_rank_zero(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    try:
        return int(env.get("RANK", "0")) == 0
    except ValueError:
        return True


# --------------------------------------------------------------------------------------------------
# Loggers


class RunLogger:
    """The interface every logger has. Metric keys are namespaced: `train/loss`, `probe/pass@64`."""

    kind = "base"

    def __init__(self, run_dir: str | os.PathLike | None = None):
        self._run_dir = Path(run_dir) if run_dir is not None else None
        self._finished = False

    # -- identity ---------------------------------------------------------------------------------
    @property
    def run_id(self) -> str | None:
        return None

    @property
    def run_path(self) -> str | None:
        """`entity/project/run_id` (online) or `project/run_id` (offline); None without a run."""
        return None

    @property
    def dir(self) -> Path | None:
        """The folder the backend writes this run's files into (under `run_dir`), if any."""
        return None

    @property
    def run_dir(self) -> Path | None:
        """The BoundLab run directory the logger was built for."""
        return self._run_dir

    @property
    def mode(self) -> str:
        return "disabled"

    @property
    def finished(self) -> bool:
        return self._finished

    # The run-dir record of what this process logged (boundlab.tracking.segments); None without one.
    segment: Any = None

    def open_segment(self, role: str, from_step: int = 0) -> Any:
        """Start recording, in the run dir, what this process logs into the run (`role`: "train"
        or "probe"; `from_step`: the training step it resumed from). No-op without a W&B run."""
        return None

    # -- logging ----------------------------------------------------------------------------------
    def log(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Log scalars (or W&B media) under namespaced keys."""

    def define_step_metric(self, prefix: str, step_metric: str) -> None:
        """Plot every `prefix/*` key against `step_metric` (logged alongside them)."""

    def log_line_plot(
        self,
        key: str,
        xs: Sequence[float],
        series: Mapping[str, Sequence[float]],
        title: str = "",
        xname: str = "x",
        step_metrics: Mapping[str, Any] | None = None,
    ) -> None:
        """Overlaid curves sharing one x axis (e.g. pass@k of a checkpoint vs the base)."""

    def log_table(
        self,
        key: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """A table; `extra` (e.g. `{"probe/step": 100}`) is logged in the same row."""

    def log_image(self, key: str, png_path: str | os.PathLike, extra: Mapping[str, Any] | None = None) -> None:
        """An image file (PNG); `extra` is logged in the same row."""

    def update_summary(self, values: Mapping[str, Any]) -> None:
        """Set run-level summary values (final numbers shown in the runs table)."""

    def alert(self, title: str, text: str) -> None:
        """Something a researcher must see while the run goes on (the boundary alarm)."""

    def finish(self, exit_code: int = 0) -> None:
        """End the run. Safe to call more than once."""
        self._finished = True

    # -- context manager --------------------------------------------------------------------------
    def __enter__(self) -> RunLogger:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        code = 0 if exc_type is None else 1
        if exc_type is None:
            self.finish(exit_code=code)
            return
        # Never let a failing finish hide the exception that is already on its way out.
        try:
            self.finish(exit_code=code)
        except Exception:  # noqa: BLE001
            log.exception("finishing the run after an error failed")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mode={self.mode!r}, run_id={self.run_id!r}, run_dir={str(self.run_dir)!r})"


class NoneLogger(RunLogger):
    """`logger=none`: every method exists and does nothing."""

    kind = "none"

    def __init__(self, run_dir: str | os.PathLike | None = None, mode: str = "disabled"):
        super().__init__(run_dir)
        self._mode = mode

    @property
    def mode(self) -> str:
        return self._mode


class WandbLogger(RunLogger):
    """A W&B run. Build it with `build_logger`; it wraps an already-initialised `wandb` run."""

    kind = "wandb"

    def __init__(self, run: Any, run_dir: str | os.PathLike | None, mode: str):
        super().__init__(run_dir)
        self._run = run
        self._mode = mode

    # -- identity ---------------------------------------------------------------------------------
    @property
    def run(self) -> Any:
        """The underlying `wandb` run, for what this interface does not cover."""
        return self._run

    @property
    def run_id(self) -> str:
        return self._run.id

    @property
    def run_path(self) -> str:
        return self._run.path

    @property
    def dir(self) -> Path:
        # `run.dir` is `<sync_dir>/files`; the sync dir also holds the `.wandb` file and logs.
        return Path(self._run.settings.sync_dir)

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def url(self) -> str | None:
        return getattr(self._run, "url", None)

    def open_segment(self, role: str, from_step: int = 0) -> Any:
        from boundlab.tracking.segments import Segment

        if self._run_dir is not None and self.segment is None:
            self.segment = Segment(self._run_dir, self.dir, self.run_id, self._mode, role, from_step)
        return self.segment

    # -- logging ----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._finished:
            raise RuntimeError(f"W&B run {self.run_id} is finished; log before finish()")

    def log(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        self._check_open()
        if step is not None:
            current = getattr(self._run, "step", None)
            if isinstance(current, int) and step < current:
                # W&B silently drops rows whose step goes backwards. Keep the values, in a row of
                # their own (committing W&B's open row first, so nothing there is overwritten); the
                # step that matters for plots is a step metric in `metrics` (define_step_metric).
                warnings.warn(
                    f"step {step} < W&B's current step {current}: logging {sorted(metrics)} at the "
                    "next W&B step; key out-of-order series by a step metric instead",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self._run.log({}, commit=True)
                step = None
        self._run.log(dict(metrics), step=step)

    def define_step_metric(self, prefix: str, step_metric: str) -> None:
        self._check_open()
        self._run.define_metric(step_metric)
        self._run.define_metric(f"{prefix.rstrip('/')}/*", step_metric=step_metric)

    def log_line_plot(self, key, xs, series, title="", xname="x", step_metrics=None) -> None:
        self._check_open()
        import wandb

        names = list(series)
        chart = wandb.plot.line_series(
            xs=[float(x) for x in xs],
            ys=[[float("nan") if y is None else float(y) for y in series[n]] for n in names],
            keys=names,
            title=title,
            xname=xname,
        )
        self.log({key: chart, **dict(step_metrics or {})})

    def log_table(self, key, columns, rows, extra=None) -> None:
        self._check_open()
        import wandb

        table = wandb.Table(columns=list(columns), data=[list(r) for r in rows])
        self.log({key: table, **dict(extra or {})})

    def log_image(self, key, png_path, extra=None) -> None:
        self._check_open()
        import wandb

        self.log({key: wandb.Image(str(png_path)), **dict(extra or {})})

    def update_summary(self, values: Mapping[str, Any]) -> None:
        self._check_open()
        self._run.summary.update(dict(values))

    def alert(self, title: str, text: str) -> None:
        """In the run's summary (`alert/title`, `alert/text`: the last one) either way; online, also a
        W&B alert (e-mail or Slack, as the user's W&B settings say)."""
        self._check_open()
        self._run.summary.update({"alert/title": title, "alert/text": text})
        if self._mode == "online":
            import wandb

            self._run.alert(title=title, text=text, level=wandb.AlertLevel.WARN)

    def finish(self, exit_code: int = 0) -> None:
        if self._finished:
            return
        self._finished = True
        self._run.finish(exit_code=exit_code)
        # W&B 0.31's `finish()` returns before its service has flushed and closed the `.wandb` file
        # (measured: often only the 7-byte header is on disk). `wandb.teardown()` (public) waits for
        # the service this process started to shut down, which closes every file it wrote; only then
        # is the segment recorded as closed, so a resume trusts that this file holds all it was given.
        import wandb

        wandb.teardown(exit_code=exit_code)
        if self.segment is not None:
            self.segment.close()
        if self._mode == "offline":
            log.info("W&B offline run %s saved in %s; upload with: wandb sync %s", self.run_id, self.dir, self.dir)


# --------------------------------------------------------------------------------------------------
# Construction


def _init_wandb(mode: str, init_kwargs: dict[str, Any], settings_kwargs: dict[str, Any]) -> Any:
    import wandb

    settings = wandb.Settings(**settings_kwargs)
    return wandb.init(mode=mode, settings=settings, **init_kwargs)


def build_logger(cfg: LoggerConfig | Mapping[str, Any], run_dir: str | os.PathLike,
                 run_config: Mapping[str, Any] | None = None) -> RunLogger:
    """Build the run logger named by `cfg.name` ("wandb" or "none").

    `cfg` is the `logger` group (a mapping or namespace with some of its fields takes the schema's
    defaults for the rest). mode None = auto (see the module docstring); run_id resumes that run,
    with resume "allow" unless set; dir None = run_dir; rank_zero_only: processes with RANK != 0 get
    a NoneLogger.
    """
    from boundlab.config import LoggerConfig, as_typed

    cfg = as_typed(cfg, LoggerConfig)
    run_dir = Path(run_dir)
    name = str(cfg.name).lower()
    if name in ("none", "null", "off", "disabled"):
        return NoneLogger(run_dir, mode="none")
    if name != "wandb":
        raise ValueError(f"logger.name={name!r}: expected 'wandb' or 'none'")
    if cfg.rank_zero_only and not _is_rank_zero():
        return NoneLogger(run_dir, mode="disabled")

    mode = resolve_mode(cfg.mode)
    if mode == "disabled":
        return NoneLogger(run_dir, mode="disabled")

    wandb_dir = Path(cfg.dir if cfg.dir is not None else run_dir)
    wandb_dir.mkdir(parents=True, exist_ok=True)
    run_id = cfg.run_id
    tags = _plain(cfg.tags)
    init_kwargs: dict[str, Any] = dict(
        project=cfg.project,
        entity=cfg.entity,
        group=cfg.group,
        job_type=cfg.job_type,
        name=cfg.run_name,
        notes=cfg.notes,
        tags=list(tags) if tags else None,
        config=dict(_plain(run_config) or {}),
        dir=str(wandb_dir),
        id=run_id,
        resume=cfg.resume if cfg.resume is not None else ("allow" if run_id else None),
    )
    settings_kwargs: dict[str, Any] = dict(
        # Our own stdout goes to Hydra's log; W&B's console capture (wrapping sys.stdout) adds
        # nothing there and interferes with subprocess-heavy code (samplers, sandboxes).
        console=str(cfg.console),
        silent=True,  # we log one line of our own instead of W&B's banner
        x_disable_stats=not cfg.system_stats,
    )
    if cfg.init_timeout is not None:  # seconds W&B waits for its backend (default 90)
        settings_kwargs["init_timeout"] = float(cfg.init_timeout)

    try:
        run = _init_wandb(mode, init_kwargs, settings_kwargs)
    except Exception as err:  # noqa: BLE001 - any online failure: keep the run, offline
        if mode != "online":
            raise
        log.warning("W&B online init failed (%s: %s); logging offline instead", type(err).__name__, err)
        mode = "offline"
        run = _init_wandb(mode, init_kwargs, settings_kwargs)

    logger = WandbLogger(run, run_dir, mode)
    log.info("W&B %s run %s (%s) in %s", mode, logger.run_id, logger.run_path, logger.dir)
    return logger
