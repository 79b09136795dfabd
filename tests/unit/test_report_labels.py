"""report.py for a single default run: the model is labelled by what it is (algorithm, seed, step),
not by its run dir's start time, report.md names paths relative to the report (never an absolute
path to someone's home or store), and `reports/` is ignored by git."""

import subprocess
from pathlib import Path

from test_report_sections import make_run, report_cfg, rows

ROOT = Path(__file__).resolve().parents[2]


def _timestamped_run(tmp_path: Path) -> Path:
    run = make_run(tmp_path / "outputs" / "train" / "2026-12-06" / "07-37-33_grpo")
    (run / "run_info.json").write_text('{"algo": "grpo", "seed": 3}')  # as train.py writes it
    return run


def test_a_default_run_is_labelled_by_algorithm_seed_and_step(tmp_path):
    from boundlab.report.build import run

    cfg = report_cfg(tmp_path)
    r = _timestamped_run(tmp_path)
    cfg.base, cfg.runs, cfg.models = str(r), [str(r)], []
    out = run(cfg).parent
    models = rows(out / "models.csv")
    assert [m["model"] for m in models] == ["base", "grpo seed 3 step 4"]
    assert not any("07-37-33" in m["model"] for m in models)


def test_a_sweep_job_keeps_its_folder_name(tmp_path):
    from boundlab.report.inputs import read_run

    assert read_run(make_run(tmp_path / "0_grpo")).label == "0_grpo"


def test_report_md_has_no_absolute_paths(tmp_path):
    from boundlab.report.build import run

    cfg = report_cfg(tmp_path)
    r = _timestamped_run(tmp_path)
    cfg.base, cfg.runs = str(r), [str(r)]
    md = run(cfg).read_text()
    assert str(tmp_path) not in md
    assert "probe store `../store.sqlite`" in md
    assert "run ../outputs/train/2026-12-06/07-37-33_grpo, final checkpoint (step 4)" in md


def test_reports_folder_is_ignored_by_git(tmp_path):
    r = subprocess.run(["git", "check-ignore", "-q", "reports/x/report.md"], cwd=ROOT)
    assert r.returncode == 0
    assert "reports/" in (ROOT / ".gitignore").read_text().splitlines()
