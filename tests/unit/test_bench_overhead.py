"""bench/bench_memory.py, bench/bench_probe_cost.py and bench/bench_default_run.py (issue 36, items 1
and 6): the process-tree memory reader sees a child's (and a grandchild's) memory, and each script's
figures reach the harness's JSON shape under the names the table reads. The probes and training runs
are faked; no timing is asserted."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


harness = sys.modules.get("harness") or _load("harness")
mem = _load("bench_memory")
cost = _load("bench_probe_cost")
dflt = _load("bench_default_run")

# A child that starts a grandchild; each holds 48 MiB of touched memory, then prints its pid and waits.
HOLDER = textwrap.dedent("""
    import subprocess, sys, time
    buf = bytearray(48 * 1024 * 1024)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    if sys.argv[1] == "child":
        g = subprocess.Popen([sys.executable, "-c", sys.argv[2], "grandchild", ""], stdout=subprocess.PIPE, text=True)
        print(g.stdout.readline().strip(), flush=True)
    print("ready", flush=True)
    sys.stdin.read()
""")


def test_the_tree_reader_sees_a_child_and_a_grandchild_and_their_memory():
    child = subprocess.Popen([sys.executable, "-c", HOLDER, "child", HOLDER], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        grand_ready = child.stdout.readline().strip()
        assert grand_ready == "ready"  # the grandchild's line, passed on
        assert child.stdout.readline().strip() == "ready"
        pids = mem.tree_pids(os.getpid())
        assert child.pid in pids and len(pids) >= 3
        below = [p for p in mem.tree_pids(child.pid) if p != child.pid]
        assert len(below) == 1  # the grandchild
        own = mem.tree_memory(os.getpid())
        sub = mem.tree_memory(child.pid)
        assert sub["processes"] == 2
        # Two processes with 48 MiB each, touched: the child's tree holds at least 96 MiB.
        assert sub["rss"] >= 96 * MIB
        assert own["rss"] >= sub["rss"] + mem.rss_bytes(os.getpid()) - 8 * MIB
        if sub["pss"] is not None:
            assert sub["pss"] >= 90 * MIB
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def test_children_map_reads_ppid_after_a_comm_with_spaces_and_parens(tmp_path):
    for pid, comm, ppid in ((10, "python", 1), (11, "a (weird) name", 10), (12, "w", 11), (13, "x", 1)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({comm}) S {ppid} 0 0 0\n")
    (tmp_path / "self").mkdir()
    kids = {k: sorted(v) for k, v in mem.children_map(tmp_path).items()}
    assert kids == {1: [10, 13], 10: [11], 11: [12]}
    assert sorted(mem.tree_pids(10, tmp_path)) == [10, 11, 12]


def test_the_sampler_keeps_the_peaks_of_what_it_measures():
    seen = iter([{"rss": 1 * MIB, "pss": 1 * MIB, "processes": 1},
                 {"rss": 5 * MIB, "pss": 3 * MIB, "processes": 4},
                 {"rss": 2 * MIB, "pss": 2 * MIB, "processes": 2},
                 # the tree gone between listing and reading: no PSS this time, the peak stays
                 {"rss": 0.0, "pss": None, "processes": 1}])
    last = {"rss": 0.0, "pss": 0.0, "processes": 0}
    s = mem.TreeSampler(0, measure=lambda pid: next(seen, last))
    for _ in range(4):
        s._take()
    out = s.stop()  # never started: the peaks of the three samples taken by hand
    assert out["peak_tree_rss_mib"] == 5 and out["peak_tree_pss_mib"] == 3 and out["peak_tree_processes"] == 4
    assert out["tree_samples"] == 4


def test_memory_json_has_the_tree_figures_per_arm(tmp_path, monkeypatch):
    def fake(overrides, tmp, tag, env_extra, interval):
        big = 900.0 if "task=math500" in overrides else 500.0
        store = tmp / f"{tag}.sqlite"
        return ({"peak_tree_rss_mib": big, "peak_tree_pss_mib": big - 100, "peak_tree_processes": 3.0,
                 "ru_maxrss_mib": 400.0, "seconds": 1.0}, store, "")
    monkeypatch.setattr(mem, "run_probe", fake)
    monkeypatch.setattr(mem, "run_script", lambda script, tmp, tag, interval: {
        "peak_tree_rss_mib": 270.0, "peak_tree_processes": 5.0, "ru_maxrss_mib": 60.0, "seconds": 1.0})
    monkeypatch.setattr(mem, "store_stats", lambda p: {"bytes_per_sample": 120.0})
    monkeypatch.chdir(tmp_path)
    assert mem.main(["--quick", "--reps", "3", "--write"]) == 0
    doc = json.loads((tmp_path / "docs" / "bench" / "memory.json").read_text())
    figs = doc["figures"]
    assert figs["peak_tree_rss_mib_math"] == {"min": 900.0, "median": 900.0, "max": 900.0, "reps": 3}
    assert figs["peak_tree_rss_mib_toy_n256"]["median"] == 500.0
    assert figs["ru_maxrss_mib_toy_n256"]["reps"] == 3 and "toy_n256/bytes_per_sample" in figs
    assert doc["warmup_math"]["peak_tree_rss_mib"] == 900.0
    assert figs["peak_tree_processes_math_workers"]["median"] == 5.0
    assert doc["order"][1] == ["math", "math_workers", "toy_n256"]
    assert {"machine", "date", "command", "load", "order", "runs"} <= set(doc)


def test_probe_cost_pairs_off_and_detached_per_repetition(tmp_path, monkeypatch):
    walls = {("off", 0): 100.0, ("detached", 0): 110.0, ("detached", 1): 99.0, ("off", 1): 90.0,
             ("off", 2): 100.0, ("detached", 2): 102.0}
    calls = []

    def fake(mode, work, a, env):
        rep = sum(1 for m in calls if m == mode)
        calls.append(mode)
        out = {"seconds": walls[mode, rep], "train_wall_seconds": walls[mode, rep]}
        if mode == "detached":
            out.update(watcher_wall_seconds=walls[mode, rep] + 30, probes=4.0,
                       boundary_latency_seconds=10.0 * (rep + 1))
        return out
    monkeypatch.setattr(cost, "run_mode", fake)
    monkeypatch.chdir(tmp_path)
    assert cost.main(["--quick", "--write"]) == 0
    assert calls == ["off", "detached", "detached", "off", "off", "detached"]
    doc = json.loads((tmp_path / "docs" / "bench" / "probe_cost.json").read_text())
    ov = doc["figures"]["detached_overhead"]
    assert ov["reps"] == 3
    assert ov["min"] == pytest.approx(0.02) and ov["median"] == pytest.approx(0.1) and ov["max"] == pytest.approx(0.1)
    assert doc["figures"]["boundary_latency_seconds"] == {"min": 10.0, "median": 20.0, "max": 30.0, "reps": 3}
    assert doc["max_steps"] == cost.QUICK["max_steps"] and doc["overrides"] == cost.QUICK["extra"]


def test_default_run_counts_the_probes_and_writes_its_figures(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    assert dflt.count_probes(run) == 0
    (run / "probes.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in (0, 75, 150)))
    assert dflt.count_probes(run) == 3 and dflt.probed_steps(run) == [0, 75, 150]
    monkeypatch.setattr(dflt, "one_run", lambda timeout, extra, keep=None: {
        "seconds": 600.0, "default_run_seconds": 600.0, "default_run_checkpoints": 3.0, "finished": 1.0})
    monkeypatch.chdir(tmp_path)
    assert dflt.main(["--reps", "1", "--write"]) == 0
    doc = json.loads((tmp_path / "docs" / "bench" / "default_run.json").read_text())
    assert doc["figures"]["default_run_checkpoints"] == {"min": 3.0, "median": 3.0, "max": 3.0, "reps": 1}
    assert doc["figures"]["default_run_seconds"]["reps"] == 1 and doc["load"]["reps"] == 2


def test_memory_toy_arms_by_n(tmp_path, monkeypatch):
    seen = []

    def fake(overrides, tmp, tag, env_extra, interval):
        seen.append((tag, [o for o in overrides if o.startswith(("probe.n=", "probe.keep_text="))]))
        return ({"peak_tree_rss_mib": 500.0, "peak_tree_processes": 1.0, "ru_maxrss_mib": 500.0,
                 "seconds": 1.0}, tmp / "s.sqlite", "")
    monkeypatch.setattr(mem, "run_probe", fake)
    monkeypatch.setattr(mem, "store_stats", lambda p: {"bytes_per_sample": 120.0})
    assert mem.main(["--arms", "toy", "--toy-n", "16", "2048", "--keep-text", "compact", "--reps", "2",
                     "--keep", str(tmp_path)]) == 0
    assert [t for t, _ in seen] == ["toy_n16", "toy_n2048", "toy_n2048", "toy_n16"]
    assert dict(seen)["toy_n2048"] == ["probe.n=2048", "probe.keep_text=compact"]
