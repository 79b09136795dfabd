"""The temperature control (boundlab.probe.entropy_match).

- The search on a known monotone entropy curve: the bisection's points by hand, and each way it ends
  (matched, already at or above, not reached, closest).
- On the toy2 base against itself: the "checkpoint" is the base sampled at T0 = 0.7, the target the
  base's entropy at T = 1.0; the search must come back to T ~ 1 (within 0.1), each point a stored
  probe under its own key, and the files and the W&B run (offline, read back) must say so. Also the
  base's entropy at T0 is below its entropy at 1.0, which is what the search relies on.
- Bad input: one line each.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from boundlab.probe.entropy_match import (ALREADY, CLOSEST, MATCHED, NOT_REACHED, search_temperature,
                                          spread)
from boundlab.worlds.toyworld2.paths import base_model_dir
from boundlab.tracking.reader import read_offline_run

ROOT = Path(__file__).resolve().parents[2]


def curve(f):
    seen = []

    def measure(t):
        seen.append(t)
        return f(t), f"key-{t}"
    return measure, seen


def test_bisection_points_by_hand():
    # h(T) = T^2, target 1.21 (T = 1.1), start 0.5, range [0.5, 1.5]: 0.5 -> 0.25, 1.5 -> 2.25,
    # 1.0 -> 1.0 (below), 1.25 -> 1.5625 (above), 1.125 -> 1.265625 (within 5% of 1.21: stop).
    measure, seen = curve(lambda t: t * t)
    s = search_temperature(measure, 1.21, 0.5, factor=3.0, steps=6, tol=0.05)
    assert seen == [0.5, 1.5, 1.0, 1.25, 1.125]
    assert (s.chosen, s.status) == (1.125, MATCHED)
    assert s.chosen_entropy == pytest.approx(1.265625)
    assert [p.key for p in s.points] == [f"key-{t}" for t in seen]
    # Too few steps to get within tol: the closest point tried.
    measure, seen = curve(lambda t: t * t)
    s = search_temperature(measure, 1.21, 0.5, factor=3.0, steps=1, tol=0.001)
    assert seen == [0.5, 1.5, 1.0] and (s.chosen, s.status) == (1.0, CLOSEST)


def test_search_ends_already_above_or_not_reached():
    measure, seen = curve(lambda t: 2.0 + t)
    s = search_temperature(measure, 1.0, 0.6)
    assert (s.chosen, s.status, seen) == (0.6, ALREADY, [0.6])
    measure, seen = curve(lambda t: 0.1 * t)
    s = search_temperature(measure, 1.0, 0.6, factor=3.0)
    assert (s.chosen, s.status, seen) == (1.8, NOT_REACHED, [0.6, 1.8])


def test_spread_picks_evenly_over_the_task():
    import boundlab.builtins  # noqa: F401
    from types import SimpleNamespace

    from boundlab.tasks import build_task

    task = build_task(SimpleNamespace(name="toy2", split="test", template=None, chat=False,
                                      system=None, verifier=None, path=None))
    sub = spread(task, 5)
    ids = [p.problem_id for p in task.problems]
    picked = [ids.index(p.problem_id) for p in sub.problems]
    assert picked == [0, round((len(ids) - 1) / 4), round((len(ids) - 1) / 2),
                      round(3 * (len(ids) - 1) / 4), len(ids) - 1]
    assert spread(task, 10**6) is task


def run_probe(tmp_path, *overrides, check=True):
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), *overrides], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"probe.py failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.mark.slow  # minutes under load (see README: the fast subset)
def test_toy2_base_against_itself_at_a_lower_temperature_finds_t_back(tmp_path):
    base = base_model_dir()
    run_dir = tmp_path / "run"
    proc = run_probe(tmp_path, "probe.limit=24", "probe.n=8", "probe.temperature=0.7",
                     "probe.bootstrap_iters=200", f"match_entropy.of={base}",
                     "match_entropy.base_temperature=1.0", "match_entropy.problems=24",
                     "match_entropy.n=8", "match_entropy.tol=0.03", "sampler.torch_threads=1",
                     f"hydra.run.dir={run_dir}")
    out = json.loads((run_dir / "entropy_match.json").read_text())
    s = out["search"]
    assert s["t0"] == 0.7 and s["base_temperature"] == 1.0 and s["t_max"] == 2.1
    assert s["status"] in (MATCHED, CLOSEST), s
    assert abs(s["chosen_temperature"] - 1.0) <= 0.1, s
    pts = {p["temperature"]: p["entropy"] for p in s["points"]}
    assert pts[0.7] < s["target_entropy"] < pts[2.1], "entropy must rise with T on toy2"
    assert abs(s["chosen_entropy"] - s["target_entropy"]) <= 0.03 * s["target_entropy"] or \
        s["status"] == CLOSEST
    # Every point is a stored probe with its own key and temperature; the full probes are there too.
    db = sqlite3.connect(tmp_path / "store.sqlite")
    stored = {k: json.loads(v)["temperature"] for k, v in db.execute("SELECT key, settings FROM probes")}
    for p in s["points"]:
        assert stored[p["key"]] == p["temperature"]
        n_ent, n_all = db.execute("SELECT COUNT(entropy), COUNT(*) FROM samples WHERE key=?",
                                  (p["key"],)).fetchone()
        assert n_ent == n_all == 24 * 8
    for who in ("base", "at_t0", "matched"):
        assert stored[out[who]["key"]] == out[who]["temperature"]
        assert out[who]["entropy"]["recorded"] == 24 * 8
    assert out["at_t0"]["entropy"]["mean"] < out["base"]["entropy"]["mean"]
    assert out["matched"]["temperature"] == s["chosen_temperature"]
    for who in ("vs_base_at_t0", "vs_base_matched"):
        d = out[who]
        assert d["delta_pass@n_ci_low"] <= d["delta_pass@n"] <= d["delta_pass@n_ci_high"]
    lines = (run_dir / "entropy_match.csv").read_text().splitlines()
    assert lines[0] == "k,base,checkpoint_t0,checkpoint_matched" and len(lines) == 1 + 8
    assert (run_dir / "entropy_match.png").stat().st_size > 1000
    assert f"chosen T = {s['chosen_temperature']:g}" in proc.stdout
    run = read_offline_run(run_dir)
    logged = [h for h in run.history if "probe/entropy_match/temperature" in h]
    assert logged and logged[0]["probe/entropy_match/temperature"] == s["chosen_temperature"]
    assert logged[0]["probe/entropy_match/target_entropy"] == pytest.approx(s["target_entropy"])
    assert logged[0]["probe/entropy_match/matched/pass@8"] == pytest.approx(out["matched"]["pass@k"]["8"])


@pytest.mark.parametrize("override, says", [
    ("match_entropy.of=/nonexistent/base", "match_entropy.of=/nonexistent/base: must be the base"),
    ("probe.temperature=0", "greedy decoding has no sampling entropy"),
    ("match_entropy.t_max_factor=1.0", "match_entropy.t_max_factor=1.0: must be > 1"),
])
def test_bad_input_is_one_line(tmp_path, override, says):
    of = [] if override.startswith("match_entropy.of") else [f"match_entropy.of={base_model_dir()}"]
    proc = run_probe(tmp_path, *of, override, "logger=none", f"hydra.run.dir={tmp_path / 'r'}",
                     check=False)
    assert proc.returncode == 2, proc.stderr
    # (probe.temperature=0 also gets the validator's usual note about greedy decoding.)
    err = [line for line in proc.stderr.splitlines()
           if line.strip() and not line.startswith("[boundlab] note:")]
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], proc.stderr


def test_a_probe_without_every_entropy_is_refused_not_averaged_over_a_part():
    from types import SimpleNamespace

    from boundlab.errors import UserError
    from boundlab.probe.entropy import EntropyStats
    from boundlab.probe.entropy_match import _entropy_of

    full = SimpleNamespace(key="k1", entropy=EntropyStats(8, 8, 0.5, 0.1, 0.5, 0.9))
    assert _entropy_of(full, "the base") == 0.5
    part = SimpleNamespace(key="k2", entropy=EntropyStats(8, 5, 0.5, 0.1, 0.5, 0.9))
    with pytest.raises(UserError, match="the base: 5 of 8 of the stored samples of probe k2"):
        _entropy_of(part, "the base")
    with pytest.raises(UserError, match="none of the stored samples"):
        _entropy_of(SimpleNamespace(key="k3", entropy=None), "the base")
