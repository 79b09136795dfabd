"""bench/harness.py's ordering and statistics, with fake arms, a fake clock, a fake floor and a fake
load (no timing is asserted: every number here is made up and known)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_harness", ROOT / "bench" / "harness.py")
harness = importlib.util.module_from_spec(spec)
sys.modules["bench_harness"] = harness
spec.loader.exec_module(harness)


class Fake:
    """Records every call in order; the clock advances only when an arm runs (by its cost)."""

    def __init__(self):
        self.events: list[str] = []
        self.now = 0.0
        self.floor_calls = 0

    def clock(self):
        return self.now

    def arm(self, name, cost, figures):
        it = iter(figures)

        def go():
            self.events.append(name)
            self.now += cost
            return {"samples_per_s": next(it)}
        return go

    def floor(self):
        self.events.append("floor")
        self.floor_calls += 1
        return {"matmul": 100.0 * self.floor_calls}  # 100, 200, 300, ...

    def load(self):
        return (0.5 + len(self.events), 0.0, 0.0)


def test_orders_are_rotated_so_each_arm_takes_each_position_equally_often():
    orders = harness.rotated_orders(["a", "b", "c"], 6)
    assert orders[:3] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    for pos in range(3):
        assert sorted(o[pos] for o in orders) == ["a", "a", "b", "b", "c", "c"]
    assert harness.rotated_orders(["x", "y"], 3) == [["x", "y"], ["y", "x"], ["x", "y"]]


def test_arms_are_interleaved_with_the_floor_right_before_and_after_each():
    f = Fake()
    res = harness.run({"a": f.arm("a", 2.0, [1, 5, 3]), "b": f.arm("b", 4.0, [10, 30, 20])}, reps=3,
                      floor=f.floor, clock=f.clock, load=f.load)
    assert f.events == ["floor", "a", "floor", "floor", "b", "floor",
                        "floor", "b", "floor", "floor", "a", "floor",
                        "floor", "a", "floor", "floor", "b", "floor"]
    assert res["order"] == [["a", "b"], ["b", "a"], ["a", "b"]]
    figs = res["figures"]
    assert figs["a/samples_per_s"] == {"min": 1.0, "median": 3.0, "max": 5.0, "reps": 3}
    assert figs["b/samples_per_s"] == {"min": 10.0, "median": 20.0, "max": 30.0, "reps": 3}
    assert figs["a/seconds"] == {"min": 2.0, "median": 2.0, "max": 2.0, "reps": 3}
    assert figs["b/seconds"]["median"] == 4.0
    # a's floors: rep 0 (100, 200); rep 1 runs b first (500, 600), then a (700, 800); rep 2 (900, 1000).
    assert figs["a/floor_matmul"] == {"min": 150.0, "median": 750.0, "max": 950.0, "reps": 3}
    assert figs["a/floor_matmul_after_over_before"]["max"] == 2.0
    assert res["runs"][0]["floor_before"] == {"matmul": 100.0}
    assert res["runs"][0]["floor_after"] == {"matmul": 200.0}


def test_floor_fraction_uses_the_mean_of_the_rates_around_the_arm():
    f = Fake()

    def arm():
        f.now += 3.0
        # 150 FLOP of work: at rate R it needs 150 / R seconds; the arm took 3 s.
        return {"flop": 150.0, harness.FLOOR_KEY: lambda rates: 150.0 / rates["matmul"]}

    res = harness.run({"only": arm}, reps=2, floor=f.floor, clock=f.clock, load=f.load)
    fr = [r["figures"]["floor_fraction"] for r in res["runs"]]
    assert fr == pytest.approx([150.0 / 150.0 / 3.0, 150.0 / 350.0 / 3.0])
    assert harness.FLOOR_KEY not in res["runs"][0]["figures"]


def test_an_arm_reporting_its_own_seconds_keeps_them_and_ratios_are_paired_per_rep():
    f = Fake()
    ticks = iter([4.0, 2.0, 8.0, 1.0])

    def timed(name):
        def go():
            f.events.append(name)
            return {"seconds": next(ticks), "rate": 1.0}
        return go

    res = harness.run({"x": timed("x"), "y": timed("y")}, reps=2, clock=f.clock, load=f.load,
                      ratios=[("x", "y", "seconds")])
    # rep 0: x=4, y=2; rep 1 (y first): y=8, x=1 -> ratios 2.0 and 0.125.
    assert res["figures"]["x_over_y/seconds"] == {"min": 0.125, "median": 1.0625, "max": 2.0, "reps": 2}
    assert "x/floor_fraction" not in res["figures"]


def test_load_is_recorded_before_and_after_each_arm_and_the_json_has_the_shape(tmp_path):
    f = Fake()
    res = harness.run({"a": f.arm("a", 1.0, [1, 2, 3])}, reps=3, clock=f.clock, load=f.load)
    # No floor: events are only the arm's; the load reads 0.5 + events so far.
    assert [r["load_before"][0] for r in res["runs"]] == [0.5, 1.5, 2.5]
    assert [r["load_after"][0] for r in res["runs"]] == [1.5, 2.5, 3.5]
    assert res["load"]["min"] == 0.5 and res["load"]["max"] == 3.5 and res["load"]["reps"] == 6
    path = harness.write("fake", res, out_dir=tmp_path, command="python bench/x.py --n 4", model="toy")
    doc = json.loads(path.read_text())
    assert path.name == "fake.json"
    assert set(doc) >= {"figures", "machine", "date", "command", "load", "order", "runs", "model"}
    assert doc["figures"]["a/samples_per_s"] == {"min": 1.0, "median": 2.0, "max": 3.0, "reps": 3}
    assert doc["command"] == "python bench/x.py --n 4" and doc["machine"]["cores"] >= 1


def test_bad_arguments_fail_loudly():
    with pytest.raises(ValueError, match="reps"):
        harness.run({"a": lambda: {}}, reps=0)
    with pytest.raises(ValueError, match="both must be arms"):
        harness.run({"a": lambda: {}}, ratios=[("a", "z", "seconds")])
