"""The layers contract in pyproject.toml ([tool.importlinter]) holds for src/boundlab, and it bites:
an upward import, even one inside a function, breaks it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lint(src: Path, config: Path) -> subprocess.CompletedProcess:
    # The shared environment's editable install may point at another checkout: lint this one.
    env = dict(os.environ, PYTHONPATH=str(src))
    exe = shutil.which("lint-imports") or "lint-imports"
    return subprocess.run([exe, "--config", str(config), "--no-cache"], cwd=src.parent, env=env,
                          capture_output=True, text=True, timeout=300)


def test_layers_contract_is_kept():
    r = _lint(ROOT / "src", ROOT / "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 kept, 0 broken" in r.stdout


def test_contract_lists_no_exceptions():
    text = (ROOT / "pyproject.toml").read_text()
    section = text[text.index("[tool.importlinter]"):]
    assert "ignore_imports" not in section and "unmatched_ignore" not in section


def test_a_lazy_upward_import_breaks_the_contract(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "boundlab", src / "boundlab",
                    ignore=shutil.ignore_patterns("__pycache__", "assets", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    reg = src / "boundlab" / "registry.py"
    reg.write_text(reg.read_text() + "\n\ndef _upward():\n    from boundlab.toyworld import paths  # noqa\n")
    r = _lint(src, tmp_path / "pyproject.toml")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "boundlab.registry is not allowed to import boundlab.toyworld" in r.stdout
    assert "0 kept, 1 broken" in r.stdout
