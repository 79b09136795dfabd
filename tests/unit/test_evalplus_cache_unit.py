"""The EvalPlus expected-outputs cache without a sandbox: an entry is used only when its digest,
record and lengths match its content; anything else reads as absent (recompute), said in one line."""

import pytest

from boundlab.tasks.jsonl import DataError
from boundlab.verify.evalplus import ExpectedCache, check_expected

VALUE = {"base": [[1, 0.001], [[2, 3], 0.002]], "plus": [["x", 0.0]]}
SHAPE = {"base": 2, "plus": 1}


def _cache(tmp_path):
    c = ExpectedCache()
    c.directory = tmp_path
    return c


def test_round_trip_and_each_tampering_reads_as_absent(tmp_path, capsys):
    _cache(tmp_path).put("k", VALUE)
    assert _cache(tmp_path).get("k", SHAPE) == VALUE
    assert _cache(tmp_path).get("k", {"base": 3, "plus": 1}) is None  # the problem has 3 inputs now
    good = (tmp_path / "k.json").read_bytes()
    for bad in (good.replace(b"0.001", b"0.002"), good[:-3], b"", b"{not json"):
        (tmp_path / "k.json").write_bytes(bad)
        assert _cache(tmp_path).get("k", SHAPE) is None
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 5 and all("fail their check" in e for e in err)
    assert "does not match its content" in err[1] and "3 inputs" in err[0]


@pytest.mark.parametrize("value, why", [
    ({"base": []}, "not a {base, plus} object"),
    ({"base": [[1, -1.0]], "plus": []}, "not [output, seconds]"),
    ({"base": [[1, True]], "plus": []}, "not [output, seconds]"),
    ({"base": [1], "plus": []}, "not [output, seconds]"),
    ({"base": "x", "plus": []}, "base is not a list"),
])
def test_malformed_values_are_named_and_never_put(tmp_path, value, why):
    assert why in check_expected(value)
    with pytest.raises(DataError, match="expected outputs"):
        _cache(tmp_path).put("k", value)
    assert not (tmp_path / "k.json").exists()
    assert check_expected(VALUE, SHAPE) is None
