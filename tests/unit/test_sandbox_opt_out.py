"""The confinement opt-out is `sandbox.allow_weaker` (issue 35), the one key: it reaches every verifier
that runs model-written code; the older `verify.code.allow_weaker` is refused on the command line in
one line naming it, and a run dir saved with the old key resumes (and is watched) with its value moved
there, so there is never a second source of truth."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

import boundlab.builtins  # noqa: F401 - every built-in verifier
from boundlab.config import TrainMain, VerifyConfig, lift_flat_option_keys, register_configs
from boundlab.probe.context import ProbeContext, open_verifier
from boundlab.sandbox import SandboxUnavailable, seccomp

ROOT = Path(__file__).resolve().parents[2]
register_configs()
NO_BWRAP = {"bwrap": "/nonexistent/bwrap"}  # the same pool on any machine: weak isolation, opted into
pytestmark = pytest.mark.filterwarnings("ignore:.*WEAK ISOLATION", "ignore:.*WITHOUT SECCOMP")


@pytest.fixture
def no_libseccomp(monkeypatch):
    def missing(machine=None):
        raise seccomp.SeccompUnavailable("libseccomp is not installed (simulated)")

    monkeypatch.setattr(seccomp, "deny_list_bpf", missing)


def _verify(**code):
    return OmegaConf.merge(OmegaConf.structured(VerifyConfig), {"code": {"allow_weak_isolation": True, **code}})


def _compose(config_name, overrides):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name=config_name, overrides=overrides)


@pytest.mark.parametrize("config_name", ["probe", "train"])
def test_the_issues_name_composes_and_defaults_off(config_name):
    assert _compose(config_name, []).sandbox.allow_weaker is False
    assert _compose(config_name, ["sandbox.allow_weaker=true"]).sandbox.allow_weaker is True


def test_the_opt_out_reaches_the_code_verifier(no_libseccomp):
    with pytest.raises(SandboxUnavailable) as e:
        open_verifier("code", _verify(), None, {"allow_weaker": False}, **NO_BWRAP)
    assert str(e.value).endswith("Fix it, or set sandbox.allow_weaker=true to run without seccomp "
                                 "(logged in the run)")
    with open_verifier("code", _verify(), None, {"allow_weaker": True}, **NO_BWRAP) as v:
        assert v.pool.without == frozenset({"seccomp"})


def test_the_opt_out_is_not_in_the_probe_key():
    def settings(allow):
        with open_verifier("code", _verify(), None, {"allow_weaker": allow}, **NO_BWRAP) as v:
            return v.identity()

    assert settings(True) == settings(False)


def test_verifiers_that_run_no_code_never_get_it():
    with open_verifier("math", VerifyConfig(workers=1), None, {"allow_weaker": True}) as v:
        assert "allow_weaker" not in v.identity()["settings"]


def test_probe_config_to_verifier_through_the_probe_context(no_libseccomp, tmp_path):
    base = ["task=humaneval", "verify.code.allow_weak_isolation=true", f"store.path={tmp_path / 's.sqlite'}",
            "logger=none"]
    cfg = _compose("probe", base)
    with pytest.raises(SandboxUnavailable, match="set sandbox.allow_weaker=true"):
        ProbeContext.from_config(cfg, progress=False)
    cfg = _compose("probe", [*base, "sandbox.allow_weaker=true"])
    with ProbeContext.from_config(cfg, progress=False) as ctx:
        assert "seccomp" in ctx.verifier.pool.without


def test_the_old_key_on_the_command_line_is_one_line_naming_the_new_one(tmp_path):
    r = subprocess.run([sys.executable, "probe.py", "verify.code.allow_weaker=true",
                        f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert (r.returncode, r.stderr.strip()) == (
        2, "error: config key 'verify.code.allow_weaker' moved to 'sandbox.allow_weaker': write "
           "sandbox.allow_weaker=true")
    assert not (tmp_path / "run").exists()


def _saved_with_old_key(value):
    data = OmegaConf.to_container(OmegaConf.structured(TrainMain), resolve=False)
    del data["sandbox"]
    data["verify"]["code"]["allow_weaker"] = value
    return OmegaConf.create(data)


@pytest.mark.parametrize("value", [True, False])
def test_a_run_dir_saved_with_the_old_key_keeps_its_value_under_the_new_one(value, tmp_path):
    lifted = lift_flat_option_keys(_saved_with_old_key(value))
    assert lifted.sandbox.allow_weaker is value and "allow_weaker" not in lifted.verify.code
    typed = OmegaConf.merge(OmegaConf.structured(TrainMain), lifted)
    assert typed.sandbox.allow_weaker is value
    from omegaconf.errors import ConfigKeyError

    with pytest.raises(ConfigKeyError, match="allow_weaker"):  # the old key is no longer a setting
        OmegaConf.merge(OmegaConf.structured(TrainMain), _saved_with_old_key(value))
    # What resume reads (boundlab.resume.load_run_config) for such a run dir.
    from boundlab.resume import load_run_config

    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    OmegaConf.save(_saved_with_old_key(value), run / ".hydra" / "config.yaml")
    cfg, _ = load_run_config(run)
    assert cfg.sandbox.allow_weaker is value
