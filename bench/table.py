"""The benchmark table in docs/benchmarks.md, generated from the harness's JSON files (issue 36): every
row a figure of docs/bench/<name>.json with its min / median / max over the repetitions, the command,
the date and the machine that measured it, and the load it ran at. Nothing in the table is typed by hand.

    python bench/table.py            # rewrite the table between its markers in docs/benchmarks.md
    python bench/table.py --check    # exit 1 when the committed table is not what the JSON files give

Each file's figures are listed in `SHOWN` under the issue's names (`floor_fraction_toy2_n256`, ...)
where the harness names them by arm (`compact/floor_fraction`); a figure a file lacks is left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "docs" / "bench"
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"
# file -> [(name shown, figure in the file, what it is)]
SHOWN = {
    "probe": [
        ("floor_fraction_toy2_n256", "compact/floor_fraction", "probe's share of the matmul FLOP floor, default engine"),
        ("floor_fraction_toy2_n256_cb", "compact-cb/floor_fraction", "the same, continuous batching"),
        ("cb_over_compact_floor_fraction", "compact-cb_over_compact/floor_fraction", "paired per repetition"),
        ("samples_per_s_toy2_n256", "compact/samples_per_s", "whole-probe samples/s, default engine"),
        ("samples_per_s_toy2_n256_cb", "compact-cb/samples_per_s", "the same, continuous batching"),
    ],
    "adaptive": [
        ("adaptive_ratio_base", "adaptive_ratio_base", "samples saved against n = 1024, Table 2 base rates"),
        ("adaptive_ratio_grpo", "adaptive_ratio_grpo", "the same, GRPO rates"),
    ],
    "verify": [
        *[(f"verify_x_{base}_{fmt}_{mix}", f"verify_x_{base}_{fmt}_{mix}",
           f"BoundLab's verifier against {what}, {fmt} answers, {mix} answer mix: wall-time ratio, "
           "paired per repetition")
          for base, what in (("plain", "one plain math-verify call per answer"),
                             ("memo", "plain math-verify with a (gold, answer) memo"))
          for fmt in ("boxed", "prose") for mix in ("trained", "mixed", "weak")],
        *[(f"verify_x_plain_cpu_bound_{fmt}_mixed", f"verify_x_plain_cpu_bound_{fmt}_mixed",
           f"plain's CPU over the CPU of the math-verify calls ours makes ({fmt}, mixed): the most ours "
           "can gain while it makes them") for fmt in ("boxed", "prose")],
        *[(f"verify_extract_seconds_{fmt}_mixed", f"verify_extract_seconds_{fmt}_mixed",
           f"seconds of extraction alone over the {fmt} mixed corpus") for fmt in ("boxed", "prose")],
        ("verify_worker_startup_seconds", "ours_boxed_mixed/startup_seconds",
         "seconds until a fresh verifier's workers answer (not in the ratios)"),
        ("verify_worker_startup_first_seconds", "verify_worker_startup_first_seconds",
         "the same for the process's first verifier (starts the fork server)"),
    ],
    "probe_cost": [
        ("detached_overhead", "detached_overhead",
         "detached training wall / off training wall - 1, paired per repetition (target <= 0.05)"),
        ("boundary_latency_seconds", "boundary_latency_seconds",
         "seconds from training's end to the end of the last checkpoint's detached probe"),
        ("train_wall_seconds_off", "off/train_wall_seconds", "training wall, probing off"),
        ("train_wall_seconds_detached", "detached/train_wall_seconds", "training wall, detached watcher beside it"),
    ],
    "memory": [
        ("peak_tree_rss_mib_toy_n256", "peak_tree_rss_mib_toy_n256",
         "peak RSS summed over the probe's process tree, toy world, n = 256"),
        ("peak_tree_pss_mib_toy_n256", "peak_tree_pss_mib_toy_n256", "the same as PSS (shared pages split)"),
        ("peak_tree_rss_mib_math", "peak_tree_rss_mib_math",
         "peak RSS summed over the process tree, SmolLM2-135M on math500, math verifier "
         "(whose workers these short completions never started)"),
        ("peak_tree_pss_mib_math", "peak_tree_pss_mib_math", "the same as PSS (shared pages split)"),
        ("peak_tree_processes_math", "peak_tree_processes_math", "most processes in that tree at once"),
        ("ru_maxrss_mib_math", "ru_maxrss_mib_math", "the largest single process's peak (ru_maxrss), math"),
        ("peak_tree_rss_mib_math_workers", "peak_tree_rss_mib_math_workers",
         "peak RSS summed over the tree of a process whose math verifier started its workers and used them"),
        ("peak_tree_pss_mib_math_workers", "peak_tree_pss_mib_math_workers", "the same as PSS"),
        ("peak_tree_processes_math_workers", "peak_tree_processes_math_workers", "processes in that tree"),
        ("ru_maxrss_mib_math_workers", "ru_maxrss_mib_math_workers", "its largest single process's peak (ru_maxrss)"),
    ],
    "default_run": [
        ("default_run_seconds", "default_run_seconds",
         "`python train.py logger=none` from an empty store and cache, start to exit"),
        ("default_run_checkpoints", "default_run_checkpoints", "probes it wrote: the base + each checkpoint"),
        ("default_run_finished", "default/finished",
         "1 = train.py exited by itself; 0 = killed at the script's --timeout (then the seconds are the timeout)"),
    ],
}


def _num(v: float) -> str:
    return f"{v:.3g}"


def rows() -> list[str]:
    out = ["| figure | min / median / max (reps) | what | command | date, machine, load (median) |",
           "|---|---|---|---|---|"]
    for name, shown in SHOWN.items():
        f = BENCH_DIR / f"{name}.json"
        if not f.is_file():
            continue
        doc = json.loads(f.read_text())
        m = doc.get("machine", {})
        where = (f"{doc.get('date', '?')[:10]}, {m.get('cpu', '?')} {m.get('usable_cores', m.get('cores', '?'))} cores, "
                 f"load {_num(doc['load']['median'])}" if doc.get("load") else doc.get("date", "?"))
        for label, key, what in shown:
            fig = doc["figures"].get(key)
            if fig is None:
                continue
            out.append(f"| `{label}` | {_num(fig['min'])} / {_num(fig['median'])} / {_num(fig['max'])} "
                       f"({fig['reps']}) | {what} | `{doc.get('command', '?')}` (`docs/bench/{name}.json`) | {where} |")
    return out


def render(text: str) -> str:
    if START not in text or END not in text:
        raise SystemExit(f"error: {DOC}: no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return head + START + "\n" + "\n".join(rows()) + "\n" + END + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    text = DOC.read_text()
    new = render(text)
    if a.check:
        if new != text:
            print(f"error: {DOC.relative_to(ROOT)}: the benchmark table is not what docs/bench/*.json give; "
                  f"run python bench/table.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
