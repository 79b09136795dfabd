"""The entropy view's recording (boundlab.sampling, boundlab.probe.entropy, the store column).

- `token_entropy` and both samplers' warping against hand-computed entropies of known distributions
  (temperature and top-p included).
- On the toy2 base, both engines (the compact decoder and `generate`): recording the entropy changes
  no drawn sample (same seed, same texts, token counts and ends), and each sample's recorded mean
  equals the entropy recomputed from the model's own forward over the sampled tokens, warped the
  same way (temperature 0.7, top-p 0.9).
- The store: the column round-trips, survives keep_text=compact, and a store made before it existed
  reads (writable or read-only) with entropy None and no entropy view.
- The summary: mean and quantiles by hand, samples without an entropy left out and counted.
"""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from boundlab.probe.entropy import probe_entropy, summarize, summary_line
from boundlab.probe.store import SampleRow, Store
from boundlab.sampling.base import GenSettings, token_entropy
from boundlab.sampling.compact import CompactDecoder
from boundlab.sampling.hf import EntropyRecorder, HFSampler
from boundlab.worlds.toyworld2.paths import base_model_dir

PROMPTS = ["Q:9+6*1*5;", "Q:2#7;", "Q:(3+4)*2-1#5+8;"]


def h(ps):
    return -sum(p * math.log(p) for p in ps if p > 0)


def test_token_entropy_of_known_distributions():
    logits = torch.tensor([[math.log(0.5), math.log(0.25), math.log(0.25)],
                           [0.0, 0.0, 0.0], [3.0, float("-inf"), 3.0]])
    got = token_entropy(logits)
    assert torch.allclose(got, torch.tensor([1.5 * math.log(2), math.log(3), math.log(2)]), atol=1e-6)
    # Temperature 2 on probabilities (0.8, 0.2): softmax(log p / 2) = (2/3, 1/3).
    raw = torch.tensor([[math.log(0.8), math.log(0.2)]])
    want = h([2 / 3, 1 / 3])
    assert float(token_entropy(CompactDecoder._warp(raw, 2.0, 1.0))) == pytest.approx(want, abs=1e-6)
    rec = EntropyRecorder(2.0, 1.0)
    assert rec(None, raw) is raw  # the scores go on unchanged
    assert float(rec.steps[0]) == pytest.approx(want, abs=1e-6)
    # top-p 0.6 on (0.5, 0.3, 0.2): the 0.2 token is cut (ascending cumulative 0.2 <= 0.4); the
    # rest renormalises to (0.625, 0.375).
    raw = torch.tensor([[math.log(0.5), math.log(0.3), math.log(0.2)]])
    want = h([0.625, 0.375])
    assert float(token_entropy(CompactDecoder._warp(raw, 1.0, 0.6))) == pytest.approx(want, abs=1e-6)
    rec = EntropyRecorder(1.0, 0.6)
    rec(None, raw)
    assert float(rec.steps[0]) == pytest.approx(want, abs=1e-6)
    assert rec.row_means([1]) == [pytest.approx(want, abs=1e-6)]


@torch.inference_mode()
def recomputed(model, tok, prompt: str, text_ids: list[int], s: GenSettings) -> float:
    """The mean entropy of the warped next-token distributions over the sampled tokens, from one
    full forward of prompt + sample (no left padding, no cache)."""
    p = tok([prompt], return_tensors="pt")["input_ids"]
    ids = torch.cat([p, torch.tensor([text_ids])], dim=1)
    logits = model(input_ids=ids).logits[0, p.shape[1] - 1: ids.shape[1] - 1]
    return float(token_entropy(CompactDecoder._warp(logits, s.temperature, s.top_p)).mean())


