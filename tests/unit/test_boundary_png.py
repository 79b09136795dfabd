"""boundary.png (issue 38): every point with its interval, the alarm's tier marked, tiers in the world's
order. The figure is inspected before it is saved (titles, bands, lines), not by pixels."""

import pytest

from boundlab.boundary import tracker as T
from boundlab.tasks.base import Problem, Task
from boundlab.plots import boundary as plots


def _g(p1, pn, lo=0.0, hi=1.0):
    return {"pass@1": p1, "pass@n": pn, "pass@1_ci_low": lo, "pass@1_ci_high": hi,
            "pass@n_ci_low": lo, "pass@n_ci_high": hi, "problems": 2}


def test_bands_and_the_alarm_tier_are_drawn(tmp_path, monkeypatch):
    base = {"kind": "base", "step": 0, **_g(0.2, 0.8, 0.1, 0.9), "groups": {"H1": _g(0.1, 0.9), "H2": _g(0.3, 0.7)}}
    ck = {"kind": "checkpoint", "step": 50, **_g(0.5, 0.6, 0.4, 0.7),
          "groups": {"H1": _g(0.4, 0.2), "H2": _g(0.6, 0.7)},
          "alarm": [{"scope": "H1", "delta_pass@n": -0.7}]}
    figs = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figs.append(fig) or path)
    overall = T._series(base, [ck], None, None)
    assert overall["pass@n_ci"] == [(0.1, 0.9), (0.4, 0.7)] and overall["alarm_steps"] == []
    panels = {t: T._series(base, [ck], None, t) for t in ("H1", "H2")}
    assert panels["H1"]["alarm_steps"] == [50] and panels["H2"]["alarm_steps"] == []
    plots.plot_boundary_panels(overall, tmp_path / "b.png", n=8, metric="strict", panels=panels, group_by="tier")
    axes = [a for a in figs[0].axes if a.get_visible()]
    titles = [a.get_title() for a in axes]
    assert titles[0].startswith("all problems") and "ALARM" not in titles[0]
    assert titles[1].startswith("tier=H1") and "ALARM at step 50" in titles[1]
    assert titles[2].startswith("tier=H2") and "ALARM" not in titles[2]
    # Two interval bands per panel (pass@1 and pass@n), a red alarm line on the H1 panel only.
    assert all(len(a.collections) == 2 for a in axes)
    red = [[ln for ln in a.get_lines() if ln.get_color() == "#c0392b"] for a in axes]
    assert [len(r) for r in red] == [0, 1, 0] and red[1][0].get_xdata()[0] == 50
    labels = figs[0].legends[0].get_texts()
    assert {"pass@1 95% CI", "pass@n 95% CI", "boundary alarm"} <= {t.get_text() for t in labels}


def test_groups_follow_the_worlds_order_not_first_seen():
    probs = [Problem(f"p{i}", "q", "1", {"tier": t}) for i, t in enumerate(["H2", "X", "E", "H1", "H2"])]
    task = Task("t", probs, group_by="tier", group_order=("E", "H1", "H2"))
    assert list(task.groups()) == ["E", "H1", "H2", "X"]  # X is unknown to the order: after, first-seen
    assert task.groups()["H2"] == [0, 4]
    assert list(task.with_problems(probs[:2]).groups()) == ["H2", "X"]
    assert list(Task("t", probs, group_by="tier").groups()) == ["H2", "X", "E", "H1"]


def test_the_toy2_task_lists_tiers_in_the_worlds_order():
    from boundlab.worlds.toyworld2.task import toy2_problems
    from boundlab.worlds.toyworld2.world import TIERS
    from boundlab.tasks import build_task
    from types import SimpleNamespace

    task = build_task(SimpleNamespace(name="toy2", split="test"))
    order = list(task.groups())
    assert order == [t for t in TIERS if t in order] and len(toy2_problems()) == len(task)
