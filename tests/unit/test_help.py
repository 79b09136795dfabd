"""`python train.py --help` is a page a person reads: the user-facing groups, one line each, every
option they list real, five example commands; not Hydra's stock dump of internal groups."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
USER_GROUPS = ["algo", "model", "task", "probe", "sampler", "rollout", "logger", "backend", "experiment", "debug"]
INTERNAL = ["schema", "arm", "remedy", "lr_search"]  # the typed schemas; experiment arms


@pytest.fixture(scope="module")
def page():
    r = subprocess.run([sys.executable, str(ROOT / "train.py"), "--help"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_help_is_short_and_has_five_examples(page):
    lines = page.splitlines()
    assert 15 <= len(lines) <= 40, len(lines)
    examples = [x for x in lines if x.strip().startswith("python train.py ")]
    assert len(examples) == 5, examples
    assert "Usage: python train.py" in page and "resume=RUN_DIR" in page


def test_each_user_group_has_one_line_and_no_internal_group_is_shown(page):
    group_lines = {m.group(1): m.group(2) for m in re.finditer(r"^  (\w+) {2,}(.+)$", page, re.M)}
    assert list(group_lines) == USER_GROUPS
    # Every user-facing folder of conf/ is listed (a new group must be added to the page).
    folders = {p.name for p in CONF.iterdir() if p.is_dir()} - set(INTERNAL) - {"hydra"}
    assert folders == set(USER_GROUPS)
    for g in INTERNAL:
        assert not re.search(rf"\b{g}\b", page.split("Examples:")[0].replace("schemas", "")), g
    assert "== Configuration groups ==" not in page and "== Config ==" not in page  # Hydra's stock page


def test_every_option_the_page_lists_exists_and_none_is_missing(page):
    for g in USER_GROUPS:
        line = re.search(rf"^  {g} {{2,}}(.+)$", page, re.M).group(1)
        listed = {re.sub(r" \(.*\)$", "", x).strip() for x in line.split(":", 1)[1].split(",")}
        shipped = {p.stem for p in (CONF / g).glob("*.yaml")}
        assert listed == shipped, (g, listed ^ shipped)


def test_the_examples_compose_and_pass_the_start_up_checks(page):
    from test_smoke_combos import _start_up_checks

    for x in page.splitlines():
        x = x.strip()
        if x.startswith("python train.py ") and " -m " not in x:
            args = x.split("#")[0].split()[2:]
            _start_up_checks(*args)
