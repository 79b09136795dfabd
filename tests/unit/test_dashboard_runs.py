"""The dashboard's data for issue 38's run views: training curves from the latest complete
checkpoint's trainer_state.json, the W&B run id and link, and any indexed runs compared (with
their probes' differences named). Synthetic run dirs; the page itself is tested in
tests/integration/test_dashboard_runs_browser.py."""

import json
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the dashboard extra is not installed (pip install -e '.[dashboard]')")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
from starlette.testclient import TestClient  # noqa: E402

from boundlab.dashboard import data  # noqa: E402
from boundlab.dashboard.export import payload  # noqa: E402
from boundlab.dashboard.index import Index  # noqa: E402
from boundlab.dashboard.server import make_app  # noqa: E402
from boundlab.dashboard.synthetic import make_run  # noqa: E402
from boundlab.probe.store import Store  # noqa: E402
from boundlab.rundir import CHECKPOINT_COMPLETE, RUN_INFO  # noqa: E402


def write_checkpoint(run: Path, step: int, history: list[dict], complete: bool = True) -> Path:
    ck = run / "checkpoints" / f"checkpoint-{step}"
    ck.mkdir(parents=True)
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": history}))
    if complete:
        (ck / CHECKPOINT_COMPLETE).write_text("ok\n")
    return ck


def write_logger(run: Path, run_id: str | None, **logger) -> None:
    (run / ".hydra").mkdir(exist_ok=True)
    lines = ["logger:"] + [f"  {k}: {v}" for k, v in logger.items()]
    (run / ".hydra" / "config.yaml").write_text("\n".join(lines) + "\n")
    if run_id:
        (run / RUN_INFO).write_text(json.dumps({"wandb_run_id": run_id, "algo": "grpo"}))


def history(steps, scale=1.0):
    return [{"step": s, "epoch": s / 10, "reward": scale * s / 10, "reward_std": 0.1, "kl": 0.01 * s,
             "entropy": 1.0 - 0.01 * s, "loss": 0.5 / s} for s in steps]


@pytest.fixture()
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))
    store = Store(tmp_path / "store.sqlite")
    root = tmp_path / "out"
    make_run(root / "sweepA" / "0", store, checkpoints=2, problems=4, n=8, seed=0)
    make_run(root / "sweepA" / "1", store, checkpoints=2, problems=4, n=8, seed=1)
    make_run(root / "sweepB" / "0", store, checkpoints=2, problems=4, n=8, seed=2,
             settings={"n": 8, "temperature": 0.7})
    (root / "sweepB" / "multirun.yaml").write_text("{}\n")
    store.close()
    index = Index([root], store=str(tmp_path / "store.sqlite"))
    return root, index, TestClient(make_app(index), base_url="http://127.0.0.1:8050")


def _id(index, label_end):
    return next(r.id for r in index.runs if r.label.endswith(label_end))


def test_training_curves_from_the_latest_complete_checkpoint(world):
    root, index, client = world
    run = root / "sweepA" / "0"
    write_checkpoint(run, 2, history([1, 2]))
    write_checkpoint(run, 4, history([1, 2, 3, 4]))
    write_checkpoint(run, 6, history([1, 2, 3, 4, 5, 6], scale=9.0), complete=False)  # still being written
    rid = _id(index, "sweepA/0")
    got = client.get(f"/api/run/{rid}/training").json()
    assert got["checkpoint"] == "checkpoints/checkpoint-4" and got["step"] == 4 and got["note"] is None
    assert list(got["series"]) == ["reward", "reward_std", "kl", "entropy", "loss"]
    assert got["series"]["reward"] == {"step": [1, 2, 3, 4], "value": [0.1, 0.2, 0.3, 0.4]}
    assert got["series"]["kl"]["value"] == pytest.approx([0.01, 0.02, 0.03, 0.04])


