"""The Figure 2 grid (boundlab.report.grid): curves read from a store, checked against hand-computed
pass@k, one panel per benchmark, the newest probe of a model per task, and missing cells listed."""

import csv
import time

import pytest

from boundlab.probe.store import SampleRow, Store
from boundlab.report.grid import grid_curves, main, plot_grid


def _probe(store, key, model, task, counts):
    store.ensure_probe(key, "fp-" + model, "tfp-" + task, {}, model_name=model, task_name=task)
    rows = [SampleRow(pid, i, "", None, i < c, None, "correct" if i < c else "wrong", 1)
            for pid, (n, c) in counts.items() for i in range(n)]
    store.add_samples(key, rows)


@pytest.fixture()
def store(tmp_path):
    s = Store(tmp_path / "store.sqlite")
    _probe(s, "old000base", "tiny-base", "gsm8k", {"a": (4, 4), "b": (4, 4)})  # superseded below
    time.sleep(0.01)
    _probe(s, "new000base", "tiny-base", "gsm8k", {"a": (4, 1), "b": (4, 0)})
    _probe(s, "rl0000aaaa", "tiny-rl", "gsm8k", {"a": (4, 2), "b": (4, 0)})
    _probe(s, "base00amc2", "tiny-base", "amc23", {"x": (2, 1)})
    yield s
    s.close()


def test_curves_match_hand_computed_pass_at_k(store):
    panels, missing = grid_curves(store, {"base": "tiny-base", "RL": "rl0000"}, ["gsm8k", "amc23"],
                                  iters=50)
    assert missing == ["amc23/RL"]
    base, rl = panels["gsm8k"]["base"], panels["gsm8k"]["RL"]
    # base: c = 1 and 0 of n = 4 -> pass@1 = (1/4 + 0) / 2, pass@2 = (1 - C(3,2)/C(4,2)) / 2, pass@4 = 1/2
    assert list(base.pass_at_k) == pytest.approx([0.125, 0.25, 0.375, 0.5])
    # RL: c = 2 -> pass@1 = 1/4, pass@2 = (1 - 1/6) / 2
    assert list(rl.pass_at_k[:2]) == pytest.approx([0.25, 5 / 12])
    assert list(panels["amc23"]["base"].pass_at_k) == pytest.approx([0.5, 1.0])
    assert all(lo <= v <= hi for lo, v, hi in zip(base.ci_low, base.pass_at_k, base.ci_high))


def test_one_panel_per_benchmark_and_the_cli(store, tmp_path, capsys):
    panels, _ = grid_curves(store, {"base": "tiny-base"}, ["gsm8k", "amc23", "minerva"], iters=20)
    out = plot_grid(panels, tmp_path / "g.png")
    assert out.stat().st_size > 10_000
    main(["--store", str(store.path), "--models", "base=tiny-base", "RL=tiny-rl", "--tasks", "gsm8k",
          "amc23", "--out", str(tmp_path / "cli.png"), "--iters", "20"])
    printed = capsys.readouterr().out
    assert "no probe: amc23/RL" in printed and (tmp_path / "cli.png").is_file()
    with (tmp_path / "cli.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {(r["task"], r["model"]) for r in rows} == {("gsm8k", "base"), ("gsm8k", "RL"), ("amc23", "base")}
    assert [float(r["pass_at_k"]) for r in rows if r["model"] == "RL"][:2] == pytest.approx([0.25, 5 / 12], abs=1e-6)
    with pytest.raises(SystemExit, match="label=NAME_OR_KEY"):
        main(["--store", str(store.path), "--models", "tiny-base", "--out", str(tmp_path / "x.png")])
