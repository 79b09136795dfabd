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


# Where each kind of command is in the DRY_RUN sequence: base, null, the sweep, each arm packed,
# each arm's final probe, the focus set and the base's focus probe, the three reports.
FINALS = range(9, 15)
FOCUS_SET, FOCUS_PROBE = 15, 16
REPORTS = range(17, 20)


def test_the_sequence_is_base_null_sweep_packs_finals_reports(commands, tmp_path):
    kinds = [(c[1] if c[1] != "-m" else c[2], next((a.split("=", 1)[1] for a in c if a.startswith("hydra.run.dir=")),
                                                   None)) for c in commands]
    out = str(_out(commands))
    assert [k for k, _ in kinds] == (["probe.py", "probe.py", "train.py"] + ["boundlab.probe.run_archive"] * 6
                                     + ["probe.py"] * 6 + ["boundlab.report.focus", "probe.py"] + ["report.py"] * 3)
    assert [d for _, d in kinds[:2]] == [f"{out}/large/base", f"{out}/large/null"]
    assert [kinds[i][1] for i in FINALS] == [f"{out}/large/{arm}" for arm in ARMS]
    sweep = commands[2]
    assert "-m" in sweep and "experiment=toy2_settled" in sweep and f"+arm={','.join(ARMS)}" in sweep
    # Each final probe reads its own arm's last checkpoint.
    for arm, i in zip(ARMS, FINALS):
        assert f"model.path={out}/sweep/{arm}/checkpoints/checkpoint-300" in commands[i]
    # The base again, at a fixed 4096, on every problem an arm loses at 256; its report beside the arms.
    arms = ",".join(f"toy2_settled_{a}" for a in ARMS)
    assert commands[FOCUS_SET][3:] == ["--store", f"{out}/store.sqlite", "--base", "toy2_base", "--arms", arms,
                                       "--k", "256", "--out", f"{out}/large/focus_ids.txt"]
    assert kinds[FOCUS_PROBE][1] == f"{out}/large/base_focus"
    assert {"model.name=toy2_base_focus", f"task.problems_from={out}/large/focus_ids.txt",
            "probe.adaptive=false"} <= set(commands[FOCUS_PROBE])
    assert commands[REPORTS[2]][2] == "base=toy2_base_focus" and f"models=[{arms}]" in commands[REPORTS[2]]


def _finished_probes(out: Path, *names: str) -> None:
    """OUT/large/<name>/problems.csv for each name: large probes that finished (the script skips them)."""
    for name in names:
        (out / "large" / name).mkdir(parents=True)
        (out / "large" / name / "problems.csv").write_text("problem_id,n,c\n")


def _complete_checkpoint(run_dir: Path, step: int = 300) -> None:
    ck = run_dir / "checkpoints" / f"checkpoint-{step}"
    ck.mkdir(parents=True)
    (ck / "boundlab_complete").write_text("ok\n")


def test_every_arm_is_packed_after_the_sweep_into_its_own_folder(tmp_path):
    archive = tmp_path / "archive"
    commands = _dry_run(tmp_path / "out", archive, BOUNDLAB_STORE="")
    out = tmp_path / "out"
    assert commands[3:9] == [["python", "-m", "boundlab.probe.run_archive", "pack", f"{out}/sweep/{arm}",
                              "--out", f"{archive}/arms/{arm}", "--store", f"{out}/store.sqlite",
                              "--allow-unfinished"] for arm in ARMS]


def _out(commands) -> Path:
    run_dir = next(a.split("=", 1)[1] for a in commands[0] if a.startswith("hydra.run.dir="))
    return Path(run_dir).parents[1]


