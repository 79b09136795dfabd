"""experiment=remedies_lr and scripts/choose_lr.py (issue 39): every point of the search composes and
passes the start-up checks; the choice reads the training reward only, by hand on constructed runs."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from choose_lr import choose, late_reward  # noqa: E402


def test_late_reward_and_collapse_by_hand():
    # 6 points, thirds of 2: late = (0.1 + 0.0) / 2; earlier thirds 0.2 and 0.6 -> collapsed.
    mean, collapsed = late_reward([(1, 0.1), (2, 0.3), (3, 0.5), (4, 0.7), (5, 0.1), (6, 0.0)])
    assert mean == pytest.approx(0.05) and collapsed
    mean, collapsed = late_reward([(1, 0.1), (2, 0.2), (3, 0.3)])
    assert mean == pytest.approx(0.3) and not collapsed


def _run(sweep, name, remedy, point, rewards):
    run = sweep / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text(f"- +remedy={remedy}\n- +lr_search={point}\n")
    if rewards is None:
        return
    from boundlab.rundir.checkpoints import MARKER

    ck = run / "checkpoints" / f"checkpoint-{len(rewards)}"
    ck.mkdir(parents=True)
    (ck / MARKER).write_text("ok")
    (ck / "trainer_state.json").write_text(json.dumps(
        {"log_history": [{"step": i + 1, "reward": r} for i, r in enumerate(rewards)]}))


def test_the_choice_skips_collapsed_runs_and_names_missing_ones(tmp_path):
    s = tmp_path / "sweep"
    _run(s, "0_nsr_lr2e-4", "nsr", "lr2e-4", [0.3, 0.4, 0.2, 0.1, 0.0, 0.0])   # collapses
    _run(s, "1_nsr_lr5e-5", "nsr", "lr5e-5", [0.2, 0.3, 0.3, 0.3, 0.3, 0.3])
    _run(s, "2_nsr_lr2e-5", "nsr", "lr2e-5", [0.2, 0.2, 0.2, 0.25, 0.2, 0.2])
    _run(s, "3_nsr_lr5e-5_kl001", "nsr", "lr5e-5_kl001", None)                   # killed before a checkpoint
    arms = choose(s)
    assert arms["nsr"]["chosen"] == "lr5e-5"
    assert [m["setting"] for m in arms["nsr"]["missing"]] == ["lr5e-5_kl001"]
    assert {r["setting"]: r["collapsed"] for r in arms["nsr"]["runs"]} == {
        "lr2e-4": True, "lr5e-5": False, "lr2e-5": False}
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "choose_lr.py"), str(s)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "nsr: chosen lr5e-5; MISSING lr5e-5_kl001" in out.stdout
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "choose_lr.py"), str(tmp_path / "no")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: ")


@pytest.mark.parametrize("remedy", ["weighted_reinforce", "nsr"])
@pytest.mark.parametrize("point,lr,kl", [("lr2e-4", 2e-4, 0.0), ("lr5e-5", 5e-5, 0.0), ("lr2e-5", 2e-5, 0.0),
                                         ("lr5e-5_kl001", 5e-5, 0.001)])
def test_every_point_composes_and_passes_the_start_up_checks(remedy, point, lr, kl):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    from boundlab.config import check_keys, register_configs
    from boundlab.validate import validate

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=["experiment=remedies_lr", f"+remedy={remedy}",
                                                      f"+lr_search={point}"], return_hydra_config=True)
    check_keys(cfg)
    HydraConfig.instance().set_config(cfg)
    validate(cfg)
    assert (cfg.algo.name, cfg.algo.learning_rate, cfg.kl.coef, cfg.train.max_steps) == (remedy, lr, kl, 150)
    from boundlab.algos import check

    check(cfg)
    sweep = cfg.hydra.sweeper.params
    assert str(sweep["+remedy"]) == "weighted_reinforce,nsr" and str(sweep["+lr_search"]) == "lr2e-4,lr5e-5,lr2e-5,lr5e-5_kl001"
    assert sorted(p.stem for p in (ROOT / "conf" / "lr_search").glob("*.yaml")) == [
        "lr2e-4", "lr2e-5", "lr5e-5", "lr5e-5_kl001"]
