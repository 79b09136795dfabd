"""The documentation site and the README, its front door.

`mkdocs build --strict` fails on a broken link, a missing anchor, a page left out of the nav or a
docstring mkdocstrings cannot render (mkdocs.yml's `validation` block turns each into a warning, and
strict turns warnings into a failure). The README checks are the ones a build cannot make: it is not
part of the site.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MKDOCS = ROOT / "mkdocs.yml"
# The test command CI runs (.ci/run) and a new user copies from the README: kept byte for byte.
CI_LINE = "bash install.sh test && python -m pytest -q"
# Markdown links and images: [text](target) / ![alt](target), target up to the first space or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _readme_lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def _readme_anchors() -> set[str]:
    anchors, fenced = set(), False
    for line in _readme_lines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6} (.+)$", line)
        if m:
            anchors.add(_slug(m.group(1)))
    return anchors


def _nav_pages(node) -> list[str]:
    """Every file named in mkdocs.yml's nav (a nested list of strings and one-key dicts)."""
    if isinstance(node, str):
        return [] if re.match(r"^[a-z]+://", node) else [node]
    if isinstance(node, list):
        return [p for item in node for p in _nav_pages(item)]
    if isinstance(node, dict):
        return [p for v in node.values() for p in _nav_pages(v)]
    return []


def test_mkdocs_build_strict(tmp_path):
    # Not a skip: CI installs the test extra, and a site that is never built is never checked.
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        try:
            __import__(module)
        except ImportError:
            pytest.fail(f"{module} is not installed: pip install -e '.[docs]' (the test extra has it)")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    problems = [l for l in (r.stdout + r.stderr).splitlines() if "WARNING" in l or "ERROR" in l]
    assert r.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(problems or [r.stderr[-3000:]])
    assert (site / "index.html").is_file()
    # The API reference is rendered from the docstrings, not left as a `::: module` line.
    api = (site / "api" / "probe" / "index.html").read_text(encoding="utf-8")
    assert "pass_at_k_single" in api and ":::" not in api


def test_readme_is_a_front_door_of_at_most_200_lines():
    n = len(_readme_lines())
    assert n <= 200, f"README.md has {n} lines; move the detail into a docs/ page and link it"


def test_readme_first_screen_reaches_quick_start_result_and_probe():
    first = "\n".join(_readme_lines()[:40])
    anchors = _readme_anchors()
    for anchor in ("quick-start", "the-default-result"):
        assert f"(#{anchor})" in first, f"the README's first screen does not link #{anchor}"
        assert anchor in anchors, f"README.md has no heading for #{anchor}"
    assert "python probe.py" in first
    assert CI_LINE in _commands(first)


def _commands(text: str) -> list[str]:
    """Each line's command, its trailing `# comment` cut off."""
    return [re.sub(r"\s+#.*$", "", line).strip() for line in text.splitlines()]


def test_readme_keeps_the_ci_test_command():
    # The same command, not a longer one: `... -m "not slow"` would be another suite than CI's.
    assert CI_LINE in _commands(README.read_text(encoding="utf-8")), f"README.md lost `{CI_LINE}`"
    assert CI_LINE in _commands((ROOT / ".ci" / "run").read_text(encoding="utf-8"))


def test_readme_relative_links_exist():
    text, anchors, broken = README.read_text(encoding="utf-8"), _readme_anchors(), []
    targets = LINK.findall(text)
    assert targets, "no links found in README.md"
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in anchors:
                broken.append(f"{target} (no such heading in README.md)")
            continue
        if not (ROOT / path).exists():
            broken.append(target)
    assert not broken, f"README.md links to what does not exist: {broken}"


def test_every_nav_page_exists():
    cfg = yaml.safe_load(MKDOCS.read_text(encoding="utf-8"))
    docs = ROOT / cfg.get("docs_dir", "docs")
    pages = _nav_pages(cfg["nav"])
    assert "index.md" in pages
    missing = [p for p in pages if not (docs / p).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist under {docs}: {missing}"