def test_archives_are_unpacked_first_into_the_experiments_store(tmp_path):
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "toy2_base.sqlite.xz").write_bytes(b"")
    for arm in ("grpo_s2", "grpo_s0", "not_an_arm"):  # packed arms (and a folder of no arm of this experiment)
        (archive / "arms" / arm).mkdir(parents=True)
        (archive / "arms" / arm / "manifest.json").write_text("{}")
    commands = _dry_run(tmp_path / "out", archive, BOUNDLAB_STORE="")  # unset: the script's default
    store = str(tmp_path / "out" / "store.sqlite")
    assert commands[0] == ["python", "-m", "boundlab.probe.store", "unpack", str(archive / "toy2_base.sqlite.xz"),
                           "--store", store]
    # Then the packed arms come back as the sweep's run dirs, their probes into the same store.
    assert commands[1] == ["python", "-m", "boundlab.probe.run_archive", "restore", f"{archive}/arms/grpo_s0",
                           f"{archive}/arms/grpo_s2", "--sweep-dir", str(tmp_path / "out" / "sweep"), "--store", store]
    assert [c[1] for c in commands[2:5]] == ["probe.py", "probe.py", "train.py"]


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


def test_pack_only_skips_a_finished_probe_already_packed(tmp_path):
    out = tmp_path / "out"
    _finished_probes(out, "base", "null")
    archive = _archives(tmp_path, ["toy2_base"])  # packed after base finished; the null never packed
    fake, calls = _fake_python(tmp_path, "exit 0")  # the store holds every probe asked about
    proc = _script(out, fake, archive, PACK_ONLY="1")
    assert proc.returncode == 0, proc.stderr
    assert f"packed already: {archive}/toy2_base.sqlite.xz" in proc.stdout
    packs = [c.split("--models ")[1].split()[0] for c in calls.read_text().splitlines() if "store pack" in c]
    assert packs == ["toy2_base_null", "toy2_base_focus", *(f"toy2_settled_{a}" for a in ARMS)]


@pytest.mark.parametrize("i", [0, 1, *FINALS, FOCUS_PROBE, *REPORTS])
def test_every_probe_and_report_command_composes(commands, i):
    cfg = _cfg_job(commands[i])
    if commands[i][1] == "probe.py":
        p = cfg["probe"]
        assert (p["n"], p["adaptive"], p["n0"], p["epsilon"]) == (4096, i != FOCUS_PROBE, 256, 0.001)
        assert (p["temperature"], p["max_new_tokens"]) == (1.0, 108)
        assert cfg["task"]["toy2"]["slice"] == "heldout"
        assert cfg["task"]["toy2"]["tiers"] == ["H1", "H2", "B3", "B4"]
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
    assert cfg["task"]["toy2"]["slice"] == "heldout" and cfg["probe"]["n"] == 256
    assert cfg["reward"]["shuffle_within_group"] == (arm == "grpo_shuffled_reward")
    assert cfg["reward"]["strict"] == (arm == "grpo_strict_reward")
    assert cfg["algo"]["name"] == ("grpo_onpolicy" if arm == "grpo_own_trainer" else "grpo")
    assert cfg["train"]["seed"] == (int(arm[-1]) if arm.startswith("grpo_s") and arm[-1].isdigit() else 0)


def test_a_finished_step_is_skipped(tmp_path):
    # Resumable: a probe whose problems.csv exists is not run again (a stand-in python that fails
    # every probe proves no other probe ran before the null).
    out = tmp_path / "out"
    _finished_probes(out, "base")
    archive = _archives(tmp_path, ["toy2_base"])  # packed after the probe finished: not packed again
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho \"ran $*\"\n[ \"$1\" = probe.py ] && exit 3\nexit 0\n")
    fake.chmod(0o755)
    proc = _script(out, fake, archive)
    assert f"ran -m boundlab.probe.store unpack {archive}/toy2_base.sqlite.xz --store" in proc.stdout
    assert f"done already: {out}/large/base/problems.csv" in proc.stdout
    assert "pack" not in proc.stdout.replace("unpack", "")
    # The next step (the null) is the one that ran, and its failure stopped the script.
    assert proc.returncode == 3 and "ran probe.py model=toy2 probe.seed=1 model.name=toy2_base_null" in proc.stdout