@pytest.mark.parametrize("engine", ["auto", "generate"])
def test_recording_changes_no_sample_and_matches_a_recomputation(engine):
    torch.set_num_threads(1)
    d = base_model_dir()
    model, tok = AutoModelForCausalLM.from_pretrained(d).eval(), AutoTokenizer.from_pretrained(d)
    # Hot enough that the warped distributions are not point masses on the shipped base (at T 0.7,
    # top-p 0.9 every step of its samples keeps a single token: entropy 0 everywhere, nothing tested).
    s = GenSettings(temperature=1.2, top_p=0.95, max_new_tokens=40)
    on = HFSampler(model, tok, batch_size=24, engine=engine, entropy=True)
    off = HFSampler(model, tok, batch_size=24, engine=engine, entropy=False)
    assert on.key_engine(s) == ("compact" if engine == "auto" else None)
    req = [(p, 8) for p in PROMPTS]
    a, b = on.generate(req, s, seed=11), off.generate(req, s, seed=11)
    flat_a = [c for g in a for c in g]
    flat_b = [c for g in b for c in g]
    assert [(c.text, c.n_tokens, c.finish) for c in flat_a] == \
        [(c.text, c.n_tokens, c.finish) for c in flat_b]
    assert all(c.entropy is None for c in flat_b)
    assert all(c.entropy is not None and math.isfinite(c.entropy) and c.entropy >= 0 for c in flat_a)
    assert len({round(c.entropy, 6) for c in flat_a}) > 1
    # Each recorded mean is the entropy of what was sampled from, token by token.
    for (prompt, _), group in zip(req, a):
        for c in group[:3]:
            ids = tok(c.text, add_special_tokens=False)["input_ids"]
            if c.finish == "eos":
                ids = ids + [tok.eos_token_id]
            assert len(ids) == c.n_tokens, "the text must re-tokenise to the sampled tokens"
            assert c.entropy == pytest.approx(recomputed(model, tok, prompt, ids, s), abs=2e-4)
    # Greedy decoding records none (a point mass is not "entropy 0 at the probe temperature").
    greedy = on.generate([(PROMPTS[0], 1)], GenSettings(0.0, 1.0, 10), seed=0)
    assert greedy[0][0].entropy is None


def rows(pid: str, ents: list[float | None], correct: bool = False) -> list[SampleRow]:
    return [SampleRow(pid, i, f"text {pid} {i}", None, correct, None, "wrong", 3, None, entropy=e)
            for i, e in enumerate(ents)]


def test_store_round_trip_compact_mode_and_summary(tmp_path):
    st = Store(tmp_path / "s.sqlite")
    st.add_samples("k", rows("a", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), keep_text="compact")
    st.add_samples("k", rows("b", [None, 0.5]))
    got = st.samples("k", "a")
    assert [r.entropy for r in got] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert got[5].text_dropped, "compact mode dropped this text and must keep its entropy"
    stats, values = probe_entropy(st, "k", ["a", "b"], n_max=4)
    assert np.isnan(values[1][0]) and values[0].tolist() == [1.0, 2.0, 3.0, 4.0]
    # The first 4 of a, and b's one recorded value: (1, 2, 3, 4, 0.5).
    assert (stats.samples, stats.recorded) == (6, 5)
    assert stats.mean == pytest.approx(2.1)
    assert stats.p50 == pytest.approx(2.0)
    assert stats.p10 == pytest.approx(0.5 + 0.4 * 0.5)  # linear between 0.5 and 1.0
    assert stats.p90 == pytest.approx(3.0 + 0.6 * 1.0)
    assert "only 5 of 6" in summary_line(stats)
    assert summarize([np.array([np.nan])]) is None
    st.close()


OLD_SCHEMA = """CREATE TABLE samples (key TEXT NOT NULL, problem_id TEXT NOT NULL, idx INTEGER NOT NULL,
text TEXT NOT NULL, extracted TEXT, correct INTEGER NOT NULL, strict INTEGER, outcome TEXT,
n_tokens INTEGER, info TEXT, PRIMARY KEY (key, problem_id, idx)) WITHOUT ROWID;"""


@pytest.mark.parametrize("writable", [True, False])
def test_a_store_from_before_the_column_reads_with_entropy_none(tmp_path, writable):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO samples VALUES ('k', 'a', 0, 'x', NULL, 1, NULL, 'correct', 2, NULL)")
    db.commit()
    db.close()
    st = Store(path, writable=writable)
    assert st.has_entropy is writable  # a writable store gets the column on open
    (r,) = st.samples("k")
    assert (r.text, r.correct, r.entropy, r.text_hash) == ("x", True, None, None)
    stats, _ = probe_entropy(st, "k", ["a"])
    assert stats is None and summary_line(stats) is None
    if writable:  # new samples beside old ones: only those count, and the count says so
        st.add_samples("k", rows("a", [0.0, 1.0])[1:])
        stats, _ = probe_entropy(st, "k", ["a"])
        assert (stats.samples, stats.recorded, stats.mean) == (2, 1, 1.0)
    st.close()