def test_training_curves_skip_what_json_cannot_carry_and_keys_not_logged(world):
    root, index, client = world
    run = root / "sweepA" / "0"
    write_checkpoint(run, 3, [{"step": 1, "loss": float("nan"), "reward": 0.5},
                              {"step": 2, "loss": 0.25, "reward": float("inf")},
                              {"step": 3, "train_runtime": 9.0}])
    got = client.get(f"/api/run/{_id(index, 'sweepA/0')}/training")
    assert got.status_code == 200 and "NaN" not in got.text and "Infinity" not in got.text
    s = got.json()["series"]
    assert s == {"reward": {"step": [1], "value": [0.5]}, "loss": {"step": [2], "value": [0.25]}}


def test_a_run_without_a_checkpoint_says_so_in_one_line(world):
    root, index, client = world
    got = client.get(f"/api/run/{_id(index, 'sweepA/1')}/training").json()
    assert got["checkpoint"] is None and got["series"] == {}
    assert got["note"].startswith("No complete checkpoint yet") and "\n" not in got["note"]
    # an incomplete one does not count
    write_checkpoint(root / "sweepA" / "1", 2, history([1, 2]), complete=False)
    assert client.get(f"/api/run/{_id(index, 'sweepA/1')}/training").json()["checkpoint"] is None


def test_a_corrupt_trainer_state_is_named(world):
    root, index, client = world
    ck = write_checkpoint(root / "sweepA" / "0", 2, [])
    (ck / "trainer_state.json").write_text("{not json")
    got = client.get(f"/api/run/{_id(index, 'sweepA/0')}/training").json()
    assert got["series"] == {} and "trainer_state.json" in got["note"] and "not valid JSON" in got["note"]


def test_wandb_online_run_links_to_its_page(world):
    root, index, client = world
    write_logger(root / "sweepA" / "0", "abc123", name="wandb", entity="me", project="proj", mode="online")
    got = client.get(f"/api/run/{_id(index, 'sweepA/0')}/wandb").json()
    assert got["run_id"] == "abc123" and got["mode"] == "online"
    assert got["url"] == "https://wandb.ai/me/proj/runs/abc123" and got["sync"] is None


def test_wandb_offline_run_names_its_sync_command(world):
    root, index, client = world
    run = root / "sweepA" / "1"
    # mode left to W&B (null): the offline folder in the run dir says what happened
    write_logger(run, "xyz789", name="wandb", entity="me", project="proj")
    off = run / "wandb" / "offline-run-20261206_010203-xyz789"
    off.mkdir(parents=True)
    (run / "wandb" / "offline-run-20261206_010203-other1").mkdir()
    got = client.get(f"/api/run/{_id(index, 'sweepA/1')}/wandb").json()
    assert got["mode"] == "offline" and got["url"] is None and got["run_id"] == "xyz789"
    assert got["sync"] == f"wandb sync {off}" and got["offline_dir"] == "wandb/offline-run-20261206_010203-xyz789"
    assert "offline" in got["note"]


def test_wandb_offline_by_config_without_its_folder_and_disabled(world):
    root, index, client = world
    write_logger(root / "sweepA" / "0", "off111", name="wandb", project="proj", mode="offline")
    got = data.wandb_info(index.run(_id(index, "sweepA/0")))
    assert got["mode"] == "offline" and got["sync"] is None and got["url"] is None
    assert "offline" in got["note"] and "off111" in got["note"]
    write_logger(root / "sweepA" / "0", "dry333", name="wandb", project="proj", mode="dryrun")  # W&B's alias
    got = data.wandb_info(index.run(_id(index, "sweepA/0")))
    assert got["mode"] == "offline" and "dry333" in got["note"]
    write_logger(root / "sweepA" / "1", "dis222", name="wandb", project="proj", mode="disabled")
    got = data.wandb_info(index.run(_id(index, "sweepA/1")))
    assert got["mode"] == "disabled" and got["url"] is None and "disabled" in got["note"]


def test_wandb_online_without_an_entity_gives_no_guessed_link(world):
    root, index, client = world
    write_logger(root / "sweepA" / "0", "abc123", name="wandb", project="proj", mode="online")
    got = data.wandb_info(index.run(_id(index, "sweepA/0")))
    assert got["mode"] == "online" and got["url"] is None and "abc123" in got["note"]


