"""probe.keep_text=compact: which texts a compact store keeps, what a reader gets, the clear error,
old stores, and a changed verifier meeting a compact probe."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from boundlab.errors import TextDropped
from boundlab.probe.context import ProbeContext
from boundlab.probe.runner import probe_model
from boundlab.probe.spec import ProbeSpec
from boundlab.probe.store import KEEP_WRONG, SampleRow, Store, text_hash
from boundlab.probe.verdicts import _rescore
from boundlab.sampling.base import Completion, GenSettings, Sampler
from boundlab.tasks.base import Problem, Task
from boundlab.verify import build_verifier


def row(pid, i, correct, outcome=None, text=None):
    return SampleRow(pid, i, f"text {pid}{i}" if text is None else text, str(i), correct, None,
                     outcome or ("correct" if correct else "wrong"), 7 + i, {"i": i})


def test_compact_keeps_correct_timeouts_and_the_first_wrong_ones(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    # Problem a: correct at 0 and 5, a timeout at 3, wrong elsewhere; two batches, in index order.
    batch1 = [row("a", i, i in (0, 5), "timeout" if i == 3 else None) for i in range(6)]
    batch2 = [row("a", i, False) for i in range(6, 10)] + [row("b", i, False) for i in range(6)]
    assert s.add_samples("k", batch1, keep_text="compact") == 6
    assert s.add_samples("k", batch2, keep_text="compact") == 10
    got = {(r.problem_id, r.idx): r for r in s.samples("k")}
    kept = sorted(k for k, r in got.items() if r.text is not None)
    # a: the correct 0 and 5 and its first KEEP_WRONG wrong ones (1, 2, the timeout 3, 4);
    # b: its first KEEP_WRONG (0..3).
    assert KEEP_WRONG == 4
    assert kept == [("a", i) for i in range(6)] + [("b", i) for i in range(4)]
    for (pid, i), r in got.items():
        # Every sample keeps its verdict, extracted answer, token count and info.
        assert (r.extracted, r.n_tokens, r.info) == (str(i), 7 + i, {"i": i})
        if r.text is None:
            assert r.text_dropped and not r.correct
            assert r.text_hash == hashlib.sha1(f"text {pid}{i}".encode()).digest()[:8]
        else:
            assert r.text == f"text {pid}{i}" and r.text_hash is None
    # Counts are those of an all-text store.
    full = Store(tmp_path / "full.sqlite")
    full.add_samples("k", batch1)
    full.add_samples("k", batch2)
    assert [(c.n, c.c) for c in s.counts("k")] == [(c.n, c.c) for c in full.counts("k")]
    assert s.dropped_texts("k") == 6 and full.dropped_texts("k") == 0
    # Within each problem's first 8: a#6, a#7 (a#8, a#9 are beyond), b#4 and b#5.
    assert s.dropped_texts("k", n_max=8) == 4
    # A timeout beyond the first KEEP_WRONG wrong ones keeps its text (a rerun re-checks it).
    s.add_samples("k", [row("a", 10, False, "timeout"), row("a", 11, False)], keep_text="compact")
    assert [r.text is None for r in s.samples("k", "a")][10:] == [False, True]


def test_a_reader_of_a_dropped_text_gets_one_clear_line(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    s.add_samples("k", [row("a", i, False) for i in range(KEEP_WRONG + 1)], keep_text="compact")
    assert s.sample_text("k", "a", 0) == "text a0"
    with pytest.raises(TextDropped) as e:
        s.sample_text("k", "a", KEEP_WRONG)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"probe k was stored with probe.keep_text=compact: reading sample "
                          f"a#{KEEP_WRONG} needs 1 completion text(s) it did not keep")
    assert "probe.keep_text=all under a new store.path" in msg
    # Re-judging a dropped text is refused, never done on the '' stored in its place.
    with pytest.raises(TextDropped, match="re-verification needs 1 completion text"):
        _rescore(object(), Task("t", [Problem("a", "q", "1")]), s.samples("k"))
    # A row without text cannot be written back as if it had one.
    with pytest.raises(ValueError, match="needs every row's text"):
        s.add_samples("k2", s.samples("k"))
    with pytest.raises(ValueError, match="keep_text='some'"):
        s.add_samples("k", [row("a", 9, False)], keep_text="some")


def test_empty_texts_and_all_mode_store_no_hash(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    s.add_samples("k", [row("a", i, False, text="") for i in range(KEEP_WRONG + 2)],
                  keep_text="compact")
    s.add_samples("k", [row("b", i, False) for i in range(KEEP_WRONG + 2)])
    assert s.dropped_texts("k") == 0  # '' costs nothing to keep; all mode drops nothing
    assert all(r.text is not None and r.text_hash is None for r in s.samples("k"))
    assert text_hash("") == hashlib.sha1(b"").digest()[:8]


OLD_SCHEMA = """
CREATE TABLE samples (key TEXT NOT NULL, problem_id TEXT NOT NULL, idx INTEGER NOT NULL,
    text TEXT NOT NULL, extracted TEXT, correct INTEGER NOT NULL, strict INTEGER, outcome TEXT,
    n_tokens INTEGER, info TEXT, PRIMARY KEY (key, problem_id, idx)) WITHOUT ROWID;
