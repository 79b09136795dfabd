"""Typed per-verifier and per-sampler config (issue 12, item 5): each verifier is built from its own
`verify.<name>` block plus the shared `verify.workers`, the vLLM sampler from `sampler.vllm`; none
swallows an option it does not know; the old flat keys are refused on the command line naming the
new one, and lifted into their blocks when a run dir saved before the change is resumed or watched."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import boundlab.builtins  # noqa: F401 - every built-in verifier and sampler
from boundlab.config import (MOVED_KEYS, ProbeMain, SamplerConfig, TrainMain, VerifyConfig,
                             lift_flat_option_keys)
from boundlab.verify import build_verifier, verifier_options

ROOT = Path(__file__).resolve().parents[2]


def _verify(**blocks):
    """The default `verify` config with some block values changed: _verify(math={"deadline_s": 5})."""
    return OmegaConf.merge(OmegaConf.structured(VerifyConfig), blocks)


def _settings(name, cfg):
    v = build_verifier(name, **verifier_options(name, cfg))
    try:
        return v.identity()["settings"]
    finally:
        v.close()


# -- each verifier gets its own block (plus the shared keys it takes), nothing else --------------
def test_each_verifier_gets_only_its_block():
    cfg = _verify(workers=3)
    assert verifier_options("math", cfg) == {"workers": 3, "deadline_s": 2.0, "max_answer_chars": 512,
                                             "extraction": "lenient"}
    assert verifier_options("code", cfg) == {"workers": 3, "timeout_s": 3.0, "memory_mb": 1024,
                                             "allow_weak_isolation": False}
    # No block and no `workers` parameter: nothing at all.
    assert verifier_options("exact", cfg) == {}
    assert verifier_options("toy", cfg) == {}


@pytest.mark.parametrize("name,option", [("math", "timeout_s"), ("math", "memory_mb"),
                                         ("exact", "workers"), ("toy", "extraction")])
def test_no_verifier_swallows_an_option_it_does_not_know(name, option):
    with pytest.raises(TypeError, match=option):
        build_verifier(name, **{option: 1})


def test_code_verifier_refuses_a_math_option():
    with pytest.raises(TypeError, match=r"code verifier: unknown option\(s\) \['extraction'\]"):
        build_verifier("code", extraction="boxed", allow_weak_isolation=True)


# -- identities: math holds only math settings, code only code settings -------------------------
def test_math_identity_has_no_code_settings_and_ignores_the_code_block():
    plain = _settings("math", _verify())
    assert plain == {"deadline_s": 2.0, "extraction": "lenient", "max_answer_chars": 512}
    changed = _settings("math", _verify(workers=1, code={"timeout_s": 9.0, "memory_mb": 64,
                                                         "allow_weak_isolation": True}))
    assert changed == plain
    assert _settings("math", _verify(math={"extraction": "boxed"}))["extraction"] == "boxed"


def test_code_identity_has_no_math_settings_and_ignores_the_math_block():
    weak = {"allow_weak_isolation": True}  # no bubblewrap needed to build it here
    plain = _settings("code", _verify(code=weak))
    assert plain == {"allow_weak_isolation": True, "dedupe": True, "memory_mb": 1024, "timeout_s": 3.0}
    changed = _settings("code", _verify(workers=1, code=weak,
                                        math={"deadline_s": 9.0, "max_answer_chars": 3, "extraction": "boxed"}))
    assert changed == plain
    assert _settings("code", _verify(code={**weak, "memory_mb": 64}))["memory_mb"] == 64


# -- samplers ------------------------------------------------------------------------------------
class _RecordingLLM:
    seen: list[dict] = []

    def __init__(self, model: str, **kw):
        self.seen.append({"model": model, **kw})


def test_vllm_sampler_gets_its_block_and_refuses_what_it_does_not_know(tiny_lm, monkeypatch):
    mod = types.ModuleType("vllm")
    mod.LLM = _RecordingLLM
    monkeypatch.setitem(sys.modules, "vllm", mod)
    _RecordingLLM.seen = []
    from boundlab.sampling import build_sampler
    from boundlab.sampling.vllm import VLLMSampler

    model_cfg = OmegaConf.create(dict(name="tiny", path=str(tiny_lm), gguf_package=None, gguf_file=None,
                                      cache_dir="/nonexistent", dtype="float32", allow_download=False,
                                      trust_remote_code=False))
    scfg = OmegaConf.merge(OmegaConf.structured(SamplerConfig),
                           {"name": "vllm", "device": "cpu",
                            "vllm": {"gpu_memory_utilization": 0.5, "tensor_parallel_size": 2}})
    build_sampler(model_cfg, scfg).close()
    assert _RecordingLLM.seen == [{"model": str(tiny_lm), "dtype": "float32", "gpu_memory_utilization": 0.5,
                                   "tensor_parallel_size": 2, "trust_remote_code": False}]
    # The shared knobs (batch_size, device) are not vLLM options: passing one is a bug, not a no-op.
    with pytest.raises(TypeError, match="batch_size"):
        VLLMSampler(model_cfg, batch_size=4)


def test_hf_sampler_schema_has_no_vllm_knobs_at_the_top():
    top = set(OmegaConf.structured(SamplerConfig))
    assert top == {"name", "batch_size", "device", "torch_threads", "hf", "vllm", "power"}
    assert set(OmegaConf.structured(SamplerConfig).hf) == {"engine", "entropy"}
    assert set(OmegaConf.structured(SamplerConfig).vllm) == {"gpu_memory_utilization", "tensor_parallel_size"}
    assert set(OmegaConf.structured(SamplerConfig).power) == {"alpha", "mcmc_steps"}


# -- old flat keys on the command line: one line, exit 2, naming the new key ---------------------
def test_every_moved_key_is_refused_naming_its_new_home():
    from boundlab.cli import unknown_key

    for old, new in MOVED_KEYS.items():
        assert unknown_key([f"{old}=1"], ROOT / "conf", ProbeMain) == \
            f"config key '{old}' moved to '{new}': write {new}=1"
    # The new keys pass.
    assert unknown_key([f"{new}=1" for new in MOVED_KEYS.values()], ROOT / "conf", ProbeMain) is None


@pytest.mark.parametrize("script,arg,line", [
    ("probe.py", "verify.deadline_s=3",
     "error: config key 'verify.deadline_s' moved to 'verify.math.deadline_s': write verify.math.deadline_s=3"),
    ("probe.py", "verify.extraction=boxed",
     "error: config key 'verify.extraction' moved to 'verify.math.extraction': write verify.math.extraction=boxed"),
    ("train.py", "sampler.gpu_memory_utilization=0.9",
     "error: config key 'sampler.gpu_memory_utilization' moved to 'sampler.vllm.gpu_memory_utilization': "
     "write sampler.vllm.gpu_memory_utilization=0.9"),
    ("probe.py", "task.limit=3", "error: config key 'task.limit' moved to 'probe.limit': write probe.limit=3"),
])
def test_old_flat_key_on_the_command_line_is_one_line_exit_2(script, arg, line, tmp_path):
    r = subprocess.run([sys.executable, script, arg, f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert (r.returncode, r.stderr.strip()) == (2, line)
    assert not (tmp_path / "run").exists()  # refused before Hydra composed anything


# -- a run dir saved before the blocks: lifted on resume and in the watcher ----------------------
_OLD_VALUES = {"verify": {"deadline_s": 3.5, "max_answer_chars": 64, "extraction": "boxed",
                          "timeout_s": 5.0, "memory_mb": 256, "allow_weak_isolation": True},
               "sampler": {"gpu_memory_utilization": 0.6, "tensor_parallel_size": 2}}


def _old_saved_config():
    """A train config as a run dir saved before this change holds it: flat verify/sampler keys."""
    data = OmegaConf.to_container(OmegaConf.structured(TrainMain), resolve=False)
    for group, values in _OLD_VALUES.items():
        for block in ("math", "code", "vllm"):
            data[group].pop(block, None)
        data[group].update(values)
    return OmegaConf.create(data)


def _assert_lifted(cfg):
    v, s = cfg.verify, cfg.sampler
    assert (v.math.deadline_s, v.math.max_answer_chars, v.math.extraction) == (3.5, 64, "boxed")
    assert (v.code.timeout_s, v.code.memory_mb, v.code.allow_weak_isolation) == (5.0, 256, True)
    assert (s.vllm.gpu_memory_utilization, s.vllm.tensor_parallel_size) == (0.6, 2)
    assert not {"deadline_s", "max_answer_chars", "extraction", "timeout_s", "memory_mb",
                "allow_weak_isolation"} & set(v)
    assert not {"gpu_memory_utilization", "tensor_parallel_size"} & set(s)


def test_lift_moves_flat_keys_into_their_blocks():
    old = _old_saved_config()
    lifted = lift_flat_option_keys(old)
    _assert_lifted(lifted)
    # The typed schema accepts the lifted config (it would refuse the flat one).
    _assert_lifted(OmegaConf.merge(OmegaConf.structured(TrainMain), lifted))
    from omegaconf.errors import ConfigKeyError

    with pytest.raises(ConfigKeyError, match="Key 'gpu_memory_utilization' not in 'SamplerConfig'"):
        OmegaConf.merge(OmegaConf.structured(TrainMain), old)
    # A config already in blocks comes back as it is.
    new = OmegaConf.structured(TrainMain)
    assert lift_flat_option_keys(new) is new


@pytest.mark.parametrize("task_limit,probe_limit,probed", [
    (None, None, None), (None, 8, 8), (5, None, 5), (5, 8, 5), (8, 5, 5)])
def test_a_saved_task_limit_joins_probe_limit(task_limit, probe_limit, probed):
    # task.limit and probe.limit both cut the probed task to its first N problems: a run saved with
    # either (or both: the smaller was probed) probes the same set after the lift.
    data = OmegaConf.to_container(OmegaConf.structured(TrainMain), resolve=False)
    data["task"]["limit"], data["probe"]["limit"] = task_limit, probe_limit
    lifted = lift_flat_option_keys(OmegaConf.create(data))
    assert "limit" not in lifted.task and lifted.probe.limit == probed
    assert OmegaConf.merge(OmegaConf.structured(TrainMain), lifted).probe.limit == probed


def test_report_reads_a_run_dir_saved_with_task_limit(tmp_path):
    from boundlab.report.inputs import read_run

    data = OmegaConf.to_container(OmegaConf.structured(TrainMain), resolve=False)
    data["task"].update(name="toy2", limit=3)
    (tmp_path / "r" / ".hydra").mkdir(parents=True)
    OmegaConf.save(OmegaConf.create(data), tmp_path / "r" / ".hydra" / "config.yaml")
    (tmp_path / "r" / "probes.jsonl").write_text("")
    config = read_run(tmp_path / "r").config
    assert "limit" not in config.task and config.probe.limit == 3


def _old_run_dir(tmp_path):
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    OmegaConf.save(_old_saved_config(), run / ".hydra" / "config.yaml")
    (run / "run_info.json").write_text('{"wandb_run_id": null}')  # training has started
    return run


def test_resume_lifts_an_old_saved_config(tmp_path):
    from boundlab.resume import load_run_config

    cfg, _ = load_run_config(_old_run_dir(tmp_path))
    _assert_lifted(cfg)


def config_the_watcher_reads(run_dir, monkeypatch):
    """The config `probe.py watch=RUN_DIR` works with, taken at its first use (the watcher stops there)."""
    import boundlab.probe.spec as spec
    from boundlab.boundary.watch import watch

    seen = []

    class Stop(Exception):
        pass

    def load_task(cfg):  # the watcher's first use of the config after loading it
        seen.append(cfg)
        raise Stop

    monkeypatch.setattr(spec, "load_task", load_task)
    with pytest.raises(Stop):
        watch(run_dir)
    return seen[0]


def test_watcher_lifts_an_old_saved_config(tmp_path, monkeypatch):
    _assert_lifted(config_the_watcher_reads(_old_run_dir(tmp_path), monkeypatch))


def test_watcher_waits_for_training_to_name_its_wandb_run(tmp_path, monkeypatch, capsys):
    """Started beside train.py, the watcher must not read run_info.json before training writes it
    (it would log into a W&B run of its own): it waits, says so, and gives up at its timeout."""
    import boundlab.probe.spec as spec
    from boundlab.boundary.watch import watch

    run = _old_run_dir(tmp_path)
    (run / "run_info.json").unlink()
    monkeypatch.setattr(spec, "load_task", lambda cfg: pytest.fail("read the config before run_info.json"))
    with pytest.raises(TimeoutError, match="run_info.json"):
        watch(run, poll_s=0.05, timeout_s=0.3)
    assert "waiting for" in capsys.readouterr().out
