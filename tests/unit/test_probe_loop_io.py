"""The run-dir file helpers, checkpoint rotation, RNG isolation and the W&B train-metric re-log."""

from __future__ import annotations

import errno
import json
import random

import numpy as np
import pytest
import torch

from boundlab.rundir import io as rundir_io
from boundlab.rundir.io import RunDirError, append_jsonl, atomic_write_text, read_json, read_jsonl

ROWS = [{"step": 0, "kind": "base"}, {"step": 2, "kind": "checkpoint"}]
GOOD = "".join(json.dumps(r) + "\n" for r in ROWS)
TORN = '{"step": 4, "kind": "checkp'


def test_torn_last_line_is_skipped_reported_and_cut_off(tmp_path, capsys):
    f = tmp_path / "probes.jsonl"
    f.write_text(GOOD + TORN)
    assert read_jsonl(f, repair=True) == ROWS
    assert capsys.readouterr().err == (f"[boundlab] {f}:3: skipped a torn last line (27 bytes, cut off "
                                       f"by a crash or a full disk) and rewrote the file without it\n")
    assert f.read_text() == GOOD
    assert read_jsonl(f, repair=True) == ROWS
    assert capsys.readouterr().err == ""  # repaired once, silent after
    assert sorted(p.name for p in tmp_path.iterdir()) == ["probes.jsonl"]  # no temp file left


def test_a_reader_that_is_not_the_writer_skips_but_leaves_the_file(tmp_path, capsys):
    f = tmp_path / "probes.jsonl"
    f.write_text(GOOD + TORN)
    assert read_jsonl(f) == ROWS
    assert capsys.readouterr().err == (f"[boundlab] {f}:3: skipped a torn last line (27 bytes, cut off "
                                       f"by a crash or a full disk)\n")
    assert f.read_text() == GOOD + TORN


def test_report_reads_a_run_with_a_torn_line_without_touching_it(tmp_path):
    from boundlab.report.inputs import read_run

    (tmp_path / "probes.jsonl").write_text(GOOD + TORN)
    assert read_run(tmp_path).rows == ROWS
    assert (tmp_path / "probes.jsonl").read_text() == GOOD + TORN


def test_a_bad_line_that_is_not_the_last_is_an_error_naming_file_and_line(tmp_path):
    f = tmp_path / "probes.jsonl"
    f.write_text(json.dumps(ROWS[0]) + "\n" + TORN + "\n" + json.dumps(ROWS[1]) + "\n")
    with pytest.raises(RunDirError) as e:
        read_jsonl(f, repair=True)
    assert str(e.value).startswith(f"{f}:2: not a JSON object (")
    assert str(e.value).endswith("); only a torn last line is skipped, so fix or remove this line")
    # A JSON value that is not an object is as bad as a syntax error.
    f.write_text("[1, 2]\n" + GOOD)
    with pytest.raises(RunDirError, match=r"probes\.jsonl:1: not a JSON object"):
        read_jsonl(f)


def test_complete_last_line_without_newline_is_kept_and_appending_stays_parseable(tmp_path, capsys):
    f = tmp_path / "probes.jsonl"
    f.write_text(GOOD.rstrip("\n"))
    assert read_jsonl(f) == ROWS
    rows = append_jsonl(f, {"step": 4, "kind": "checkpoint"})
    assert rows == ROWS + [{"step": 4, "kind": "checkpoint"}]
    assert f.read_text() == GOOD + json.dumps({"step": 4, "kind": "checkpoint"}) + "\n"
    assert capsys.readouterr().err == ""


def test_append_after_a_torn_line_drops_it(tmp_path):
    f = tmp_path / "probes.jsonl"
    f.write_text(GOOD + TORN)
    append_jsonl(f, {"step": 4, "kind": "checkpoint"})
    assert [json.loads(x) for x in f.read_text().splitlines()] == ROWS + [{"step": 4, "kind": "checkpoint"}]


def test_disk_full_keeps_the_old_file_and_says_so(tmp_path, monkeypatch):
    f = tmp_path / "run_info.json"
    f.write_text('{"wandb_run_id": "abc"}\n')

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rundir_io.os, "fsync", full)
    with pytest.raises(OSError) as e:
        atomic_write_text(f, '{"wandb_run_id": "xyz"}\n')
    assert e.value.errno == errno.ENOSPC
    assert str(e.value) == (f"[Errno 28] no space left on device while writing {f} (the previous "
                            f"run_info.json is intact); free space and resume")
    assert f.read_text() == '{"wandb_run_id": "abc"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run_info.json"]


