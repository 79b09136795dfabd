"""The tracking package: W&B offline runs written by our logger and read back by our reader."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from boundlab.tracking import (
    NoneLogger,
    RunLogger,
    WandbLogger,
    build_logger,
    has_wandb_credentials,
    passk_key,
    resolve_mode,
)
from boundlab.tracking import reader as rd
from boundlab.tracking.reader import read_offline_run

pytest.importorskip("wandb")


@pytest.fixture
def offline_env(tmp_path, monkeypatch):
    """No credentials, no WANDB_* overrides, a HOME without a netrc."""
    for var in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_DIR", "WANDB_RUN_ID", "WANDB_RESUME", "WANDB_PROJECT",
                "WANDB_ENTITY", "WANDB_BASE_URL", "NETRC", "RANK"):
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def _cfg(**kw):
    return SimpleNamespace(**{"name": "wandb", **kw})


def _png(path: Path) -> Path:
    from boundlab.plots.curves import plot_passk

    return plot_passk({"ckpt": ([1, 2, 4], [0.2, 0.3, 0.4], None, None)}, path, "t")


# --------------------------------------------------------------------------------------------------
# mode resolution


def test_mode_resolution(offline_env, monkeypatch):
    assert not has_wandb_credentials()
    assert resolve_mode(None) == "offline"
    assert resolve_mode("online") == "online"  # cfg.mode overrides auto
    (offline_env / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password abc123\n")
    (offline_env / ".netrc").chmod(0o600)
    assert has_wandb_credentials()
    assert resolve_mode(None) == "online"
    monkeypatch.setenv("WANDB_MODE", "dryrun")  # the environment always wins
    assert resolve_mode("online") == "offline"
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert resolve_mode("online") == "disabled"
    monkeypatch.setenv("WANDB_MODE", "bogus")
    with pytest.raises(ValueError, match="WANDB_MODE"):
        resolve_mode(None)
    monkeypatch.delenv("WANDB_MODE")
    (offline_env / ".netrc").unlink()
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert resolve_mode(None) == "online"


def test_names():
    assert passk_key(64) == "probe/pass@64"
    assert passk_key(1, task="math500") == "probe/math500/pass@1"


# --------------------------------------------------------------------------------------------------
# the no-op logger


def _exercise(logger: RunLogger, tmp_path: Path) -> None:
    logger.define_step_metric("probe", "probe/step")
    logger.log({"probe/pass@1": 0.25, "probe/step": 10})
    logger.log({"train/loss": 1.0}, step=3)
    logger.log_line_plot("probe/passk", [1, 2, 4], {"ckpt": [0.1, 0.2, 0.3], "base": [0.2, 0.3, 0.4]},
                         title="pass@k", xname="k", step_metrics={"probe/step": 10})
    logger.log_table("probe/problems", ["id", "n", "c"], [["p0", 8, 2], ["p1", 8, 0]], extra={"probe/step": 10})
    logger.log_image("probe/passk_png", _png(tmp_path / "passk.png"), extra={"probe/step": 10})
    logger.update_summary({"probe/boundary": 0.5})


def test_none_logger_has_the_same_methods(tmp_path):
    logger = build_logger(SimpleNamespace(name="none"), tmp_path / "run", {"a": 1})
    assert isinstance(logger, NoneLogger)
    public = {m for m in dir(RunLogger) if not m.startswith("_")}
    assert public <= set(dir(logger)) and public <= set(dir(WandbLogger))
    with logger:
        _exercise(logger, tmp_path)
    assert logger.finished and logger.run_id is None and logger.run_path is None and logger.dir is None
    logger.finish()  # idempotent
    assert not (tmp_path / "run").exists()  # wrote nothing


def test_wandb_mode_disabled_is_respected(offline_env, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    logger = build_logger(_cfg(mode="online"), tmp_path / "run", {"a": 1})
    assert isinstance(logger, NoneLogger) and logger.mode == "disabled"
    with logger:
        _exercise(logger, tmp_path)
    assert not (tmp_path / "run").exists()


def test_non_zero_rank_gets_a_none_logger(offline_env, tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    assert isinstance(build_logger(_cfg(), tmp_path / "run", {}), NoneLogger)


# --------------------------------------------------------------------------------------------------
# W&B offline: write, read back, resume


def test_wandb_offline_roundtrip(offline_env, tmp_path):
    run_dir = tmp_path / "run"
    config = {"algo": {"name": "grpo", "lr": 2e-4}, "seed": 7, "tags": ["a", "b"]}
    with build_logger(_cfg(group="g", run_name="r1", tags=["t"]), run_dir, config) as logger:
        assert isinstance(logger, WandbLogger) and logger.mode == "offline"
        _exercise(logger, tmp_path)
        logger.log({"probe/pass@1": 0.5, "probe/step": 20})
        run_id = logger.run_id
        wandb_dir = logger.dir
    assert logger.finished
    logger.finish()  # idempotent
    with pytest.raises(RuntimeError, match="finished"):
        logger.log({"x": 1})

    # W&B files live under the run dir.
    assert wandb_dir.resolve().is_relative_to(run_dir.resolve())
    files = rd.find_run_files(run_dir)
    assert len(files) == 1 and files[0].name == f"run-{run_id}.wandb"
    assert rd.has_exit_record(files[0])  # finish() waited for W&B to close the file

    run = read_offline_run(run_dir)
    assert run.run_id == run_id and run.exit_code == 0 and not run.truncated and run.corrupt_chunks == 0
    assert run.config == config
    assert run.project == "boundlab"
    assert run.metrics["probe/*"] == "probe/step"
    rows = [r for r in run.history if "probe/pass@1" in r]
    assert [(r["probe/step"], r["probe/pass@1"]) for r in rows] == [(10, 0.25), (20, 0.5)]
    assert run.series("probe/pass@1", "probe/step") == ([10, 20], [0.25, 0.5])
    assert any(r.get("train/loss") == 1.0 for r in run.history)
    assert run.summary["probe/boundary"] == 0.5 and run.summary["probe/pass@1"] == 0.5

    # Media: logged as dicts pointing at files inside the run's folder.
    sync_files = wandb_dir / "files"
    table = next(r["probe/problems"] for r in run.history if "probe/problems" in r)
    assert table["_type"] == "table-file"
    assert json.loads((sync_files / table["path"]).read_text())["data"] == [["p0", 8, 2], ["p1", 8, 0]]
    image = next(r["probe/passk_png"] for r in run.history if "probe/passk_png" in r)
    assert image["_type"] == "image-file" and (sync_files / image["path"]).is_file()
    assert any(k.startswith("probe/passk") and isinstance(v, dict) for r in run.history for k, v in r.items())

    # The file alone reads the same.
    assert read_offline_run(files[0]).history == run.history


def test_wandb_offline_resume_merges_parts(offline_env, tmp_path):
    run_dir = tmp_path / "run"
    with build_logger(_cfg(), run_dir, {"phase": "train", "seed": 1}) as first:
        first.define_step_metric("train", "train/global_step")
        for step in (1, 2):
            first.log({"train/loss": 1.0 / step, "train/global_step": step})
        run_id = first.run_id
    # A probe worker, later, in another logger: same id, resumed.
    with build_logger(_cfg(run_id=run_id), run_dir, {"probe_n": 8}) as second:
        assert second.run_id == run_id
        second.define_step_metric("probe", "probe/step")
        second.log({"probe/pass@1": 0.3, "probe/step": 2})
        second.update_summary({"probe/boundary": 0.9})
    # Another run in the same dir must not be merged in.
    with build_logger(_cfg(), run_dir, {"other": True}) as other:
        other.log({"train/loss": 9.0})

    assert len(rd.find_run_files(run_dir)) == 3
    with pytest.raises(ValueError, match="several"):
        read_offline_run(run_dir)
    run = read_offline_run(run_dir, run_id=run_id)
    assert len(run.parts) == 2
    assert [p.start_time for p in run.parts] == sorted(p.start_time for p in run.parts)
    assert run.series("train/loss", "train/global_step") == ([1, 2], [1.0, 0.5])
    assert run.series("probe/pass@1", "probe/step") == ([2], [0.3])
    assert all(r.get("train/loss") != 9.0 for r in run.history)
    assert run.config == {"phase": "train", "seed": 1, "probe_n": 8}
    assert run.summary["probe/boundary"] == 0.9 and run.summary["train/loss"] == 0.5
    assert run.metrics == {"train/global_step": None, "train/*": "train/global_step",
                           "probe/step": None, "probe/*": "probe/step"}


def test_online_without_credentials_falls_back_to_offline(offline_env, tmp_path):
    with build_logger(_cfg(mode="online"), tmp_path / "run", {"a": 1}) as logger:
        assert isinstance(logger, WandbLogger) and logger.mode == "offline"
        logger.log({"train/loss": 1.0})
    assert read_offline_run(tmp_path / "run").config == {"a": 1}


def test_backwards_step_keeps_values_in_a_new_row(offline_env, tmp_path):
    with build_logger(_cfg(), tmp_path / "run", {}) as logger:
        logger.log({"train/loss": 1.0}, step=5)
        with pytest.warns(RuntimeWarning, match="step 3 < W&B's current step 5"):
            logger.log({"train/loss": 2.0}, step=3)
        logger.log({"train/loss": 3.0}, step=10)
    rows = read_offline_run(tmp_path / "run").history
    assert [(r["_step"], r["train/loss"]) for r in rows] == [(5, 1.0), (6, 2.0), (10, 3.0)]


def test_exception_inside_with_finishes_run_with_exit_code(offline_env, tmp_path):
    with pytest.raises(KeyError):
        with build_logger(_cfg(), tmp_path / "run", {}) as logger:
            logger.log({"train/loss": 1.0})
            raise KeyError("boom")
    assert logger.finished
    assert read_offline_run(tmp_path / "run").exit_code == 1


def test_truncated_and_corrupt_files_yield_what_precedes_the_damage(offline_env, tmp_path):
    run_dir = tmp_path / "run"
    with build_logger(_cfg(), run_dir, {"k": "v"}) as logger:
        for i in range(1500):
            logger.log({"train/loss": float(i), "train/global_step": i, "train/pad": "x" * 40})
    src = rd.find_run_files(run_dir)[0]
    data = src.read_bytes()
    assert len(data) > 3 * rd.BLOCK_SIZE  # the test needs records split across blocks
    full = read_offline_run(src)
    steps = [r["train/global_step"] for r in full.history if "train/global_step" in r]
    assert steps == list(range(1500)) and not full.truncated

    # Cut mid-block, inside a chunk: everything before the cut survives, in order. (A cut that
    # lands exactly on a chunk boundary is a clean end, not a truncation; the records' sizes vary
    # from run to run, so the cut is placed inside whichever chunk covers the target offset.)
    cut = _inside_a_chunk(data, 2 * rd.BLOCK_SIZE + 1234)
    (tmp_path / "cut").mkdir()
    cut_file = tmp_path / "cut" / src.name
    cut_file.write_bytes(data[:cut])
    part = read_offline_run(cut_file)
    cut_steps = [r["train/global_step"] for r in part.history if "train/global_step" in r]
    assert part.truncated and part.exit_code is None and not rd.has_exit_record(cut_file)
    assert 0 < len(cut_steps) < 1500 and cut_steps == steps[: len(cut_steps)]
    assert part.config == {"k": "v"}

    # A flipped byte costs the rest of its block; reading resumes at the next block.
    bad = bytearray(data)
    bad[rd.BLOCK_SIZE + 100] ^= 0xFF
    bad_file = tmp_path / "bad" / src.name
    bad_file.parent.mkdir()
    bad_file.write_bytes(bytes(bad))
    damaged = read_offline_run(bad_file)
    got = [r["train/global_step"] for r in damaged.history if "train/global_step" in r]
    assert damaged.corrupt_chunks >= 1 and not damaged.truncated
    assert set(got) < set(steps) and got == sorted(got) and got[-1] == 1499
    assert len(got) > len(steps) - 2 * (rd.BLOCK_SIZE // 60)  # lost about one block's worth, no more


# --------------------------------------------------------------------------------------------------
# framing, byte by byte, against a reference writer of the format


def _inside_a_chunk(data: bytes, target: int) -> int:
    """An offset strictly inside the payload of the chunk that covers `target` (walking the framing
    from the file header)."""
    pos = rd.FILE_HEADER.size
    while pos < len(data):
        block_end = (pos // rd.BLOCK_SIZE + 1) * rd.BLOCK_SIZE
        if block_end - pos < rd.CHUNK_HEADER.size:
            pos = block_end
            continue
        _, length, _ = rd.CHUNK_HEADER.unpack_from(data, pos)
        end = pos + rd.CHUNK_HEADER.size + length
        if end > target and length >= 2:
            return pos + rd.CHUNK_HEADER.size + length // 2
        pos = end
    raise AssertionError(f"no chunk covers offset {target}")


def _write_log(payloads: list[bytes]) -> tuple[bytes, set[int]]:
    """The writer side of wandb's core/pkg/leveldb: header in block 0, zero trailers, IEEE CRC.

    Also returns the clean cut points: file lengths at which no record is half written.
    """
    out = bytearray(struct.pack("<4sHB", b":W&B", 0xBEE1, 0))
    clean = {len(out)}
    for p in payloads:
        first = True
        while True:
            left = rd.BLOCK_SIZE - len(out) % rd.BLOCK_SIZE
            if left < 7:
                out += b"\0" * left
                left = rd.BLOCK_SIZE
            room = left - 7
            chunk, p = p[:room], p[room:]
            last = not p
            ctype = (rd.FULL if last else rd.FIRST) if first else (rd.LAST if last else rd.MIDDLE)
            out += struct.pack("<IHB", zlib.crc32(bytes([ctype]) + chunk), len(chunk), ctype) + chunk
            first = False
            if last:
                break
        left = rd.BLOCK_SIZE - len(out) % rd.BLOCK_SIZE
        clean |= set(range(len(out), len(out) + (left + 1 if left < 7 else 1)))
    return bytes(out), clean


def _history_payload(i: int, pad: int) -> bytes:
    from wandb.proto import wandb_internal_pb2 as pb

    rec = pb.Record()
    item = rec.history.item.add()
    item.key = "i"
    item.value_json = str(i)
    item = rec.history.item.add()
    item.nested_key.extend(["blob", "s"])
    item.value_json = json.dumps("y" * pad)
    return rec.SerializeToString()


def _payload_of_size(i: int, size: int) -> bytes:
    pad = max(0, size - len(_history_payload(i, 0)))
    while len(p := _history_payload(i, pad)) > size:
        pad -= 1
    assert len(p) == size
    return p


# Block 0 holds 32761 bytes after the file header; a first record of 32754 - r bytes leaves r bytes.
@pytest.mark.parametrize("left", [0, 1, 6, 7, 8, None])
def test_framing_across_block_edges(tmp_path, left):
    if left is None:  # records spanning several blocks: FIRST, MIDDLE..., LAST
        payloads = [_history_payload(i, 40_000 + 30_011 * i) for i in range(7)]
    else:  # the next chunk header fits exactly, not at all (zero trailer), or leaves an empty chunk
        payloads = [_payload_of_size(0, 32754 - left)] + [_history_payload(i, 50 * i) for i in range(1, 7)]
        assert (7 + 7 + len(payloads[0])) % rd.BLOCK_SIZE == (rd.BLOCK_SIZE - left) % rd.BLOCK_SIZE
    data, clean = _write_log(payloads)
    stats = rd.ScanStats()
    assert list(rd.iter_record_bytes(data, stats)) == payloads
    assert stats == rd.ScanStats(records=7)
    f = tmp_path / "run-abc.wandb"
    f.write_bytes(data)
    run = read_offline_run(f)
    assert run.run_id == "abc"  # no run record: the id comes from the file name
    assert [r["i"] for r in run.history] == list(range(7))
    from wandb.proto import wandb_internal_pb2 as pb

    rec = pb.Record.FromString(payloads[3])
    assert run.history[3]["blob"] == {"s": json.loads(rec.history.item[1].value_json)}
    # Every cut point yields a prefix of the records.
    cuts = set(range(0, len(data), max(1, len(data) // 97))) | {c + d for c in clean for d in (-1, 0, 1)}
    for cut in sorted(c for c in cuts if 0 <= c <= len(data)):
        got = list(rd.iter_record_bytes(data[:cut], s := rd.ScanStats()))
        assert got == payloads[: len(got)], cut
        assert s.truncated == (0 < cut and cut not in clean), cut


def test_not_a_wandb_file(tmp_path):
    f = tmp_path / "run-x.wandb"
    f.write_bytes(b"hello world, not a run file")
    with pytest.raises(ValueError, match="not a W&B run file"):
        read_offline_run(f)
    with pytest.raises(FileNotFoundError):
        read_offline_run(tmp_path / "empty_dir_that_does_not_exist")


# --------------------------------------------------------------------------------------------------
# plots


def test_plots_write_pngs(tmp_path):
    from boundlab.plots.boundary import plot_boundary
    from boundlab.plots.curves import plot_passk

    ks = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    ckpt = [0.4, 0.5, 0.58, 0.64, 0.69, 0.72, 0.74, 0.75, 0.76]
    base = [0.2, 0.33, 0.46, 0.58, 0.68, 0.76, 0.82, 0.86, 0.9]
    out = plot_passk(
        {"base": (ks, base, [b - 0.03 for b in base], [b + 0.03 for b in base]),
         "GRPO step 400": (ks, ckpt, [c - 0.03 for c in ckpt], [c + 0.03 for c in ckpt])},
        tmp_path / "fig" / "passk.png", "pass@k: base vs GRPO")
    assert out == tmp_path / "fig" / "passk.png" and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = plot_boundary([0, 100, 200, 300], [0.2, 0.3, 0.38, 0.42], [0.9, 0.88, 0.84, 0.8], 0.2, 0.9,
                        tmp_path / "boundary.png", n=256)
    assert out.stat().st_size > 10_000