def _script(out: Path, fake: Path, archive: Path, **env: str) -> subprocess.CompletedProcess:
    """The script with a stand-in interpreter, the store at its default (OUT/store.sqlite)."""
    return subprocess.run(["bash", str(SCRIPT), str(out)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHON=str(fake), ARCHIVE_DIR=str(archive), BOUNDLAB_STORE="", **env))


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
    _finished_probes(out, "base", "null")
    (out / "sweep" / "grpo_s0").mkdir(parents=True)
    (out / "sweep" / "grpo_s0" / "training_done").write_text("ok\n")
    _complete_checkpoint(out / "sweep" / "grpo_s0")
    (out / "sweep" / "grpo_s1" / ".hydra").mkdir(parents=True)  # started, killed before its first checkpoint
    _finished_probes(out, "grpo_s0")
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\n")
    fake.chmod(0o755)
    archive = _archives(tmp_path, ["toy2_base", "toy2_base_null", "toy2_settled_grpo_s0"])
    proc = _script(out, fake, archive)
    assert proc.returncode == 0, proc.stderr
    ran = calls.read_text().splitlines()
    assert ran.pop(0).startswith(f"-m boundlab.probe.store unpack {archive}/toy2_base.sqlite.xz ")
    assert ran[0] == f"train.py resume={out}/sweep/grpo_s1"
    assert ran[1] == (f"train.py -m experiment=toy2_settled hydra.sweep.dir={out}/sweep "
                      f"+arm=grpo_s2,grpo_shuffled_reward,grpo_strict_reward,grpo_own_trainer")
    # The one arm with a checkpoint (the stand-in trained nothing) is packed, once.
    assert ran[2] == (f"-m boundlab.probe.run_archive pack {out}/sweep/grpo_s0 --out {archive}/arms/grpo_s0 "
                      f"--store {out}/store.sqlite --allow-unfinished")
    # Final probes for every arm but grpo_s0's (done), the focus set (the stand-in writes none: no
    # focus probe, no focus report), then the two reports.
    finals = [c for c in ran[3:] if c.startswith("probe.py")]
    assert [c.split("hydra.run.dir=")[1] for c in finals] == [f"{out}/large/{a}" for a in ARMS[1:]]
    assert [c.split()[0] for c in ran[3 + len(finals):]] == ["-m", "report.py", "report.py"]


def _fake_python(tmp_path: Path, body: str = "") -> tuple[Path, Path]:
    """A stand-in interpreter that records its arguments (one call a line), then runs `body`."""
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\n{body}\n")
    fake.chmod(0o755)
    return fake, calls


def test_a_packed_arm_is_restored_and_not_trained_again(tmp_path):
    out = tmp_path / "out"
    archive = _archives(tmp_path, [])
    (archive / "arms" / "grpo_s0").mkdir(parents=True)
    (archive / "arms" / "grpo_s0" / "manifest.json").write_text("{}")
    # The stand-in restores as the real one does: the run dir, finished, with its final checkpoint.
    fake, calls = _fake_python(tmp_path, f'if [ "$3" = restore ]; then mkdir -p {out}/sweep/grpo_s0/checkpoints/'
                                         f'checkpoint-300 && echo ok > {out}/sweep/grpo_s0/training_done && echo ok > '
                                         f'{out}/sweep/grpo_s0/checkpoints/checkpoint-300/boundlab_complete; fi')
    proc = _script(out, fake, archive)
    assert proc.returncode == 0, proc.stderr
    ran = calls.read_text().splitlines()
    assert ran[0] == (f"-m boundlab.probe.run_archive restore {archive}/arms/grpo_s0 --sweep-dir {out}/sweep "
                      f"--store {out}/store.sqlite")
    assert f"done already: {out}/sweep/grpo_s0" in proc.stdout
    sweep = next(c for c in ran if c.startswith("train.py"))
    assert sweep.endswith(f"+arm={','.join(ARMS[1:])}")  # the restored arm is not trained again
    # Packed again after the sweep, which the real pack answers with "packed_already" (unit-tested).
    assert [c.split()[3] for c in ran if " pack " in c] == [f"{out}/sweep/grpo_s0"]
    # Its final checkpoint is probed from the restored run dir.
    assert any(c.startswith("probe.py") and f"model.path={out}/sweep/grpo_s0/checkpoints/checkpoint-300" in c
               for c in ran)


