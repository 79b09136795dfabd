"""The sections of report.md, in order: one module each, registered in `SECTIONS` below.

A section is a title and a `render(report, doc)` function: it reads the comparisons computed once
in `boundlab.report.comparisons.Report` and writes its markdown, tables (CSV) and figures (PNG)
into the `Doc`. The report writes each heading (`## <number>. <title>`, numbered by position here)
and the table of contents; a section writes everything under its heading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from boundlab.report.comparisons import Report
from boundlab.report.document import Doc
from boundlab.report.sections import (algorithms, breakdown, cases, coverage, dse, mechanism,
                                      passk, perplexity, progression, remedies, verdict)


@dataclass(frozen=True)
class Section:
    title: str  # the heading, without its number
    render: Callable[[Report, Doc], None]


SECTIONS: list[Section] = [
    Section("Verdict: the paper's findings", verdict.render),
    Section("pass@k curves", passk.render),
    Section("Sampling-efficiency gap", dse.render),
    Section("Solvable-set coverage", coverage.render),
    Section("Perplexity under the base model", perplexity.render),
    Section("Checkpoint progression", progression.render),
    Section("Algorithm comparison", algorithms.render),
    Section("Case studies", cases.render),
    Section("Breakdown by problem tag", breakdown.render),
    Section("Remedies: pass@1 against the boundary", remedies.render),
    Section("Mechanism per problem and luck", mechanism.render),
]


def headings() -> list[str]:
    """Each section's heading text, numbered in order ("1. pass@k curves", ...)."""
    return [f"{i}. {s.title}" for i, s in enumerate(SECTIONS, 1)]
