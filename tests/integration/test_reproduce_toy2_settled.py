"""scripts/reproduce_toy2_settled.sh (issue 40) with DRY_RUN=1: the command sequence it documents,
and every command composing under Hydra (`--cfg job`) with the settings the experiment needs."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "reproduce_toy2_settled.sh"
ARMS = ["grpo_s0", "grpo_s1", "grpo_s2", "grpo_shuffled_reward", "grpo_strict_reward", "grpo_own_trainer"]


def _dry_run(out: Path, archive: Path | None = None, **env: str) -> list[list[str]]:
    archive = archive or out.parent / "no-archives"  # not the repo's archive/ (it fills as runs finish)
    proc = subprocess.run(["bash", str(SCRIPT), str(out)], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, DRY_RUN="1", ARCHIVE_DIR=str(archive), **env), timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [shlex.split(line) for line in proc.stdout.splitlines() if line.strip()]


def _cfg_job(argv: list[str]) -> dict:
    """The composed job config of one entry-point command (`python X.py overrides...`)."""
    assert argv[0] == "python" and argv[1] in ("train.py", "probe.py", "report.py"), argv
    proc = subprocess.run([sys.executable, str(ROOT / argv[1]), *argv[2:], "--cfg", "job"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, HF_HUB_OFFLINE="1", WANDB_MODE="disabled"))
    assert proc.returncode == 0, f"{shlex.join(argv)} does not compose:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return yaml.safe_load(proc.stdout)


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    return _dry_run(tmp_path_factory.mktemp("settled") / "out")


def test_the_sequence_is_base_null_sweep_finals_reports(commands, tmp_path):
    kinds = [(c[1], next((a.split("=", 1)[1] for a in c if a.startswith("hydra.run.dir=")), None))
             for c in commands]
    out = str(_out(commands))
    assert [k for k, _ in kinds] == ["probe.py", "probe.py", "train.py"] + ["probe.py"] * 6 + ["report.py"] * 2
    assert [d for _, d in kinds[:2]] == [f"{out}/large/base", f"{out}/large/null"]
    assert [d for _, d in kinds[3:9]] == [f"{out}/large/{arm}" for arm in ARMS]
    sweep = commands[2]
    assert "-m" in sweep and "experiment=toy2_settled" in sweep and f"+arm={','.join(ARMS)}" in sweep
    # Each final probe reads its own arm's last checkpoint.
    for arm, cmd in zip(ARMS, commands[3:9]):
        assert f"model.path={out}/sweep/{arm}/checkpoints/checkpoint-300" in cmd


def _out(commands) -> Path:
    run_dir = next(a.split("=", 1)[1] for a in commands[0] if a.startswith("hydra.run.dir="))
    return Path(run_dir).parents[1]


def test_archives_are_unpacked_first_into_the_experiments_store(tmp_path):
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "toy2_base.sqlite.xz").write_bytes(b"")
    commands = _dry_run(tmp_path / "out", archive, BOUNDLAB_STORE="")  # unset: the script's default
    assert commands[0] == ["python", "-m", "boundlab.probe.store", "unpack", str(archive / "toy2_base.sqlite.xz"),
                           "--store", str(tmp_path / "out" / "store.sqlite")]
    assert [c[1] for c in commands[1:4]] == ["probe.py", "probe.py", "train.py"]


def test_pack_only_packs_the_experiments_probes_the_store_holds(tmp_path):
    from boundlab.probe.store import SampleRow, Store

    store = Store(tmp_path / "store.sqlite")
    for name in ("toy2_base", "unrelated"):
        store.ensure_probe(f"{name}-key", f"fp-{name}", "task", {"seed": 0}, model_name=name, task_name="toy2")
        store.add_samples(f"{name}-key", [SampleRow("p1", 0, "A:1", "1", True, True, "correct", 3, None)])
    store.close()
    archive = tmp_path / "archive"
    proc = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PACK_ONLY="1", ARCHIVE_DIR=str(archive),
                                                BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), PYTHON=sys.executable))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in archive.iterdir()) == ["toy2_base.sqlite.xz"]  # only the experiment's


@pytest.mark.parametrize("i", [0, 1] + list(range(3, 11)))
def test_every_probe_and_report_command_composes(commands, i):
    cfg = _cfg_job(commands[i])
    if commands[i][1] == "probe.py":
        p = cfg["probe"]
        assert (p["n"], p["adaptive"], p["n0"], p["epsilon"]) == (4096, True, 256, 0.001)
        assert (p["temperature"], p["max_new_tokens"]) == (1.0, 108)
        assert cfg["task"]["slice"] == "heldout" and cfg["task"]["tiers"] == ["H1", "H2", "B3", "B4"]
        assert p["seed"] == (1 if i == 1 else 0)  # the null is a second base draw
    else:
        assert cfg["out"].startswith("docs/toy2_settled/")


@pytest.mark.parametrize("arm", ARMS)
def test_every_arm_of_the_sweep_composes(commands, arm):
    # A multirun cannot print its jobs' configs: compose each job as the sweeper would, with the
    # experiment's own sweep parameters (the command line's +arm= replaces its arm list).
    sweep = [a for a in commands[2] if a != "-m" and not a.startswith("+arm=")]
    params = yaml.safe_load((ROOT / "conf/experiment/toy2_settled.yaml").read_text())["hydra"]["sweeper"]["params"]
    extra = [f"{k}={v}" for k, v in params.items() if k != "+arm"]
    cfg = _cfg_job(sweep + [f"+arm={arm}", *extra])
    assert (cfg["train"]["max_steps"], cfg["train"]["save_steps"]) == (300, 50)
    assert cfg["task"]["slice"] == "heldout" and cfg["probe"]["n"] == 256
    assert cfg["reward"]["shuffle_within_group"] == (arm == "grpo_shuffled_reward")
    assert cfg["reward"]["strict"] == (arm == "grpo_strict_reward")
    assert cfg["algo"]["name"] == ("grpo_onpolicy" if arm == "grpo_own_trainer" else "grpo")
    assert cfg["train"]["seed"] == (int(arm[-1]) if arm.startswith("grpo_s") and arm[-1].isdigit() else 0)


def test_a_finished_step_is_skipped(tmp_path):
    # Resumable: a probe whose problems.csv exists is not run again (a stand-in python that fails
    # every probe proves no other probe ran before the null).
    out = tmp_path / "out"
    (out / "large" / "base").mkdir(parents=True)
    (out / "large" / "base" / "problems.csv").write_text("problem_id,n,c\n")
    archive = _archives(tmp_path, ["toy2_base"])  # packed after the probe finished: not packed again
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho \"ran $*\"\n[ \"$1\" = probe.py ] && exit 3\nexit 0\n")
    fake.chmod(0o755)
    proc = subprocess.run(["bash", str(SCRIPT), str(out)], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHON=str(fake), ARCHIVE_DIR=str(archive)), timeout=60)
    assert f"ran -m boundlab.probe.store unpack {archive}/toy2_base.sqlite.xz --store" in proc.stdout
    assert f"done already: {out}/large/base/problems.csv" in proc.stdout
    assert "pack" not in proc.stdout.replace("unpack", "")
    # The next step (the null) is the one that ran, and its failure stopped the script.
    assert proc.returncode == 3 and "ran probe.py model=toy2 probe.seed=1 model.name=toy2_base_null" in proc.stdout


def _archives(tmp_path: Path, names: list[str]) -> Path:
    """An archive dir holding `names`, each packed after every problems.csv the test wrote."""
    archive = tmp_path / "archive"
    archive.mkdir()
    for name in names:
        (archive / f"{name}.sqlite.xz").write_bytes(b"")
        os.utime(archive / f"{name}.sqlite.xz", (4e9, 4e9))
    return archive


def test_a_rerun_skips_finished_arms_and_resumes_interrupted_ones(tmp_path):
    out = tmp_path / "out"
    for name in ("base", "null"):
        (out / "large" / name).mkdir(parents=True)
        (out / "large" / name / "problems.csv").write_text("problem_id,n,c\n")
    (out / "sweep" / "grpo_s0").mkdir(parents=True)
    (out / "sweep" / "grpo_s0" / "training_done").write_text("ok\n")
    (out / "sweep" / "grpo_s1" / ".hydra").mkdir(parents=True)  # started, killed before the end
    (out / "large" / "grpo_s0").mkdir(parents=True)
    (out / "large" / "grpo_s0" / "problems.csv").write_text("problem_id,n,c\n")
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\n")
    fake.chmod(0o755)
    archive = _archives(tmp_path, ["toy2_base", "toy2_base_null", "toy2_settled_grpo_s0"])
    proc = subprocess.run(["bash", str(SCRIPT), str(out)], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHON=str(fake), ARCHIVE_DIR=str(archive)), timeout=60)
    assert proc.returncode == 0, proc.stderr
    ran = calls.read_text().splitlines()
    assert ran.pop(0).startswith(f"-m boundlab.probe.store unpack {archive}/toy2_base.sqlite.xz ")
    assert ran[0] == f"train.py resume={out}/sweep/grpo_s1"
    assert ran[1] == (f"train.py -m experiment=toy2_settled hydra.sweep.dir={out}/sweep "
                      f"+arm=grpo_s2,grpo_shuffled_reward,grpo_strict_reward,grpo_own_trainer")
    # Final probes for every arm but grpo_s0's (done), then the two reports.
    finals = [c for c in ran[2:] if c.startswith("probe.py")]
    assert [c.split("hydra.run.dir=")[1] for c in finals] == [f"{out}/large/{a}" for a in ARMS[1:]]
    assert [c.split()[0] for c in ran[2 + len(finals):]] == ["report.py", "report.py"]