def test_interrupted_arms_resume_two_at_a_time_before_the_fresh_ones(tmp_path):
    out = tmp_path / "out"
    _finished_probes(out, "base", "null")
    archive = _archives(tmp_path, ["toy2_base", "toy2_base_null"])
    stopped = ARMS[:3]
    for arm in stopped:
        (out / "sweep" / arm / ".hydra").mkdir(parents=True)
    # Each resume records how many resumes run beside it as it starts, then waits (up to 60 s) until
    # a second one has started or a first one has ended: run one at a time, the first would wait out
    # its minute alone and say so.
    marks = tmp_path / "marks"
    marks.mkdir()
    body = (f'case "$2" in resume=*) a=$(basename "${{2#resume=}}"); touch {marks}/start.$a; '
            f's=$(ls {marks} | grep -c start); e=$(ls {marks} | grep -c end); echo "$a running=$((s - e))" >> {marks}.log; '
            f'i=0; while [ $(ls {marks} | grep -c start) -lt 2 ] && [ $(ls {marks} | grep -c end) -lt 1 ]; do '
            f'i=$((i + 1)); [ $i -gt 600 ] && echo "$a waited alone" >> {marks}.log && break; sleep 0.1; done; '
            f'touch {marks}/end.$a;; esac')
    fake, calls = _fake_python(tmp_path, body)
    proc = _script(out, fake, archive)
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "marks.log").read_text().splitlines()
    assert "waited alone" not in "\n".join(log) and len(log) == 3
    assert max(int(x.split("running=")[1]) for x in log) == 2  # never three at once
    ran = calls.read_text().splitlines()
    resumed = [c for c in ran if c.startswith("train.py resume=")]
    assert sorted(resumed) == [f"train.py resume={out}/sweep/{a}" for a in stopped]
    sweep = ran.index(next(c for c in ran if c.startswith("train.py -m")))
    assert all(ran.index(c) < sweep for c in resumed) and ran[sweep].endswith(f"+arm={','.join(ARMS[3:])}")


def test_a_refused_restore_stops_the_script(tmp_path):
    out = tmp_path / "out"
    archive = _archives(tmp_path, [])
    (archive / "arms" / "grpo_s0").mkdir(parents=True)
    (archive / "arms" / "grpo_s0" / "manifest.json").write_text("{}")
    fake, calls = _fake_python(tmp_path, '[ "$3" = restore ] && exit 2; exit 0')
    proc = _script(out, fake, archive)
    assert proc.returncode == 2 and len(calls.read_text().splitlines()) == 1


def test_arms_that_finished_are_packed_even_when_the_sweep_fails(tmp_path):
    out = tmp_path / "out"
    _finished_probes(out, "base", "null")
    archive = _archives(tmp_path, ["toy2_base", "toy2_base_null"])
    # The sweep finishes grpo_s1 and grpo_s2, saves a checkpoint of grpo_shuffled_reward, then fails.
    ck = "checkpoints/checkpoint-50"
    fake, calls = _fake_python(tmp_path, f'if [ "$1" = train.py ]; then for a in grpo_s1 grpo_s2 grpo_shuffled_reward; '
                                         f'do mkdir -p {out}/sweep/$a/{ck} && echo ok > {out}/sweep/$a/{ck}/boundlab_complete; '
                                         f'done; for a in grpo_s1 grpo_s2; do echo ok > {out}/sweep/$a/training_done; '
                                         f'done; exit 1; fi')
    proc = _script(out, fake, archive)
    assert proc.returncode == 1
    ran = calls.read_text().splitlines()
    # The finished ones and the one stopped midway (to be resumed from its packing elsewhere).
    assert [c.split()[3] for c in ran if " pack " in c] == [f"{out}/sweep/{a}" for a in
                                                            ("grpo_s1", "grpo_s2", "grpo_shuffled_reward")]
    assert ran[-1].startswith("-m boundlab.probe.run_archive pack")  # nothing after the failure but packing


