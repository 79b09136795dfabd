"""The import contracts in pyproject.toml ([tool.importlinter]) hold for src/boundlab, and they bite:
an upward import, even one inside a function, breaks the layers; the core importing a world, or one
world importing another outside the shared kit, breaks them too."""

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
    assert "6 kept, 0 broken" in r.stdout


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
    reg.write_text(reg.read_text() + "\n\ndef _upward():\n    from boundlab.worlds.toyworld import paths  # noqa\n")
    r = _lint(src, tmp_path / "pyproject.toml")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "boundlab.registry is not allowed to import boundlab.worlds:" in r.stdout
    assert "The core imports no world BROKEN" in r.stdout
    # (and through the registry every world, and the worlds' common part, reach the first world)
    assert "2 kept, 4 broken" in r.stdout


def _copy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "boundlab", src / "boundlab",
                    ignore=shutil.ignore_patterns("__pycache__", "assets", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return src


def test_a_lazy_import_between_worlds_breaks_the_contract(tmp_path):
    # The first world's paths once resolved the other worlds' models with lazy imports like this.
    src = _copy(tmp_path)
    paths = src / "boundlab" / "worlds" / "toyworld" / "paths.py"
    paths.write_text(paths.read_text() + "\n\ndef _vlm():\n    from boundlab.worlds.toyvision import paths  # noqa\n")
    r = _lint(src, tmp_path / "pyproject.toml")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "boundlab.worlds.toyworld is not allowed to import boundlab.worlds.toyvision" in r.stdout
    assert "The first toy world and the visual world are independent BROKEN" in r.stdout
    paths.write_text(paths.read_text().replace("from boundlab.worlds.toyvision import", "from boundlab.worlds.toyworld2 import"))
    r = _lint(src, tmp_path / "pyproject.toml")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "boundlab.worlds.toyworld is not allowed to import boundlab.worlds.toyworld2" in r.stdout
    assert "The worlds wing (see docs/contributing.md) BROKEN" in r.stdout
    assert "5 kept, 1 broken" in r.stdout


def test_the_core_imports_no_world_not_even_the_shared_kit(tmp_path):
    src = _copy(tmp_path)
    runner = src / "boundlab" / "probe" / "runner.py"
    runner.write_text(runner.read_text() + "\n\ndef _kit():\n    from boundlab.worlds.common import paths  # noqa\n")
    r = _lint(src, tmp_path / "pyproject.toml")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "The core imports no world BROKEN" in r.stdout
    assert "boundlab.probe.runner -> boundlab.worlds.common.paths" in r.stdout
