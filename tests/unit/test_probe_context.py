"""The one probe context (boundlab.probe.context): every probing entry point builds its task, store,
verifier, logger and samplers through it, the code verifier gets EvalPlus's cache folder whoever
probes, and closing it closes everything it built, even when one part fails to close."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

import boundlab.builtins  # noqa: F401 - the tasks and verifiers the configs name
from boundlab.config import register_configs
from boundlab.probe.context import ProbeContext, open_verifier
from boundlab.probe.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _cfg(primary, *overrides):
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name=primary, overrides=list(overrides))


def test_store_and_verifier_are_built_in_one_module():
    # Reports and the dashboard open stores read-only themselves; nothing else builds either.
    builders = {}
    for p in (ROOT / "src").rglob("*.py"):
        text = p.read_text()
        writable_stores = [m for m in re.finditer(r"\bStore\(([^)]*)\)", text) if "writable=False" not in m[1]]
        verifiers = re.findall(r"\bbuild_verifier\(", text)
        if writable_stores or verifiers:
            builders[p.relative_to(ROOT).as_posix()] = (len(writable_stores), len(verifiers))
    assert builders == {"src/boundlab/probe/context.py": (1, 1),
                        "src/boundlab/verify/__init__.py": (0, 2)}, builders  # its docstring and def


def test_every_probing_entry_point_builds_its_context_from_the_config():
    for path in ("src/boundlab/probe/app.py", "src/boundlab/training/app.py", "src/boundlab/boundary/watch.py",
                 "scripts/gpu_check.py"):
        text = (ROOT / path).read_text()
        assert "ProbeContext.from_config(cfg" in text, path
        assert "build_logger(" not in text and "sampler_factory(" not in text, path


@pytest.mark.parametrize("primary", ["probe", "train"])
def test_the_code_verifier_gets_the_evalplus_cache_next_to_the_store(tmp_path, primary):
    store = tmp_path / "stores" / "s.sqlite"
    cfg = _cfg(primary, "task=humaneval", "probe.limit=2", f"store.path={store}", "verify.workers=1")
    with ProbeContext.from_config(cfg) as ctx:
        assert ctx.verifier.name == "code" and len(ctx.task) == 2
        assert ctx.verifier.expected.directory == store.parent / "evalplus_expected"


def test_open_verifier_takes_the_verify_config_and_explicit_options(tmp_path):
    cfg = _cfg("probe", "verify.workers=1")
    v = open_verifier("math", cfg.verify, max_answer_chars=3)
    try:
        assert v.settings()["max_answer_chars"] == 3
    finally:
        v.close()


class _Closed:
    def __init__(self, log, name, fail=False):
        self.log, self.name, self.fail = log, name, fail

    def __call__(self):
        self.log.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} failed to close")


def test_close_finishes_the_logger_then_closes_the_verifier_and_the_store(tmp_path):
    cfg = _cfg("probe", f"store.path={tmp_path / 's.sqlite'}", "logger=none", "probe.limit=2")
    ctx = ProbeContext.from_config(cfg)
    log: list[str] = []
    ctx.open_logger(cfg.logger, tmp_path / "run")
    real = ctx.verifier.close

    def verifier_close():
        real()
        _Closed(log, "verifier", fail=True)()

    ctx._owned = [ctx.store.close, verifier_close, _Closed(log, "logger", fail=True)]
    with pytest.raises(RuntimeError, match="logger failed to close"):
        ctx.close()
    # The first failure (the logger's) is raised, after the verifier and the store were closed all
    # the same (the verifier's own failure did not stop the store's close either).
    assert log == ["logger", "verifier"]
    with pytest.raises(sqlite3.ProgrammingError):
        ctx.store.counts_done("any")
    ctx.close()  # closing again closes nothing twice


def test_a_context_from_parts_and_a_subtask_view_own_nothing(tmp_path):
    cfg = _cfg("probe", f"store.path={tmp_path / 's.sqlite'}", "logger=none", "probe.limit=3")
    with ProbeContext.from_config(cfg) as ctx:
        sub = ctx.with_task(ctx.task.with_problems(ctx.task.problems[:1]))
        assert (sub.store, sub.verifier, sub.make_sampler) == (ctx.store, ctx.verifier, ctx.make_sampler)
        sub.close()
        ProbeContext(ctx.task, ctx.store, ctx.verifier).close()
        assert ctx.store.counts_done("any") == {}  # still open
    with pytest.raises(sqlite3.ProgrammingError):
        ctx.store.counts_done("any")


def test_a_verifier_that_fails_to_build_leaves_no_store_open(tmp_path, monkeypatch):
    import boundlab.probe.context as context

    opened = []
    real = context.Store

    def store(path):
        opened.append(real(path))
        return opened[-1]

    def broken(*a, **k):
        raise TypeError("code verifier: unknown option(s)")

    monkeypatch.setattr(context, "Store", store)
    monkeypatch.setattr(context, "open_verifier", broken)
    cfg = _cfg("probe", f"store.path={tmp_path / 's.sqlite'}", "logger=none", "probe.limit=1")
    with pytest.raises(TypeError):
        ProbeContext.from_config(cfg)
    with pytest.raises(sqlite3.ProgrammingError):
        opened[0].counts_done("any")


def test_open_model_needs_a_sampler_config(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    try:
        with pytest.raises(ValueError, match="no sampler config"):
            ProbeContext(None, store, None).open_model(None)
    finally:
        store.close()
