"""Bad input ends in one line that names the key, file (and line) or path, and what to do.

The CLI side (exit code 2, the line on stderr, nothing loaded) is tests/integration/test_bad_input.py;
here each check is exercised directly, including the ones that cannot be met for real on a test
machine (a read-only store as root, a full disk during a checkpoint save).
"""

from __future__ import annotations

import errno
import json
import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from boundlab.cli import unknown_choice
from boundlab.config import ConfigError, register_configs
from boundlab.errors import DiskFull, ModelFileError, StoreError, no_space_left
from boundlab.probe.store import SampleRow, Store
from boundlab.tasks import build_task
from boundlab.tasks.base import Problem, Task
from boundlab.tasks.jsonl import DataError, iter_jsonl, load_jsonl_problems
from boundlab.validate import validate

CONF = Path(__file__).resolve().parents[2] / "conf"
register_configs()


def _compose(primary: str, overrides=()):
    """Compose as a run would: the hydra node set (so ${hydra:...} interpolations, such as an
    experiment's logger.group, resolve in this test alone, not only after another test set it),
    then dropped from the config the validator sees."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name=primary, overrides=list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def _refused(primary: str, overrides) -> str:
    with pytest.raises(ConfigError) as e:
        validate(_compose(primary, overrides))
    return str(e.value)


# -- value ranges -------------------------------------------------------------------------------

RANGE_CASES = [
    ("probe", "probe.n=0", "probe.n=0: must be >= 1 (samples per problem; pass@k is reported for k = 1..n)"),
    ("probe", "probe.n=-3", "probe.n=-3: must be >= 1 (samples per problem; pass@k is reported for k = 1..n)"),
    ("probe", "probe.temperature=-1",
     "probe.temperature=-1.0: must be >= 0 (0 = greedy decoding: every sample is the same; > 0 samples)"),
    ("probe", "probe.top_p=0", "probe.top_p=0.0: must be in (0, 1] (1 = no nucleus truncation)"),
    ("probe", "probe.top_p=1.5", "probe.top_p=1.5: must be in (0, 1] (1 = no nucleus truncation)"),
    ("probe", "probe.ci=2", "probe.ci=2.0: must be a confidence level in (0, 1), e.g. 0.95"),
    ("probe", "probe.ci=0", "probe.ci=0.0: must be a confidence level in (0, 1), e.g. 0.95"),
    ("probe", "probe.gpass_tau=0", "probe.gpass_tau=0.0: must be in (0, 1]: the share of k samples G-Pass@k needs right"),
    ("probe", "probe.bootstrap_iters=0",
     "probe.bootstrap_iters=0: must be >= 1 (bootstrap resamples for the confidence intervals)"),
    ("probe", "probe.max_new_tokens=0", "probe.max_new_tokens=0: must be >= 1"),
    ("probe", "probe.limit=-1",
     "probe.limit=-1: must be >= 1 (the first N problems), or null for all; 0 and negative values have no meaning"),
    ("probe", "probe.limit=0",
     "probe.limit=0: must be >= 1 (the first N problems), or null for all; 0 and negative values have no meaning"),
    ("probe", "probe.stop=['']", "probe.stop=['']: an empty stop string would cut every completion to nothing; remove it"),
    ("probe", "task.template=Solve.", "task.template='Solve.': has no {question} field, so every prompt would be "
                                      "the same text; add {question}"),
    ("probe", "probe.keep_text=some", "probe.keep_text=some: must be one of all, compact"),
    ("train", "probe.keep_text=none", "probe.keep_text=none: must be one of all, compact"),
    ("probe", "sampler.batch_size=0", "sampler.batch_size=0: must be >= 1"),
    ("probe", "sampler.hf.engine=fast", "sampler.hf.engine=fast: must be one of auto, generate, compact-cb"),
    ("probe", "verify.math.deadline_s=0", "verify.math.deadline_s=0.0: must be > 0 (seconds per math-verify call)"),
    ("probe", "logger.mode=sometimes", "logger.mode=sometimes: must be one of null, online, offline, disabled"),
    ("probe", "model.dtype=fp8", "model.dtype=fp8: must be one of auto, float32, bfloat16, float16"),
    ("train", "probe.n=0", "probe.n=0: must be >= 1 (samples per problem; pass@k is reported for k = 1..n)"),
    ("train", "train.max_steps=0", "train.max_steps=0: must be >= 1"),
    ("train", "train.save_steps=0", "train.save_steps=0: must be >= 1"),
    ("train", "train.save_total_limit=0", "train.save_total_limit=0: must be >= 1 (or null to keep every checkpoint)"),
    ("train", "train.probe_mode=later", "train.probe_mode=later: must be one of inline, detached"),
    ("train", "train.train_limit=-1",
     "train.train_limit=-1: must be >= 1 (the first N problems), or null for all; 0 and negative values have no meaning"),
    ("train", "algo.learning_rate=0", "algo.learning_rate=0.0: must be > 0"),
    ("train", "algo.rollouts=0", "algo.rollouts=0: must be >= 1 (completions sampled per prompt)"),
    ("train", "algo.temperature=0",
     "algo.temperature=0.0: must be > 0 (rollouts are sampled; the log-probs are of logits / T)"),
    ("train", "algo.onpolicy.gamma=1.5", "algo.onpolicy.gamma=1.5: must be in (0, 1]"),
    ("train", "algo.distill.beta=2", "algo.distill.beta=2.0: must be in [0, 1] (0 forward KL, 1 reverse KL)"),
    ("train", "kl.coef=-0.1", "kl.coef=-0.1: must be >= 0 (0 = no KL and no reference model)"),
    ("train", "kl.estimator=k9", "kl.estimator=k9: must be one of auto, k1, k2, k3"),
]


@pytest.mark.parametrize("primary,override,line", RANGE_CASES, ids=[c[1] for c in RANGE_CASES])
def test_value_out_of_range_is_one_line_naming_the_key(primary, override, line):
    assert _refused(primary, [override]) == line


@pytest.mark.parametrize("primary", ["probe", "train"])
def test_shipped_defaults_validate(primary):
    validate(_compose(primary))  # raises on failure


def _cpu_cases():
    cases = []
    for group in ("model", "task", "probe", "sampler", "logger", "algo", "backend", "debug", "experiment"):
        for opt in _options(group):
            # GPU-only choices are refused on a machine without CUDA (tested below).
            if (group, opt) in {("backend", "gpu"), ("backend", "zero2"), ("backend", "zero3"),
                                ("sampler", "vllm"), ("experiment", "paper_qwen2.5_vl_7b")}:
                continue
            cases.append((group, opt))
    return cases


@pytest.mark.parametrize("group,option", _cpu_cases())
def test_every_shipped_option_validates(group, option):
    # A check that refuses a shipped configuration would be a defect of the check.
    overrides = [f"{group}={option}"]
    # ??? in these YAMLs: the user must give the path (refused when not, tested below).
    if group == "task" and option in ("jsonl", "code_jsonl"):
        overrides.append("task.path=/nonexistent.jsonl")
    if group == "model" and option == "hf":
        from boundlab.worlds.toyworld import paths

        overrides.append(f"model.path={paths.base_model_dir()}")
    validate(_compose("train" if group in ("algo", "backend", "debug", "experiment") else "probe",
                      overrides))


@pytest.mark.parametrize("task", ["jsonl", "code_jsonl"])
def test_file_task_without_a_path_is_one_line(task):
    with pytest.raises(ConfigError) as e:
        build_task(_compose("probe", [f"task={task}"]).task)
    assert str(e.value) == f"task={task} needs task.path=/path/to/problems.jsonl"


def test_temperature_zero_is_allowed_and_said_to_be_greedy(capsys):
    validate(_compose("probe", ["probe.temperature=0", "probe.n=8"]))
    assert capsys.readouterr().err.strip() == (
        "[boundlab] note: probe.temperature=0 is greedy decoding: all 8 samples of a problem are "
        "identical, so pass@k is flat in k")


# -- machines without CUDA or vLLM ---------------------------------------------------------------

@pytest.fixture
def no_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize("backend", ["gpu", "zero2", "zero3"])
def test_gpu_backend_refused_without_cuda(no_cuda, backend):
    assert _refused("train", [f"backend={backend}"]) == (
        f"backend={backend} needs a CUDA GPU and torch sees none here: use backend=cpu (or "
        f"backend=zero2_cpu / zero3_cpu for the DeepSpeed path on CPU processes)")


def test_cuda_sampler_device_refused_without_cuda(no_cuda):
    assert _refused("probe", ["sampler.device=cuda"]) == (
        "sampler.device=cuda needs a CUDA GPU and torch sees none here: use sampler=hf with "
        "sampler.device=auto (or cpu)")


def test_vllm_refused_when_not_installed(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    assert _refused("probe", ["sampler=vllm"]) == (
        "sampler=vllm needs vLLM, which is not installed here: install it on a GPU machine "
        "(pip install 'boundlab[gpu]') or use sampler=hf")


@pytest.mark.parametrize("primary,ov", [("probe", "+experiment=paper_qwen2.5_vl_7b"),
                                         ("train", "experiment=paper_qwen2.5_vl_7b")])
def test_paper_vlm_preset_is_gpu_only(no_cuda, primary, ov):
    # A 7B vision-language model at n = 256 is a GPU job: refused at start on a machine without one.
    assert _refused(primary, [ov]) == (
        "sampler.device=cuda needs a CUDA GPU and torch sees none here: use sampler=hf with "
        "sampler.device=auto (or cpu)")


def test_paper_vlm_preset_validates_with_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    validate(_compose("probe", ["+experiment=paper_qwen2.5_vl_7b", "task=mathvista"]))


def test_gpu_backend_accepted_with_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    validate(_compose("train", ["backend=gpu"]))


# -- algorithm combinations ---------------------------------------------------------------------

@pytest.mark.parametrize("algo,line", [
    ("grpo", "algo=grpo normalises each reward within the group of rollouts of its prompt, so "
             "algo.rollouts must be >= 2 (got 1)"),
    ("dr_grpo", "algo=dr_grpo normalises each reward within the group of rollouts of its prompt, so "
                "algo.rollouts must be >= 2 (got 1)"),
    ("rloo", "algo=rloo needs algo.rollouts >= 2 (the baseline leaves one sample out)"),
    ("dapo", "algo=dapo: its baseline comes from the other samples of the same prompt, so algo.rollouts "
             "must be >= 2"),
    ("reinforce_pp_baseline", "algo=reinforce_pp_baseline: its baseline comes from the other samples of "
                              "the same prompt, so algo.rollouts must be >= 2"),
])
def test_one_rollout_refused_for_group_advantages(algo, line):
    assert _refused("train", [f"algo={algo}", "algo.rollouts=1"]) == line


@pytest.mark.parametrize("algo", ["reinforce_pp", "remax", "ppo"])
def test_one_rollout_allowed_without_groups(algo):
    validate(_compose("train", [f"algo={algo}", "algo.rollouts=1"]))


@pytest.mark.parametrize("algo", ["sft_distill", "onpolicy_distill"])
@pytest.mark.parametrize("kl,shown", [
    (["kl.coef=0.001"], "kl.coef=0.001"),
    (["kl.where=loss"], "kl.where=loss"),
    (["kl.coef=0.01", "kl.estimator=k2"], "kl.coef=0.01 kl.estimator=k2"),
    (["kl.reference=/models/base"], "kl.reference=/models/base"),
])
def test_kl_with_distillation_refused(algo, kl, shown):
    assert _refused("train", [f"algo={algo}", *kl]) == (
        f"algo={algo} has no KL penalty (the teacher is the target), so {shown} would be ignored: "
        f"drop the kl.* override(s)")


def test_unknown_algo_name_is_one_line():
    assert _refused("train", ["algo.name=foo"]) == (
        "algo.name=foo: unknown algorithm 'foo'; known: dapo, dr_grpo, grpo, grpo_onpolicy, nsr, onpolicy_distill, passk_grpo, pkpo, ppo, "
        "reinforce_pp, reinforce_pp_baseline, remax, rloo, sft_distill, weighted_reinforce; choose the algorithm "
        "with algo=NAME")


# -- internal schema names, group choices, experiments ------------------------------------------

def test_schema_is_not_a_choice_of_any_group():
    from hydra.errors import MissingConfigException

    for group in ("model", "task", "probe", "sampler", "logger", "algo", "backend"):
        primary = "train" if group in ("algo", "backend") else "probe"
        with pytest.raises(MissingConfigException):
            _compose(primary, [f"{group}=schema"])


def test_unknown_choice_names_group_and_options():
    algos = ", ".join(_options("algo"))
    assert unknown_choice(["algo=schema"], CONF) == (
        f"algo=schema: there is no such algo (conf/algo/schema.yaml); choose one of: {algos}")
    # sweeps are checked value by value; teacher choices come from the model group
    assert unknown_choice(["-m", "algo=grpo,grp0"], CONF).startswith("algo=grp0: there is no such algo")
    assert unknown_choice(["model@teacher=nope"], CONF).startswith(
        "model@teacher=nope: there is no such model (conf/model/nope.yaml)")
    assert unknown_choice(["+schema=algo"], CONF) == (
        "schema=algo: schema/* are the typed schemas the config groups build on (boundlab.config), not "
        "a choice; choose an option of the group itself")
    for fine in (["algo=grpo,rloo", "experiment=kl_ablation", "debug=null"], ["hydra/launcher=joblib"],
                 ["probe.n=4", "task.path=/x=y"], ["algo=glob(*)"], ["+experiment=kl_ablation"],
                 ["--config-dir=/my/conf", "algo=mine"], ["hydra.searchpath=[file:///my/conf]", "algo=mine"]):
        assert unknown_choice(fine, CONF) is None, fine


def test_no_experiment_sets_a_group_name_directly():
    # `algo: {name: grpo}` in an experiment keeps whatever algorithm group was chosen and renames it:
    # `algo=dapo experiment=kl_ablation` ran GRPO with DAPO's settings. Groups are overridden instead.
    groups = {p.name for p in CONF.iterdir() if p.is_dir()}
    for f in sorted((CONF / "experiment").glob("*.yaml")) + sorted((CONF / "debug").glob("*.yaml")):
        doc = yaml.safe_load(f.read_text()) or {}
        for group in groups:
            node = doc.get(group)
            assert not (isinstance(node, dict) and "name" in node), f"{f.name} sets {group}.name"


@pytest.mark.parametrize("experiment", _options("experiment"))
def test_every_experiment_keeps_the_chosen_algorithm(experiment):
    dapo = _compose("train", ["algo=dapo"]).algo
    for order in (["algo=dapo", f"experiment={experiment}"], [f"experiment={experiment}", "algo=dapo"]):
        algo = _compose("train", order).algo
        assert (algo.name, algo.onpolicy.epsilon_high, algo.onpolicy.dynamic_sampling, algo.onpolicy.loss_type) == \
            (dapo.name, dapo.onpolicy.epsilon_high, dapo.onpolicy.dynamic_sampling, dapo.onpolicy.loss_type)


def test_kl_ablation_alone_is_grpo():
    cfg = _compose("train", ["experiment=kl_ablation"])
    assert cfg.algo == _compose("train", ["algo=grpo"]).algo


# -- task files ---------------------------------------------------------------------------------

def _write(path: Path, lines) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("answer,what", [(None, "null"), ("", "empty"), ("  ", "empty")])
def test_null_or_empty_gold_refused_with_file_and_line(tmp_path, answer, what):
    f = _write(tmp_path / "p.jsonl", [json.dumps({"problem_id": "a", "prompt": "1+1?", "answer": "2"}),
                                      json.dumps({"problem_id": "b", "prompt": "2+2?", "answer": answer})])
    with pytest.raises(DataError) as e:
        load_jsonl_problems(f)
    assert str(e.value) == (f"{f}:2: 'answer' is {what}; every problem needs a gold answer "
                            f"(drop the line or fill it in)")


def test_gold_zero_is_a_real_answer(tmp_path):
    f = _write(tmp_path / "p.jsonl", [json.dumps({"problem_id": "a", "prompt": "1-1?", "answer": 0})])
    assert load_jsonl_problems(f)[0].answer == "0"


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_data_file_named(tmp_path, content):
    f = tmp_path / "p.jsonl"
    f.write_bytes(content)
    with pytest.raises(DataError) as e:
        list(iter_jsonl(f))
    assert str(e.value) == f"{f}: the file is empty; it needs one JSON object per line"


def test_non_utf8_data_file_named_with_line(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_bytes(json.dumps({"problem_id": "a", "prompt": "x", "answer": "1"}).encode() + b"\n"
                  + '{"problem_id": "b", "prompt": "caf\u00e9", "answer": "1"}\n'.encode("latin-1"))
    with pytest.raises(DataError) as e:
        load_jsonl_problems(f)
    assert str(e.value) == f"{f}:2: not UTF-8 text (byte 0xe9 at column 35); re-save the file as UTF-8"


def test_utf8_bom_is_accepted(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps({"problem_id": "a", "prompt": "x", "answer": "1"}).encode() + b"\n")
    assert [p.problem_id for p in load_jsonl_problems(f)] == ["a"]


# -- prompt templates -----------------------------------------------------------------------------

def test_template_braces_are_literal_and_only_question_is_substituted():
    t = Task("t", [Problem("a", "What is {x}?", "1")],
             template="{question}\nPut it in \\boxed{} (not {answer}).")
    assert t.render(t.problems[0]) == "What is {x}?\nPut it in \\boxed{} (not {answer})."


def test_jsonl_task_builds_prompts_with_its_boxed_template(tmp_path):
    # task=jsonl used to crash on every prompt: str.format read `\boxed{}` as a positional field.
    f = _write(tmp_path / "p.jsonl", [json.dumps({"problem_id": "a", "prompt": "1+1?", "answer": "2"})])
    cfg = _compose("probe", ["task=jsonl", f"task.path={f}"])
    task = build_task(cfg.task)
    assert task.render(task.problems[0]) == (
        "1+1?\nPlease reason step by step, and put your final answer within \\boxed{}.")


def test_math_tasks_render_the_same_prompt_as_before():
    # The paper's qwen-boxed prompt, as str.format rendered it from the old `\boxed{{}}` template.
    cfg = _compose("probe", ["task=aime24"])
    task = build_task(cfg.task)
    p = task.problems[0]
    old = "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}."
    assert task.render(p) == old.format(question=p.question)


# -- the probe store ------------------------------------------------------------------------------

def test_store_path_that_is_a_directory(tmp_path):
    with pytest.raises(StoreError) as e:
        Store(tmp_path)
    assert str(e.value) == (f"store.path={tmp_path} is a directory, not a SQLite file: set "
                            f"store.path={tmp_path / 'store.sqlite'} (or BOUNDLAB_STORE)")


def test_corrupt_store_named_with_recovery_command(tmp_path):
    p = tmp_path / "store.sqlite"
    p.write_bytes(b"this is not a database, just some bytes" * 200)
    with pytest.raises(StoreError) as e:
        Store(p)
    assert str(e.value) == (
        f"the probe store {p} is corrupt (file is not a database): move it aside with "
        f"mv {p} {p}.corrupt and rerun (its probes are sampled again), or after the mv salvage what is "
        f"readable: sqlite3 {p}.corrupt .recover | sqlite3 {p}")


def test_read_only_store_named(tmp_path, monkeypatch):
    # Root ignores file permissions, so the store is opened through SQLite's own read-only mode:
    # the error comes from SQLite exactly as for a file without write permission.
    p = tmp_path / "store.sqlite"
    Store(p).close()
    for extra in ("-wal", "-shm"):
        Path(str(p) + extra).unlink(missing_ok=True)
    real = sqlite3.connect
    # Every open read-only (a reader's own open is a mode=ro URI already: passed as it is).
    monkeypatch.setattr(sqlite3, "connect", lambda path, **kw: real(path, **kw) if kw.get("uri")
                        else real(f"file:{path}?mode=ro", uri=True, **kw))
    with pytest.raises(StoreError) as e:
        Store(p)
    assert str(e.value) == (
        f"the probe store {p} is not writable (attempt to write a readonly database): make it and its "
        f"folder writable (chmod u+w {p} {tmp_path}) or set store.path= (BOUNDLAB_STORE) to a writable file")


def test_store_folder_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError) as e:
        Store(blocker / "sub" / "store.sqlite")
    assert str(e.value) == (f"cannot create the folder of the probe store {blocker / 'sub' / 'store.sqlite'} "
                            f"(Not a directory): set store.path= (BOUNDLAB_STORE) to a file in a writable folder")


def test_disk_full_in_store_is_reported_as_disk_full(tmp_path):
    # SQLite's max_page_count makes the database "full" exactly as a full disk does (SQLITE_FULL),
    # which rolls the transaction back by itself; the old explicit ROLLBACK then raised "cannot
    # rollback - no transaction is active" and hid this.
    p = tmp_path / "store.sqlite"
    s = Store(p)
    s.add_samples("k", [SampleRow("a", 0, "x", "1", True, None, "correct", 1)])
    pages = s.db.execute("PRAGMA page_count").fetchone()[0]
    s.db.execute(f"PRAGMA max_page_count={pages + 2}")
    big = [SampleRow("a", i, "y" * 4000, "1", True, None, "correct", 1) for i in range(1, 50)]
    with pytest.raises(DiskFull) as e:
        s.add_samples("k", big)
    assert str(e.value) == (
        f"no space left on device while writing samples to the probe store {p} (database or disk is "
        f"full): free space on that disk and rerun the same command (a probe continues where it "
        f"stopped), or set store.path= (BOUNDLAB_STORE) to a file on another disk")
    assert not s.db.in_transaction
    assert s.counts_done("k") == {"a": 1}  # the failed batch left nothing behind
    s.close()


# -- full disk while saving a checkpoint (simulated: the error a save raises) ---------------------

def test_enospc_during_save_says_no_space_and_the_file(tmp_path):
    f = tmp_path / "checkpoint-4" / "optimizer.pt"
    with pytest.raises(DiskFull) as e:
        with no_space_left(tmp_path, "resume: python train.py resume=RUN"):
            raise OSError(errno.ENOSPC, "No space left on device", str(f))
    assert str(e.value).startswith(f"no space left on device while writing {f}, ")
    assert str(e.value).endswith(" MiB free: free space on that disk, then resume: python train.py resume=RUN")


def test_safetensors_enospc_during_save(tmp_path):
    from safetensors import SafetensorError

    with pytest.raises(DiskFull) as e:
        with no_space_left(tmp_path / "checkpoints", "resume"):
            raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, '
                                  'message: "No space left on device" })')
    assert str(e.value).startswith(f"no space left on device while writing {tmp_path / 'checkpoints'}, ")


def test_torch_write_failure_on_a_full_disk(tmp_path, monkeypatch):
    # torch says only "file write failed"; the free space decides whether that was a full disk.
    msg = "[enforce fail at inline_container.cc:664] . PytorchStreamWriter failed writing file data/0: file write failed"
    monkeypatch.setattr(shutil, "disk_usage", lambda p: SimpleNamespace(total=100 << 30, used=100 << 30, free=1 << 20))
    with pytest.raises(DiskFull) as e:
        with no_space_left(tmp_path, "resume"):
            raise RuntimeError(msg)
    assert str(e.value) == f"no space left on device while writing {tmp_path}, 1 MiB free: free space on that disk, then resume"
    # The same message with room on the disk is some other failure: it passes through unchanged.
    monkeypatch.setattr(shutil, "disk_usage", lambda p: SimpleNamespace(total=100 << 30, used=1 << 30, free=99 << 30))
    with pytest.raises(RuntimeError, match="file write failed"):
        with no_space_left(tmp_path, "resume"):
            raise RuntimeError(msg)


def test_other_errors_pass_through_no_space_left(tmp_path):
    with pytest.raises(ValueError, match="boom"):
        with no_space_left(tmp_path, "resume"):
            raise ValueError("boom")


# -- corrupted model weights ----------------------------------------------------------------------

@pytest.fixture
def toy_copy(tmp_path):
    from boundlab.worlds.toyworld import paths

    dst = tmp_path / "model"
    shutil.copytree(paths.base_model_dir(), dst)
    return dst


def test_intact_model_passes(toy_copy):
    from boundlab.models import check_weight_files

    check_weight_files(toy_copy)


def test_truncated_safetensors_named(toy_copy):
    from boundlab.models import check_weight_files

    f = toy_copy / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError) as e:
        check_weight_files(toy_copy)
    n = int.from_bytes(data[:8], "little")
    assert str(e.value) == (
        f"model file {f} is corrupt: its tensors need {len(data) - 8 - n} bytes of data but it holds "
        f"{len(data) // 2 - 8 - n} (truncated or overwritten); restore or re-download it (or re-save "
        f"the model) and rerun")


def test_garbage_safetensors_header_named(toy_copy):
    from boundlab.models import check_weight_files

    f = toy_copy / "model.safetensors"
    data = bytearray(f.read_bytes())
    data[8:40] = b"\x00" * 32  # the JSON header overwritten
    f.write_bytes(bytes(data))
    with pytest.raises(ModelFileError) as e:
        check_weight_files(toy_copy)
    assert str(e.value) == (f"model file {f} is corrupt: its header is not valid safetensors JSON "
                            f"(UnicodeDecodeError); restore or re-download it (or re-save the model) and rerun")


def test_corrupt_model_refused_by_validate(toy_copy):
    f = toy_copy / "model.safetensors"
    f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(ModelFileError, match=f"model file {f} is corrupt"):
        validate(_compose("probe", ["model=hf", f"model.path={toy_copy}"]))


def test_corrupt_tensor_entry_named_at_load(toy_copy):
    # A header whose sizes add up but whose content safetensors rejects (here an unknown dtype)
    # passes the cheap header check; loading it names the folder in one line.
    from boundlab.models import load_model

    f = toy_copy / "model.safetensors"
    data = f.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = data[8:8 + n].replace(b'"dtype":"F32"', b'"dtype":"Q9Z"', 1)
    assert header != data[8:8 + n]
    f.write_bytes(len(header).to_bytes(8, "little") + header + data[8 + n:])
    cfg = _compose("probe", ["model=hf", f"model.path={toy_copy}"]).model
    with pytest.raises(ModelFileError) as e:
        load_model(cfg, "cpu", str(toy_copy))
    assert str(e.value).startswith(f"a weight file in {toy_copy} is corrupt (")
    assert str(e.value).endswith("); restore or re-download it (or re-save the model) and rerun")


def test_read_only_store_can_still_be_read(tmp_path, monkeypatch):
    # report.py only reads: it opens with writable=False and a read-only store serves it.
    p = tmp_path / "store.sqlite"
    s = Store(p)
    s.add_samples("k", [SampleRow("a", 0, "x", "1", True, None, "correct", 1)])
    s.close()
    real = sqlite3.connect
    # Every open read-only (a reader's own open is a mode=ro URI already: passed as it is).
    monkeypatch.setattr(sqlite3, "connect", lambda path, **kw: real(path, **kw) if kw.get("uri")
                        else real(f"file:{path}?mode=ro", uri=True, **kw))
    ro = Store(p, writable=False)
    assert ro.counts_done("k") == {"a": 1}
    ro.close()
