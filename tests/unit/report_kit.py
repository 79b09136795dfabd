"""What the report tests on synthetic stores share: the first 40 problems of the toy world's test
split (10 tagged hard=True, the breakdown field), a store whose answers are known (problem -> number
correct of N per probe key), run dirs holding just probes.jsonl and run_info.json, and the report's
config pointed at them."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Callable, Mapping, Union

from boundlab.probe.store import SampleRow, Store

IDS = [f"toy-test-{i:04d}" for i in range(40)]
N = 8
Correct = Union[Callable[[str], int], Mapping[str, int]]


def toy_hard() -> set[str]:
    """The problems of IDS the toy task tags hard."""
    from types import SimpleNamespace

    import boundlab.builtins  # noqa: F401  (registers the toy task)
    from boundlab.tasks import build_task

    t = build_task(SimpleNamespace(name="toy_arith", path=None, split="test", template=None, chat=None,
                                   system=None, verifier=None))
    return {p.problem_id for p in t.problems if p.problem_id in IDS and p.meta["hard"]}


def synthetic_store(path: Path, correct: Mapping[str, Correct]) -> None:
    """One probe per key, N samples on every problem of IDS, the first `correct[key][pid]` right."""
    store = Store(path)
    for key, c in correct.items():
        c_of = c if callable(c) else c.__getitem__
        store.ensure_probe(key, f"fp-{key}", "task-fp", {"seed": 0}, key, "toy_arith")
        store.add_samples(key, [SampleRow(pid, i, f"{key} {pid} #{i}", None, i < c_of(pid), None, "ok", 3)
                                for pid in IDS for i in range(N)])
    store.close()


def run_dir(path: Path, algo: str, rows: list[dict]) -> Path:
    """A run dir with its probes.jsonl rows and run_info.json naming its algorithm."""
    path.mkdir(parents=True)
    (path / "probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "run_info.json").write_text(json.dumps({"algo": algo}))
    return path


def read_csv(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def report_cfg(tmp_path: Path, base: Path, runs: list[Path]):
    """ReportMain for `runs` against `base`, the store at tmp_path/store.sqlite, no logger, 200
    bootstrap resamples, no perplexity view, the report under tmp_path/report."""
    from omegaconf import OmegaConf

    from boundlab.config import register_configs
    from boundlab.report.schema import ReportMain

    register_configs()
    cfg = OmegaConf.structured(ReportMain)
    cfg.out = str(tmp_path / "report")
    cfg.store.path = str(tmp_path / "store.sqlite")
    cfg.logger.name = "none"
    cfg.bootstrap_iters = 200
    cfg.base = str(base)
    cfg.runs = [str(r) for r in runs]
    cfg.perplexity.enabled = False
    return cfg
