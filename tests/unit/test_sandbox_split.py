"""The worker ships as one script built from the files of `sandbox/_worker/` (see its docstring).

What the split must keep: every file goes into the script, each part loads using only the standard
library and the parts before it, the script fits in one exec argument, and inside a worker the
package is whole. Plus the judge's exit classification that two code paths now share.
"""

import ast
import signal
import sys
from pathlib import Path

import pytest

import boundlab.sandbox._worker as worker_pkg
from boundlab.sandbox import launch
from boundlab.sandbox._worker.judge import Judge

WORKER_DIR = Path(worker_pkg.__file__).parent


def _imports(part):
    """(level, module) for every import in the part, including those inside functions."""
    tree = ast.parse((WORKER_DIR / f"{part}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name
        elif isinstance(node, ast.ImportFrom):
            yield node.level, node.module


def test_every_worker_file_is_shipped_and_init_last():
    assert sorted(launch.WORKER_PARTS) == sorted(p.stem for p in WORKER_DIR.glob("*.py"))
    assert len(set(launch.WORKER_PARTS)) == len(launch.WORKER_PARTS)
    assert launch.WORKER_PARTS[-1] == "__init__"


def test_each_part_imports_only_the_standard_library_and_parts_loaded_before_it():
    for i, part in enumerate(launch.WORKER_PARTS):
        before = set(launch.WORKER_PARTS[:i])
        for level, module in _imports(part):
            if level:
                assert level == 1 and module in before, \
                    f"{part}.py imports {'.' * level}{module}, not a part loaded before it"
            else:
                assert module.split(".")[0] in sys.stdlib_module_names, \
                    f"{part}.py imports {module}, which is not in the standard library"


def test_the_script_holds_every_part_and_fits_in_one_exec_argument():
    script = launch.worker_script()
    compile(script, "<worker script>", "exec")
    assert len(script.encode()) < launch.MAX_SCRIPT_BYTES
    for part in launch.WORKER_PARTS:
        assert repr((WORKER_DIR / f"{part}.py").read_text(encoding="utf-8")) in script


def test_an_oversized_script_is_refused_at_start(monkeypatch):
    size = len(launch.worker_script().encode())
    monkeypatch.setattr(launch, "MAX_SCRIPT_BYTES", size)
    with pytest.raises(RuntimeError) as e:
        launch.worker_script()
    assert str(e.value) == (f"the sandbox worker script is {size} bytes; one exec argument must "
                            f"stay under {size}")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_inside_a_worker_the_package_is_built_from_every_part():
    from boundlab.sandbox import FunctionJob, SandboxPool

    program = ("import sys\n"
               "def f():\n"
               "    return sorted(m for m in sys.modules if m.split('.')[0] == '_worker')\n")
    want = sorted(["_worker"] + [f"_worker.{p}" for p in launch.WORKER_PARTS if p != "__init__"])
    # weak mode (no bubblewrap): the same script, startable on any machine
    with SandboxPool(bwrap="/nonexistent/bwrap", allow_weak_isolation=True, workers=1) as pool:
        r = pool.run(FunctionJob(program, f"assert f() == {want!r}", "f"))
        bad = pool.run(FunctionJob(program, f"assert f() == {want[:-1]!r}", "f"))
    assert (r.outcome, bad.outcome) == ("passed", "failed"), (r, bad)


@pytest.mark.parametrize("report,timeout,want", [
    ({"code": -signal.SIGKILL, "cpu_s": 2.96}, 2.0, ("timeout", "cpu limit")),  # 3 s RLIMIT_CPU
    ({"code": -signal.SIGKILL, "cpu_s": 2.94}, 2.0, ("memory", "killed (out of memory)")),
    ({"code": -signal.SIGKILL, "cpu_s": 3.5, "killed": True}, 2.5,
     ("runtime_error", "killed by signal SIGKILL")),  # the judge's own kill is not the limit
    ({"code": -signal.SIGXCPU, "cpu_s": 3.0}, 2.0, ("timeout", "cpu limit")),
    ({"code": 0, "timed_out": True}, 2.0, ("timeout", "wall-clock limit")),
    ({"code": 3}, 2.0, ("runtime_error", "exited with code 3 before the tests finished")),
])
def test_exit_classification(report, timeout, want):
    assert Judge({})._classify_exit(report, {"timeout": timeout}) == want