def test_read_json_names_a_corrupt_file(tmp_path):
    f = tmp_path / "run_info.json"
    assert read_json(f, {}) == {}
    f.write_text('{"wandb_run_id": "ab')
    with pytest.raises(RunDirError) as e:
        read_json(f, {}, "the W&B run id")
    assert str(e.value).startswith(f"{f} (the W&B run id) is not valid JSON: ")
    assert str(e.value).endswith("; restore it or delete it")


def _ckpts(root, steps):
    from boundlab.rundir.checkpoints import mark_complete

    for s in steps:
        d = root / f"checkpoint-{s}"
        d.mkdir(parents=True)
        (d / "model.safetensors").write_bytes(b"x" * 10)
        mark_complete(d)


def test_rotation_deletes_only_probed_checkpoints(tmp_path, capsys):
    from boundlab.rundir.checkpoints import checkpoints, rotate

    out = tmp_path / "checkpoints"
    _ckpts(out, [2, 4, 6])
    (out / "checkpoint-8").mkdir()  # incomplete (killed mid-save): neither counted nor deleted
    assert rotate(out, 1, probed={2}) == [out / "checkpoint-2"]
    assert capsys.readouterr().out == ("[boundlab] save_total_limit=1: keeping 2 checkpoints; steps [4] "
                                       "are not probed yet and are deleted once they are\n")
    assert [s for s, _ in checkpoints(out)] == [4, 6]
    assert rotate(out, 1, probed={2, 4, 6}) == [out / "checkpoint-4"]
    assert capsys.readouterr().out == ""
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint-6", "checkpoint-8"]
    assert rotate(out, None, probed={6}) == []
    # The newest `limit` are kept even when probed, and so is a protected (best) checkpoint.
    _ckpts(out, [10, 12])
    assert rotate(out, 2, probed={6, 10, 12}, keep={out / "checkpoint-6"}) == []


def test_marker_is_written_atomically(tmp_path):
    from boundlab.rundir.checkpoints import MARKER, is_complete

    _ckpts(tmp_path, [2])
    d = tmp_path / "checkpoint-2"
    assert is_complete(d) and (d / MARKER).read_text() == "ok\n"
    assert sorted(p.name for p in d.iterdir()) == [MARKER, "model.safetensors"]


def test_isolated_rng_leaves_every_generator_where_it_was():
    from boundlab.probe.rng import isolated_rng

    def draws():
        return (torch.rand(3).tolist(), random.random(), float(np.random.rand()))

    torch.manual_seed(1), random.seed(1), np.random.seed(1)
    expected = draws()
    torch.manual_seed(1), random.seed(1), np.random.seed(1)
    with isolated_rng():
        torch.manual_seed(99), random.seed(99), np.random.seed(99)
        inside = draws()
    assert inside != expected
    assert draws() == expected
    # Also when the block fails.
    torch.manual_seed(1), random.seed(1), np.random.seed(1)
    with pytest.raises(RuntimeError), isolated_rng():
        draws()
        raise RuntimeError
    assert draws() == expected


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_isolated_rng_restores_the_cuda_generator():
    from boundlab.probe.rng import isolated_rng

    torch.cuda.manual_seed(1)
    expected = torch.rand(3, device="cuda").tolist()
    torch.cuda.manual_seed(1)
    with isolated_rng():
        torch.cuda.manual_seed(99)
        torch.rand(3, device="cuda")
    assert torch.rand(3, device="cuda").tolist() == expected


def test_lost_train_rows_are_the_steps_wandb_does_not_hold():
    from boundlab.tracking.relog import train_rows_to_relog

    log_history = [{"loss": 0.5, "reward": 0.25, "epoch": 0.1, "step": 1},
                   {"loss": 0.4, "reward": 0.5, "epoch": 0.2, "step": 2},
                   {"loss": 0.3, "reward": 0.75, "epoch": 0.3, "step": 3},
                   {"train_runtime": 9.0, "train_loss": 0.4, "step": 3}]
    # A kept W&B segment holds step 1 only (the run dir's segment records say so).
    assert train_rows_to_relog(log_history, lambda step: step not in {1}) == [
        {"train/loss": 0.4, "train/reward": 0.5, "train/epoch": 0.2, "train/global_step": 2},
        {"train/loss": 0.3, "train/reward": 0.75, "train/epoch": 0.3, "train/global_step": 3},
    ]
    assert train_rows_to_relog(log_history, lambda step: step not in {1, 2, 3}) == []
