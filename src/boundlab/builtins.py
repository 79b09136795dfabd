"""Every built-in plug-in, in one explicit list: importing this module registers them all.

The registries (`boundlab.tasks.TASKS`, `boundlab.verify.VERIFIERS`, `boundlab.sampling.SAMPLERS`,
`boundlab.algos.ALGOS`) import none of their entries: an entry registers itself when its module is
imported, and the entry layer (train.py, probe.py, report.py through boundlab.apps and
boundlab.resume) imports this list. So the core never imports the toy world, and a plug-in that fails
to import fails here, with its traceback, instead of silently missing from its registry.

Optional GPU-only engines (vLLM) are registered by name without importing them (see
boundlab.sampling): used without the package, they fail in one line at validation.

Adding a built-in: one import line below (and the plug-in's conf/<group>/<name>.yaml).
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

# Tasks.
import boundlab.tasks.benchmarks  # noqa: F401 - math500, math500_int, gsm8k, minerva, olympiadbench, amc23
import boundlab.tasks.code  # noqa: F401 - humaneval, code_jsonl
import boundlab.tasks.evalplus  # noqa: F401 - humaneval_plus, mbpp_plus (local release files)
import boundlab.tasks.livecodebench  # noqa: F401 - livecodebench (local release files)
import boundlab.tasks.jsonl  # noqa: F401 - jsonl (any local file)
import boundlab.tasks.mmath  # noqa: F401 - aime24, aime25
import boundlab.tasks.visual  # noqa: F401 - mathvista, mathvision (local JSONL + image folder)
# Verifiers.
import boundlab.verify.code  # noqa: F401 - code (sandboxed unit tests)
import boundlab.verify.exact  # noqa: F401 - exact
import boundlab.verify.math  # noqa: F401 - math (math-verify)
import boundlab.verify.typed  # noqa: F401 - typed (choices, numbers with precision; math-verify for the rest)
# Samplers: hf and vllm register inside boundlab.sampling (the engines load lazily).
import boundlab.sampling  # noqa: F401
# Algorithms: their one list is `_builtins()` in boundlab.algos, which registers them when it is
# imported. It is not imported here: it brings in TRL and transformers' Trainer (about 4 s, and a W&B
# notice on stdout), which probe.py and report.py never need; train.py's path imports it (the
# algorithm check in boundlab.validate, then boundlab.training.app).
# The toy worlds: their tasks, their verifiers and their shipped models, which the
# ${toy_model:...} config resolver (boundlab.worlds.common.paths) resolves by name.
import boundlab.worlds.toyworld.paths  # noqa: F401 - ${toy_model:base}, ${toy_model:teacher}
import boundlab.worlds.toyworld.task  # noqa: F401 - toy_arith
import boundlab.worlds.toyworld.verifier  # noqa: F401 - toy
import boundlab.worlds.toyworld2.paths  # noqa: F401 - ${toy_model:base2}, ${toy_model:teacher2}
import boundlab.worlds.toyworld2.task  # noqa: F401 - toy2
import boundlab.worlds.toyworld2.verifier  # noqa: F401 - toy2
import boundlab.worlds.toyvision.paths  # noqa: F401 - ${toy_model:vlm}
import boundlab.worlds.toyvision.task  # noqa: F401 - toy_vision (toyworld2's verifier)
from boundlab.report.schema import ReportMain
from boundlab.worlds.common.paths import register_resolver

register_resolver()
# report.py's schema lives beside the report code, above the config layer.
ConfigStore.instance().store(name="report_schema", node=ReportMain)
