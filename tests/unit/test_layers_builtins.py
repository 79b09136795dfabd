"""Registries without inverted imports: the core registries import none of their entries,
boundlab.builtins registers every built-in, a failing plug-in import surfaces, and the toy world is
imported by the entry layer only. Each case runs in a fresh interpreter (imports are global)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _py(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)


def test_core_registries_import_no_entries_and_not_the_toy_world():
    r = _py("import sys\n"
            "from boundlab.tasks import TASKS\nfrom boundlab.verify import VERIFIERS\n"
            "print(sorted(TASKS.names()), sorted(VERIFIERS.names()))\n"
            "import boundlab.config, boundlab.probe.runner, boundlab.boundary.tracker, boundlab.training.app\n"
            "print(any(m.startswith('boundlab.worlds.toyworld') for m in sys.modules))\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[] []", "False"]


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_builtins_registers_every_built_in():
    r = _py("import boundlab.builtins\n"
            "from boundlab.tasks import TASKS\nfrom boundlab.verify import VERIFIERS\n"
            "from boundlab.sampling import SAMPLERS\nfrom boundlab.algos import ALGOS\n"
            "from omegaconf import OmegaConf\n"
            "print(sorted(VERIFIERS.names()))\n"
            "print({'toy_arith', 'toy2', 'jsonl', 'math500', 'humaneval', 'mathvista', 'mathvision'} <= set(TASKS.names()))\n"
            "print(sorted(SAMPLERS.names()), 'grpo' in ALGOS.names())\n"
            "print(OmegaConf.has_resolver('toy_model'))\n")
    assert r.returncode == 0, r.stderr
    # (the last 4 lines: importing TRL may print a W&B line first)
    assert r.stdout.splitlines()[-4:] == ["['code', 'exact', 'math', 'toy', 'toy2', 'typed']", "True",
                                          "['hf', 'power', 'vllm'] True", "True"]


def test_a_plug_in_that_fails_to_import_fails_loudly():
    # sys.modules[name] = None makes `import name` raise ImportError, as a broken plug-in would.
    r = _py("import sys\nsys.modules['boundlab.tasks.code'] = None\nimport boundlab.builtins\n")
    assert r.returncode == 1
    assert "ModuleNotFoundError: import of boundlab.tasks.code halted; None in sys.modules" in r.stderr


def test_the_tracker_is_built_in_one_place():
    # Training and the watcher build it through boundlab.boundary.tracker.build_tracker(ProbeSpec).
    users = [p.relative_to(ROOT).as_posix() for p in (ROOT / "src").rglob("*.py")
             if "BoundaryTracker(" in p.read_text()]
    assert users == ["src/boundlab/boundary/tracker.py"]
    for app in ("src/boundlab/training/app.py", "src/boundlab/boundary/watch.py"):
        text = (ROOT / app).read_text()
        assert "build_tracker(" in text and "ProbeSpec.from_config(cfg.probe)" in text, app


def test_toy_model_names_resolve_through_the_worlds_registry():
    # Each world registers its shipped models when boundlab.builtins imports it; the names are those
    # of conf/model/toy*.yaml and of saved runs' configs, so they never change.
    r = _py("import sys\nimport boundlab.worlds.toyworld.paths as p1\n"
            "print(sorted(m for m in sys.modules if m.startswith(('boundlab.worlds.toyworld2', 'boundlab.worlds.toyvision'))))\n"
            "import boundlab.builtins\nfrom omegaconf import OmegaConf\n"
            "import boundlab.worlds.toyworld2.paths as p2, boundlab.worlds.toyvision.paths as pv\n"
            "from boundlab.worlds.common.paths import MODELS\nprint(MODELS.names())\n"
            "c = OmegaConf.create({n: '${toy_model:' + n + '}' for n in MODELS.names()})\n"
            "want = {'base': p1.base_model_dir(), 'teacher': p1.teacher_model_dir(),\n"
            "        'base2': p2.base_model_dir(), 'teacher2': p2.teacher_model_dir(), 'vlm': pv.base_model_dir()}\n"
            "print(OmegaConf.to_container(c, resolve=True) == {k: str(v) for k, v in want.items()})\n"
            "try:\n    OmegaConf.create({'x': '${toy_model:nope}'}).x\n"
            "except Exception as e:\n    print('unknown toy model' in str(e), 'known: base, base2' in str(e))\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[]", "['base', 'base2', 'teacher', 'teacher2', 'vlm']", "True",
                                     "True True"]
    used = {m for f in (ROOT / "conf").rglob("*.yaml")
            for m in re.findall(r"\$\{toy_model:(\w+)\}", f.read_text())}
    assert used == {"base", "teacher", "base2", "teacher2", "vlm"}
