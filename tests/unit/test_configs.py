"""Every config composes; a wrong key or type fails at start with a message naming it."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from boundlab.config import check_keys, register_configs

CONF = Path(__file__).resolve().parents[2] / "conf"
PRIMARY = sorted(p.stem for p in CONF.glob("*.yaml"))
register_configs()


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def _compose(config_name: str, overrides=()):
    """Compose as a run would: with the hydra node set, so ${hydra:...} interpolations resolve."""
    from hydra.core.hydra_config import HydraConfig

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name=config_name, overrides=list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    return cfg


def _resolve(cfg):
    """Resolve every interpolation outside the hydra node (??? marks required user input)."""
    for key in cfg:
        if key != "hydra":
            node = cfg[key]
            if OmegaConf.is_config(node):
                OmegaConf.to_container(node, resolve=True, throw_on_missing=False)


def group_cases():
    cases = []
    for primary in PRIMARY:
        cfg = _compose(primary)
        for group in ("model", "task", "probe", "sampler", "logger", "algo", "backend", "rollout"):
            if group in cfg:
                cases += [(primary, group, opt) for opt in options(group)]
        # Override-only groups (`# @package _global_`) of the training config.
        if "algo" in cfg:
            cases += [(primary, group, opt) for group in ("debug", "experiment")
                      for opt in options(group)]
    return cases


def test_primary_configs_exist():
    assert "probe" in PRIMARY


@pytest.mark.parametrize("primary,group,option", group_cases())
def test_every_group_option_composes(primary, group, option):
    cfg = _compose(primary, [f"{group}={option}"])
    check_keys(cfg)
    # A sweep: every value of every swept parameter composes too.
    params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
    for key, values in params.items():
        for value in str(values).split(","):
            swept = _compose(primary, [f"{group}={option}", f"{key}={value}"])
            check_keys(swept)
            _resolve(swept)
    _resolve(cfg)


@pytest.mark.parametrize("override,needle", [
    ("probe.nn=3", "nn"),
    ("+model.colour=red", "colour"),
    ("probe.n=many", "n"),
    ("sampler.batch_size=1.5", "batch_size"),
])
def test_wrong_key_or_type_fails_naming_it(override, needle):
    with pytest.raises(Exception) as e:
        check_keys(_compose("probe", [override]))
    assert needle in str(e.value)


def _schema_fields(text: str) -> list[tuple[str, str, bool]]:
    """(class, field, has a comment line directly above it) for every field of every dataclass."""
    import ast

    lines = text.splitlines()
    out = []
    for node in ast.parse(text).body:
        if not isinstance(node, ast.ClassDef) or not any(
                getattr(d, "id", None) == "dataclass" or getattr(getattr(d, "func", None), "id", None)
                == "dataclass" for d in node.decorator_list):
            continue
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                out.append((node.name, st.target.id, lines[st.lineno - 2].strip().startswith("#")))
    return out


def _schema_text() -> str:
    """The schema modules of the config package, one after the other."""
    pkg = Path(__file__).resolve().parents[2] / "src/boundlab/config"
    return "\n".join((pkg / f).read_text() for f in ("probing.py", "training.py"))


def test_comments_above_every_schema_field():
    # Style rule: every config field says what it does (in the schema, where it is typed), each in
    # a comment line directly above the field.
    text = _schema_text()
    fields = _schema_fields(text)
    assert len(fields) > 100  # the parse found the schemas, not nothing
    missing = [f"{c}.{f}" for c, f, ok in fields if not ok]
    assert missing == [], f"config schema fields with no comment above them: {missing}"


def test_comment_check_flags_every_field_when_comments_are_stripped():
    # The check above must be able to fail: with every comment line removed, every field is flagged.
    text = _schema_text()
    stripped = "\n".join(ln for ln in text.splitlines() if not ln.strip().startswith("#"))
    fields = _schema_fields(stripped)
    assert len(fields) == len(_schema_fields(text))
    assert [f for f in fields if f[2]] == []


@pytest.mark.parametrize("primary", PRIMARY)
def test_run_dir_resolves_without_overrides(primary):
    # The quick start runs without hydra.run.dir: the default run dir must resolve to a path.
    cfg = _compose(primary)
    run_dir = OmegaConf.select(cfg, "hydra.run.dir")
    assert isinstance(run_dir, str) and run_dir.startswith("outputs/"), run_dir


def test_resume_sets_the_run_dir():
    cfg = _compose("train", ["resume=/tmp/some/run"])
    assert OmegaConf.select(cfg, "hydra.run.dir") == "/tmp/some/run"


@pytest.mark.parametrize("model,max_new", [("qwen2.5_7b", 16384), ("qwen2.5_math_7b", 3072),
                                            ("llama3.1_8b", 16384)])
def test_paper_model_presets_carry_the_papers_prompt_and_sampling(model, max_new):
    """experiment=paper_<model>: the model, the chat-wrapped qwen-boxed prompt with the paper's system
    turn, and probe=paper (T 0.6, top_p 0.95, n 256), in train.py and probe.py alike."""
    for primary, ov in (("train", f"experiment=paper_{model}"), ("probe", f"+experiment=paper_{model}")):
        cfg = _compose(primary, [ov])
        assert cfg.model.name == model
        assert (cfg.probe.n, cfg.probe.temperature, cfg.probe.top_p) == (256, 0.6, 0.95)
        assert cfg.probe.max_new_tokens == max_new
        assert cfg.task.chat is True and cfg.task.system == "You are a helpful assistant."


def test_paper_vlm_preset_carries_the_model_prompt_and_sampling():
    """experiment=paper_qwen2.5_vl_7b with task=mathvista|mathvision: Qwen2.5-VL-7B-Instruct, the
    chat-wrapped EasyR1 math prompt with the system turn, probe=paper, the sampler on CUDA; composed
    only (no weights load; it is validated on a GPU machine, refused elsewhere: test_validation)."""
    from boundlab.tasks.visual import EASYR1_MATH

    for task in ("mathvista", "mathvision"):
        for primary, ov in (("train", "experiment=paper_qwen2.5_vl_7b"),
                            ("probe", "+experiment=paper_qwen2.5_vl_7b")):
            cfg = _compose(primary, [ov, f"task={task}"])
            check_keys(cfg)
            _resolve(cfg)
            assert (cfg.model.name, cfg.model.path) == ("qwen2.5_vl_7b", "Qwen/Qwen2.5-VL-7B-Instruct")
            assert cfg.model.dtype == "bfloat16" and cfg.model.allow_download is False
            assert cfg.model.vision is True  # loaded with its processor, which places the images
            assert (cfg.probe.n, cfg.probe.temperature, cfg.probe.top_p) == (256, 0.6, 0.95)
            assert cfg.probe.max_new_tokens == 16384 and cfg.sampler.device == "cuda"
            assert cfg.task.name == task and cfg.task.chat is True
            assert cfg.task.system == "You are a helpful assistant."
            assert cfg.task.template is None  # the task's own prompt: EasyR1's math format
    assert EASYR1_MATH.startswith("{question} You FIRST think") and EASYR1_MATH.endswith("\\boxed{}.")