# -- beside the boundary: rows, boundary.csv, groups, W&B keys, entropy.png ----------------------
class EntropySampler:
    """Scripted: the base's samples have entropy 1, 2, 3, 4 (by sample index), the checkpoint's 0.5
    on problem a and 0.25 on problem b."""

    def __init__(self, model_dir):
        self.kind = model_dir.rsplit("/", 1)[-1]
        self.rows_per_call = 64

    def generate(self, requests, settings, seed):
        from boundlab.sampling.base import Completion

        out = []
        for prompt, count in requests:
            if self.kind == "base":
                out.append([Completion("3", 1, "eos", float(i + 1)) for i in range(count)])
            else:
                out.append([Completion("3", 1, "eos", 0.5 if prompt.endswith("qa") else 0.25)] * count)
        return out

    def close(self):
        pass


class Recorder:
    def __init__(self):
        self.logged, self.images = [], []

    def define_step_metric(self, *a):
        pass

    def log(self, m):
        self.logged.append(m)

    def log_line_plot(self, *a, **k):
        pass

    def log_table(self, *a, **k):
        pass

    def log_image(self, key, *a, **k):
        self.images.append(key)


def test_rows_csv_groups_and_wandb_keys(tmp_path, capsys):
    import csv

    from boundlab.boundary.tracker import build_tracker
    from boundlab.probe.context import ProbeContext
    from boundlab.probe.spec import ProbeSpec
    from boundlab.tasks.base import Problem, Task
    from boundlab.verify import build_verifier

    task = Task("t", [Problem("a", "qa", "3", {"tier": "x"}), Problem("b", "qb", "3", {"tier": "y"})],
                verifier="exact", template="{question}", group_by="tier")
    for d in ("base", "ckpt"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "config.json").write_text('{"which": "%s"}' % d)
    store = Store(tmp_path / "s.sqlite")
    verifier = build_verifier("exact")
    logger = Recorder()
    run = tmp_path / "run"
    run.mkdir()
    try:
        tr = build_tracker(run, ProbeContext(task, store, verifier, lambda d: (EntropySampler(d), None), logger,
                                             progress=False),
                           ProbeSpec(n=4, gen=GenSettings(max_new_tokens=8), seed=0, bootstrap_iters=10))
        tr.probe_base(str(tmp_path / "base"))
        tr.probe_checkpoint(5, str(tmp_path / "ckpt"))
    finally:
        verifier.close()
        store.close()
    with (run / "boundary.csv").open() as f:
        rows = {r["kind"]: r for r in csv.DictReader(f)}
    # Base: 1, 2, 3, 4 on each problem: mean 2.5; p10 = 1.0 and p90 = 4.0 (linear interpolation over
    # 1,1,2,2,3,3,4,4: positions 0.7 and 6.3 fall between equal values).
    vals = np.array([1, 2, 3, 4, 1, 2, 3, 4], dtype=float)
    b = rows["base"]
    assert float(b["entropy_mean"]) == pytest.approx(2.5)
    assert float(b["entropy_p10"]) == pytest.approx(1.0) == np.quantile(vals, 0.1)
    assert float(b["entropy_p90"]) == pytest.approx(4.0) == np.quantile(vals, 0.9)
    assert b["entropy_samples"] == "8" and b["delta_entropy_mean"] == ""
    c = rows["checkpoint"]
    assert float(c["entropy_mean"]) == pytest.approx(0.375)
    assert float(c["delta_entropy_mean"]) == pytest.approx(0.375 - 2.5)
    with (run / "boundary_groups.csv").open() as f:
        groups = {(r["kind"], r["group"]): r for r in csv.DictReader(f)}
    assert float(groups[("checkpoint", "x")]["entropy_mean"]) == pytest.approx(0.5)
    assert float(groups[("checkpoint", "y")]["delta_entropy_mean"]) == pytest.approx(0.25 - 2.5)
    ck = [m for m in logger.logged if m.get("probe/step") == 5][0]
    assert ck["probe/entropy/mean"] == pytest.approx(0.375)
    assert ck["probe/entropy/delta_mean"] == pytest.approx(-2.125)
    assert ck["probe_tier/x/entropy/mean"] == pytest.approx(0.5)
    assert (run / "entropy.png").stat().st_size > 1000
    assert "probe/entropy/plot" in logger.images
    out = capsys.readouterr().out
    assert "entropy 0.3750 nats/token (d vs base -2.1250)" in out
