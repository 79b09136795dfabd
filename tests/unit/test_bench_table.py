"""bench/table.py (issue 36): the benchmark table in docs/benchmarks.md is what docs/bench/*.json give,
and a changed figure makes --check fail."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_table", ROOT / "bench" / "table.py")
table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(table)


def test_the_committed_table_is_generated_from_the_json_files():
    assert table.main(["--check"]) == 0


def test_a_changed_figure_fails_the_check(tmp_path, monkeypatch):
    bench = tmp_path / "bench"
    bench.mkdir()
    doc = json.loads((ROOT / "docs" / "bench" / "adaptive.json").read_text())
    doc["figures"]["adaptive_ratio_base"]["median"] = 9.99
    (bench / "adaptive.json").write_text(json.dumps(doc))
    page = tmp_path / "benchmarks.md"
    page.write_text((ROOT / "docs" / "benchmarks.md").read_text())
    monkeypatch.setattr(table, "BENCH_DIR", bench)
    monkeypatch.setattr(table, "DOC", page)
    monkeypatch.setattr(table, "ROOT", tmp_path)
    assert table.main(["--check"]) == 1
    assert table.main([]) == 0 and "2.13 / 9.99 / 2.23 (2000)" in page.read_text()
    assert table.main(["--check"]) == 0