"""


def test_a_store_made_before_text_hash_is_migrated_on_open_and_read_as_before(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO samples VALUES ('k','a',0,'old text','1',1,NULL,'correct',3,NULL)")
    db.commit()
    db.close()
    # A reader that does not write leaves the file as it is and still reads it.
    ro = Store(path, writable=False)
    assert [r.text for r in ro.samples("k")] == ["old text"] and ro.dropped_texts("k") == 0
    assert ro.sample_text("k", "a", 0) == "old text"
    ro.close()
    assert "text_hash" not in {r[1] for r in sqlite3.connect(path).execute(
        "PRAGMA table_info(samples)")}
    s = Store(path)
    assert "text_hash" in {r[1] for r in s.db.execute("PRAGMA table_info(samples)")}
    s.add_samples("k", [row("a", i, False) for i in range(1, KEEP_WRONG + 3)], keep_text="compact")
    got = s.samples("k")
    assert got[0].text == "old text" and got[0].text_hash is None
    assert [r.idx for r in got if r.text_dropped] == [KEEP_WRONG + 1, KEEP_WRONG + 2]
    s.close()
    Store(path).close()  # a second open finds the column and adds nothing


# -- a changed verifier meets a compact probe: it samples afresh, never re-verifies a part -------
class FixedSampler(Sampler):
    """Completions cycle through fixed texts; counts the rows it was asked for."""
    rows_per_call = 8

    def __init__(self, texts):
        self.texts, self.rows = texts, 0

    def generate(self, requests, settings, seed):
        self.rows += sum(cnt for _, cnt in requests)
        return [[Completion(self.texts[i % len(self.texts)], 3, "eos") for i in range(cnt)]
                for _, cnt in requests]


def test_changed_verifier_samples_afresh_over_a_compact_probe(tmp_path, capsys):
    store = Store(tmp_path / "s.sqlite")
    task = Task("mini", [Problem("a", "What is 1/2?", r"\frac{1}{2}")])
    texts = [r"\boxed{0.5}", r"\boxed{7}", r"\boxed{8}", r"\boxed{9}"]  # 1 right in 4
    gen = GenSettings(max_new_tokens=3)
    v1 = build_verifier("math", workers=1)
    v2 = build_verifier("math", workers=1, max_answer_chars=3)
    try:
        s1 = FixedSampler(texts)
        r1 = probe_model(ProbeContext(task, store, v1, progress=False),
                         ProbeSpec(32, gen, 0, bootstrap_iters=10, keep_text="compact"), s1, "fp")
        assert s1.rows == 32 and r1.c.tolist() == [8]
        assert store.dropped_texts(r1.key) == 24 - KEEP_WRONG
        # keep_text is not part of the key: the same probe with every text reads these back.
        s0 = FixedSampler(texts)
        r0 = probe_model(ProbeContext(task, store, v1, progress=False), ProbeSpec(32, gen, 0, bootstrap_iters=10),
                         s0, "fp")
        assert r0.key == r1.key and s0.rows == 0 and r0.c.tolist() == [8]
        capsys.readouterr()
        s2 = FixedSampler(texts)
        r2 = probe_model(ProbeContext(task, store, v2, progress=False), ProbeSpec(32, gen, 0, bootstrap_iters=10),
                         s2, "fp")
        out = capsys.readouterr().out
        assert f"probe {r1.key} was stored with probe.keep_text=compact: {24 - KEEP_WRONG} of its " \
               f"32 completions have no text" in out and "sampling afresh instead" in out
        assert "re-verified" not in out
        # Sampled again, all 32; the 8 kept texts alone would have given c = 8 of 12.
        assert s2.rows == 32 and r2.key != r1.key and r2.c.tolist() == [8]
        assert store.dropped_texts(r2.key) == 0
    finally:
        v1.close()
        v2.close()
        store.close()


def test_probe_spec_carries_keep_text_to_training_probes():
    from omegaconf import OmegaConf

    from boundlab.config import ProbeSettings

    assert ProbeSpec.from_config(OmegaConf.structured(ProbeSettings)).keep_text == "all"
    cfg = OmegaConf.structured(ProbeSettings(keep_text="compact"))
    assert ProbeSpec.from_config(cfg).keep_text == "compact"


def test_report_answer_rules_refuse_a_compact_probe_in_one_line(tmp_path):
    from boundlab.report.answer_rules import answer_rule_rows

    task = Task("t", [Problem("a", "q", "17")], verifier="math")
    store = Store(tmp_path / "s.sqlite")
    store.add_samples("k", [row("a", i, False) for i in range(KEEP_WRONG + 1)], keep_text="compact")
    with pytest.raises(TextDropped, match="^probe k was stored with probe.keep_text=compact: "
                                          "re-scoring problem a under other answer rules needs 1 "):
        answer_rule_rows(store, [("base", "k")], task, ["a"], None, workers=1)
    store.close()


def test_scoring_a_samples_file_can_keep_texts_compactly(tmp_path):
    import json

    from boundlab.probe.runner import score_samples_file

    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"problem_id": "a", "completion": rf"\boxed{{{i}}}"}) + "\n"
                            for i in range(KEEP_WRONG + 3)))  # \boxed{0}..: gold 2 is one of them
    store = Store(tmp_path / "s.sqlite")
    v = build_verifier("math", workers=1)
    try:
        res, _ = score_samples_file(Task("t", [Problem("a", "q", "2")]), path, v, store,
                                    bootstrap_iters=10, progress=False, keep_text="compact")
    finally:
        v.close()
    assert res.c.tolist() == [1] and res.n.tolist() == [KEEP_WRONG + 3]
    assert [r.idx for r in store.samples(res.key) if r.text_dropped] == [KEEP_WRONG + 1, KEEP_WRONG + 2]
    store.close()
