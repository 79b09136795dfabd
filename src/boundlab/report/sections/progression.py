"""Checkpoint progression: every probed checkpoint of every run against the base, by step."""

from __future__ import annotations

from boundlab.report.comparisons import Report
from boundlab.report.document import Doc, Table


def render(r: Report, d: Doc) -> None:
    from boundlab.report.plots import plot_progression

    base = r.base.summary
    if not r.inputs.runs:
        d.add("No training runs given (runs=[RUN_DIR,...] or sweeps=[SWEEP_DIR,...]).")
        return
    d.add(f"pass@1 and pass@n of every probed checkpoint, against the base on the same "
          f"{len(r.ids)} problems (Δ: checkpoint − base at the same n; lost/gained: base-solvable "
          f"problems no longer solved, and problems newly solved).")
    for note in r.run_notes:
        d.add(note)
    rows, series = [], {}
    nulls = [run for run in r.runs if run.null is not None]
    if nulls:
        d.add("A `null` row is the base probed again with another sampling seed (`probe.null_seed_offset`), "
              "compared with the base exactly like a checkpoint: its Δ, lost and gained are what "
              "sampling chance alone gives, the baseline for every checkpoint's.")
    for run in r.runs:
        if run.null is not None:
            seed, key, c = run.null
            rows.append([run.label, run.algo, f"null (seed {seed})", key, c["n"], c["pass@1"],
                         c["pass@1_ci_low"], c["pass@1_ci_high"], c["pass@n"], c["delta_pass@1"],
                         c["delta_pass@n"], c["solvable"], c["lost"], c["gained"]])
        steps, p1, pn = [0], [base.pass1], [base.passn]
        for step, key, c in run.checkpoints:
            rows.append([run.label, run.algo, step, key, c["n"], c["pass@1"], c["pass@1_ci_low"],
                         c["pass@1_ci_high"], c["pass@n"], c["delta_pass@1"], c["delta_pass@n"],
                         c["solvable"], c["lost"], c["gained"]])
            steps.append(step)
            p1.append(c["pass@1"])
            pn.append(c["pass@n"])
        series[run.label] = (steps, p1, pn)
    base_rows = [["base", "", 0, r.base.entry.key, base.n, base.pass1, base.pass1_ci[0],
                  base.pass1_ci[1], base.passn, 0.0, 0.0, base.solvable, 0, 0]]
    png = plot_progression(series, base.pass1, base.passn, base.n, d.out / "progression.png")
    d.figure(png, "checkpoint progression")
    d.table(Table("progression", ["run", "algo", "step", "probe key", "n", "pass@1", "pass@1_ci_low",
                                  "pass@1_ci_high", "pass@n", "delta_pass@1", "delta_pass@n",
                                  "solvable", "lost", "gained"], base_rows + rows),
            md_columns=["run", "step", "n", "pass@1", "pass@n", "delta_pass@1", "delta_pass@n",
                        "solvable", "lost", "gained"])
