"""The SQLite probe store: atomic batches, no duplicates, counts, growing n."""


from boundlab.probe.store import SampleRow, Store, probe_key


def rows(pid, start, count, correct=lambda i: i % 2 == 0):
    return [SampleRow(pid, i, f"t{i}", str(i), correct(i), None, "x", 3) for i in range(start, start + count)]


def test_counts_and_first_n(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    key = probe_key("m", "t", {"temperature": 1.0})
    s.ensure_probe(key, "m", "t", {"temperature": 1.0}, "m", "t")
    s.add_samples(key, rows("a", 0, 4))
    s.add_samples(key, rows("b", 0, 2))
    assert s.counts_done(key) == {"a": 4, "b": 2}
    c = {pc.problem_id: (pc.n, pc.c, pc.c_strict) for pc in s.counts(key, ["a", "b", "z"])}
    assert c == {"a": (4, 2, None), "b": (2, 1, None), "z": (0, 0, None)}
    first2 = s.counts(key, ["a"], n_max=2)[0]
    assert (first2.n, first2.c) == (2, 1)
    assert s.probe_info(key)["settings"] == {"temperature": 1.0}


def test_overlapping_batch_never_duplicates(tmp_path):
    # Two processes probing the same model at once write the same (problem, idx): one copy stays.
    s = Store(tmp_path / "s.sqlite")
    assert s.add_samples("k", rows("a", 0, 3)) == 3
    assert s.add_samples("k", rows("a", 2, 3)) == 2  # idx 2 already there; 3 and 4 are new
    assert s.counts_done("k") == {"a": 5}
    n, distinct = s.db.execute("SELECT COUNT(*), COUNT(DISTINCT idx) FROM samples").fetchone()
    assert n == distinct == 5


def test_strict_counts(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    s.add_samples("k", [SampleRow("a", 0, "x", "1", True, True, "correct", 1),
                        SampleRow("a", 1, "x", "1", True, False, "correct", 1),
                        SampleRow("a", 2, "x", "2", False, False, "wrong", 1)])
    pc = s.counts("k")[0]
    assert (pc.n, pc.c, pc.c_strict) == (3, 2, 1)


def test_wal_and_second_connection_sees_commits(tmp_path):
    a = Store(tmp_path / "s.sqlite")
    b = Store(tmp_path / "s.sqlite")
    assert a.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    a.add_samples("k", rows("a", 0, 2))
    assert b.counts_done("k") == {"a": 2}


def test_key_ignores_n_but_not_settings():
    assert probe_key("m", "t", {"temperature": 1.0}) != probe_key("m", "t", {"temperature": 0.6})
    assert probe_key("m", "t", {"temperature": 1.0}) == probe_key("m", "t", {"temperature": 1.0})


def test_gaps_in_indices_first_n_and_next_index(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    # idx 1 was withheld (a sandbox error): rows 0, 2, 3 exist.
    s.add_samples("k", [SampleRow("a", i, "x", "1", i != 2, None, "x", 1) for i in (0, 2, 3)])
    assert s.counts_done("k") == {"a": 3}
    assert s.next_index("k") == {"a": 4}
    pc = s.counts("k", ["a"], n_max=2)[0]
    assert (pc.n, pc.c) == (2, 1)  # the first two stored samples: idx 0 (right) and 2 (wrong)