def test_compare_any_runs_across_sweep_folders_names_unlike_probes(world):
    root, index, client = world
    a, b, c = _id(index, "sweepA/0"), _id(index, "sweepA/1"), _id(index, "sweepB/0")
    assert {index.run(a).sweep, index.run(c).sweep} == {"out/sweepA", "out/sweepB"}
    got = client.get(f"/api/compare?runs={a},{c}").json()
    assert [r["id"] for r in got["runs"]] == [a, c]
    for r, run in zip(got["runs"], (index.run(a), index.run(c))):
        last = [x for x in run.rows if x["kind"] == "checkpoint"][-1]
        assert r["step"] == last["step"] == 4 and r["last_curve"] == last["curve"] and len(r["last_curve"]) == 8
        assert r["base_curve"] == run.base["curve"]
    assert len({r["base_key"] for r in got["runs"]}) == 2  # two distinct bases
    assert {d["probe"] for d in got["differences"]} == {"last checkpoint", "base"}
    for d in got["differences"]:
        assert (d["a"], d["b"]) == (a, c) and d["differences"] == ["temperature (unset) vs 0.7"]
    # runs probed alike: nothing named
    same = client.get(f"/api/compare?runs={a},{b}").json()
    assert same["differences"] == [] and same["unknown"] == []


def test_compare_names_a_task_difference_and_refuses_unknown_ids(world, tmp_path):
    root, index, client = world
    store = Store(tmp_path / "store.sqlite")
    make_run(root / "other" / "run", store, checkpoints=1, problems=4, n=8, seed=3, task_fp="task-b")
    store.close()
    index.scan()
    a, o = _id(index, "sweepA/0"), _id(index, "other/run")
    got = client.get(f"/api/compare?runs={a},{o}").json()
    assert all(any(x.startswith("task fingerprint task vs task-b") for x in d["differences"])
               for d in got["differences"]) and len(got["differences"]) == 2
    assert client.get("/api/compare?runs=0,99").status_code == 404
    assert client.get("/api/compare?runs=0,../etc").status_code == 404


def test_compare_without_a_store_says_the_settings_are_unknown(tmp_path):
    root = tmp_path / "out"
    for i in range(2):
        make_run(root / f"r{i}", Store(tmp_path / f"s{i}.sqlite"), checkpoints=1, problems=3, n=4, seed=i)
    index = Index([root], store=str(tmp_path / "missing.sqlite"))
    got = data.compare(index, [0, 1])
    assert got["differences"] == [] and {u["probe"] for u in got["unknown"]} == {"last checkpoint", "base"}


def test_export_payload_carries_the_new_views(world):
    root, index, client = world
    write_checkpoint(root / "sweepA" / "0", 2, history([1, 2]))
    p = payload(index)
    rid = str(_id(index, "sweepA/0"))
    assert p["runs"][rid]["training"]["step"] == 2 and "wandb" in p["runs"][rid]
    assert len(p["compare"]["runs"]) == 3 and p["compare"]["differences"]


@pytest.mark.parametrize("url", ["/api/run/99/training", "/api/run/-1/wandb", "/api/run/x/training",
                                 "/api/run/..%2F..%2Fetc/wandb", "/api/compare?runs=99", "/api/compare?runs=a"])
def test_new_urls_name_runs_by_index_only(world, url):
    root, index, client = world
    r = client.get(url)
    assert r.status_code == 404, (url, r.status_code, r.text[:200])


def test_the_version_changes_when_a_checkpoint_completes(world):
    root, index, client = world
    v0 = client.get("/api/version").json()["version"]
    ck = write_checkpoint(root / "sweepA" / "1", 2, history([1, 2]), complete=False)
    assert client.get("/api/version").json()["version"] == v0  # being written: nothing to show yet
    (ck / CHECKPOINT_COMPLETE).write_text("ok\n")
    assert client.get("/api/version").json()["version"] != v0
    assert client.get(f"/api/run/{_id(index, 'sweepA/1')}/training").json()["step"] == 2