def test_pack_only_packs_every_arm_with_a_checkpoint(tmp_path):
    out = tmp_path / "out"
    (out / "sweep" / "grpo_s0").mkdir(parents=True)
    (out / "sweep" / "grpo_s0" / "training_done").write_text("ok\n")
    _complete_checkpoint(out / "sweep" / "grpo_s0")
    _complete_checkpoint(out / "sweep" / "grpo_s1", 100)  # stopped midway: packed to be resumed
    (out / "sweep" / "grpo_s2" / ".hydra").mkdir(parents=True)  # stopped before its first checkpoint
    (out / "sweep" / "grpo_s2" / "checkpoints" / "checkpoint-50").mkdir(parents=True)  # killed mid-save
    archive = _archives(tmp_path, [])
    fake, calls = _fake_python(tmp_path, '[ "$1" = -c ] && exit 1; exit 0')  # the store holds no large probe
    proc = _script(out, fake, archive, PACK_ONLY="1")
    assert proc.returncode == 0, proc.stderr
    assert [c for c in calls.read_text().splitlines() if "run_archive" in c] == [
        f"-m boundlab.probe.run_archive pack {out}/sweep/{a} --out {archive}/arms/{a} "
        f"--store {out}/store.sqlite --allow-unfinished" for a in ("grpo_s0", "grpo_s1")]
    # One that cannot be packed does not keep the others from it, and the script says so by its status.
    fake, calls = _fake_python(tmp_path, '[ "$1" = -c ] && exit 1; case "$4" in *grpo_s0) exit 2;; esac; exit 0')
    calls.unlink()
    proc = _script(out, fake, archive, PACK_ONLY="1")
    assert proc.returncode == 1 and len([c for c in calls.read_text().splitlines() if "run_archive" in c]) == 2


def test_the_base_focus_probe_runs_once_per_focus_set(tmp_path):
    out = tmp_path / "out"
    _finished_probes(out, "base", "null", *ARMS)
    for arm in ARMS:
        (out / "sweep" / arm).mkdir(parents=True)
        (out / "sweep" / arm / "training_done").write_text("ok\n")
    archive = _archives(tmp_path, ["toy2_base", "toy2_base_null", *(f"toy2_settled_{a}" for a in ARMS)])
    ids = out / "large" / "focus_ids.txt"
    # The stand-in's focus step writes the set in $IDS (unless it is there already: the real one
    # rewrites it only when it changes); its focus probe writes its problems.csv.
    fake, calls = _fake_python(tmp_path, f'[ "$2" = boundlab.report.focus ] && {{ cmp -s "$IDS" {ids} || cp "$IDS" {ids}; }}\n'
                                         f'case "$*" in *hydra.run.dir={out}/large/base_focus*) mkdir -p {out}/large/base_focus'
                                         f' && echo x > {out}/large/base_focus/problems.csv;; esac; exit 0')
    focus_runs = lambda: [c for c in calls.read_text().splitlines() if "model.name=toy2_base_focus" in c]  # noqa: E731
    (tmp_path / "set1").write_text("tw2-heldout-0001\n")
    assert _script(out, fake, archive, IDS=str(tmp_path / "set1")).returncode == 0
    assert len(focus_runs()) == 1
    assert any(c.startswith("report.py base=toy2_base_focus") for c in calls.read_text().splitlines())
    assert any(c.endswith("--models toy2_base_focus --out " + f"{archive}/toy2_base_focus.sqlite.xz")
               for c in calls.read_text().splitlines())
    os.utime(out / "large" / "base_focus" / "problems.csv", (5e9, 5e9))  # written after the set
    assert _script(out, fake, archive, IDS=str(tmp_path / "set1")).returncode == 0
    assert len(focus_runs()) == 1  # the same set: not probed again
    (tmp_path / "set2").write_text("tw2-heldout-0001\ntw2-heldout-0002\n")
    os.utime(out / "large" / "base_focus" / "problems.csv", (1e9, 1e9))  # older than the new set
    assert _script(out, fake, archive, IDS=str(tmp_path / "set2")).returncode == 0
    assert len(focus_runs()) == 2  # another set: probed again (a new task, a new probe key)
