"""The MathVista and MathVision loaders (boundlab.tasks.visual) on fixtures in each benchmark's row
format with tiny PNGs (tests/data/visual_benchmarks/make_fixtures.py): problems, images, tags,
prompts, golds; and a one-line error naming the file and line for each kind of bad row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from boundlab.config import ConfigError, register_configs
from boundlab.tasks import build_task
from boundlab.tasks.jsonl import DataError
from boundlab.tasks.visual import EASYR1_MATH, load_mathvision, load_mathvista

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data/visual_benchmarks"
VISTA, VISION = DATA / "mathvista", DATA / "mathvision"
register_configs()


def _rows(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "testmini.jsonl").read_text().splitlines()]


def test_mathvista_fixture_loads_every_answer_form():
    ps = load_mathvista(VISTA / "testmini.jsonl", VISTA)
    assert [p.problem_id for p in ps] == [f"mathvista-{r['pid']}" for r in _rows(VISTA)]
    by = {p.problem_id: p for p in ps}
    kinds = {pid: (p.meta["answer_kind"], p.answer, p.meta["precision"]) for pid, p in by.items()}
    assert kinds == {"mathvista-1": ("float", "1.2", 1), "mathvista-2": ("integer", "1000", None),
                     "mathvista-3": ("choice", "C", None), "mathvista-5": ("choice", "A", None),
                     "mathvista-10": ("choice", "E", None), "mathvista-20": ("float", "3.14", 2),
                     "mathvista-30": ("list", "[2, 3]", None)}
    for p in ps:  # one absolute image path each, to the fixture's own file
        assert len(p.images) == 1 and Path(p.images[0]).is_absolute() and Path(p.images[0]).is_file()
        assert Path(p.images[0]) == (VISTA / p.meta["image"]).absolute()
    three = by["mathvista-3"]
    assert three.meta["choices"] == ["135°", "140°", "145°", "150°"]
    assert three.meta["answer_text"] == "145°"
    assert {k: three.meta[k] for k in ("task", "grade", "question_type", "answer_type", "context")} == {
        "task": "geometry problem solving", "grade": "high school", "question_type": "multi_choice",
        "answer_type": "text", "context": "geometry diagram"}
    assert three.meta["skills"] == ["geometry reasoning", "algebraic reasoning"]
    assert three.question == (
        "Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, at the end.\n"
        "Question: Find the angle at the top vertex.\nChoices:\n(A) 135°\n(B) 140°\n(C) 145°\n(D) 150°")
    assert by["mathvista-2"].question.endswith("Question: What is the total mass shown? (Unit: g)")
    assert "two decimal places" in by["mathvista-20"].question


def test_mathvision_fixture_loads_choices_and_free_form():
    ps = load_mathvision(VISION / "testmini.jsonl", VISION)
    by = {p.problem_id: p for p in ps}
    assert list(by) == [f"mathvision-{r['id']}" for r in _rows(VISION)]
    assert {pid: (p.meta["answer_kind"], p.answer) for pid, p in by.items()} == {
        "mathvision-4": ("math", "6"), "mathvision-6": ("choice", "D"), "mathvision-39": ("choice", "A"),
        "mathvision-91": ("choice", "E"), "mathvision-200": ("math", "2\\sqrt{3}"),
        "mathvision-59": ("math", "C")}
    assert (by["mathvision-39"].meta["level"], by["mathvision-39"].meta["subject"]) == (3, "logic")
    assert by["mathvision-6"].question.endswith("<image1>\nChoices: A, B, C, D, E")
    assert by["mathvision-39"].question.endswith("(A) red\n(B) blue\n(C) green\n(D) Yellow\n"
                                                 "(E) This cannot be worked out for certain.")
    assert by["mathvision-4"].meta["question_type"] == "free_form"
    assert all(Path(p.images[0]).is_file() for p in ps)


def _write(tmp_path: Path, src: Path, rows: list[dict]) -> Path:
    """A copy of a fixture's images beside a JSONL of `rows`."""
    shutil.copytree(src / "images", tmp_path / "images")
    f = tmp_path / "rows.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


VISTA_BAD = [
    (lambda r: r.pop("pid"), "field 'pid' must be a non-empty string"),
    (lambda r: r.update(question_type="essay"), "field 'question_type' must be one of multi_choice, free_form"),
    (lambda r: r.update(answer="155°"), "'answer' '155°' is not one of its 'choices'"),
    (lambda r: r.update(choices=["145°"], answer="145°"), "needs 'choices' with at least 2 options"),
    (lambda r: r.update(image="images/404.png"), "image file not found: "),
    (lambda r: r.update(image="../mathvision/images/4.png"), "leaves the image folder"),
    (lambda r: r.update(image="images/../../secret.png"), "leaves the image folder"),
    (lambda r: r.update(image="/etc/passwd"), "leaves the image folder"),
    (lambda r: r.update(image="C:\\data\\1.png"), "leaves the image folder"),
    (lambda r: r.update(image=None), "field 'image' must be a non-empty path"),
    (lambda r: r.update(metadata=[1]), "field 'metadata' must be an object"),
]


@pytest.mark.parametrize("edit,msg", VISTA_BAD)
def test_mathvista_bad_row_is_one_line_with_file_and_line(tmp_path, edit, msg):
    rows = _rows(VISTA)
    edit(rows[2])  # pid 3, a multiple-choice row, on line 3
    f = _write(tmp_path, VISTA, rows)
    with pytest.raises(DataError) as e:
        load_mathvista(f, tmp_path)
    text = str(e.value)
    assert text.startswith(f"{f}:3: ") and msg in text and "\n" not in text


@pytest.mark.parametrize("edit,msg", [
    (lambda r: r.update(precision=1.5), "field 'precision' must be a whole number of decimals"),
    (lambda r: r.update(answer="about 1.2"), "is not a number (float answer)"),
    (lambda r: r.update(answer_type="fraction"), "field 'answer_type' must be one of"),
])
def test_mathvista_bad_numeric_row(tmp_path, edit, msg):
    rows = _rows(VISTA)
    edit(rows[0])
    f = _write(tmp_path, VISTA, rows)
    with pytest.raises(DataError, match=r":1: ") as e:
        load_mathvista(f, tmp_path)
    assert msg in str(e.value)


def test_duplicate_pid_names_both_lines(tmp_path):
    rows = _rows(VISTA)
    rows[4]["pid"] = "1"
    f = _write(tmp_path, VISTA, rows)
    with pytest.raises(DataError, match=r":5: duplicate pid '1' \(first on line 1\)"):
        load_mathvista(f, tmp_path)


def test_corrupt_image_is_named(tmp_path):
    f = _write(tmp_path, VISION, _rows(VISION))
    (tmp_path / "images/6.png").write_bytes(b"not a png")
    with pytest.raises(DataError) as e:
        load_mathvision(f, tmp_path)
    assert str(e.value).startswith(f"{f}:2: image {tmp_path / 'images/6.png'} is not a readable image")


@pytest.mark.parametrize("edit,msg", [
    (lambda r: r.update(answer="F"), "'answer' must be the letter of one of its 5 options (A-E), got 'F'"),
    (lambda r: r.update(level=7), "field 'level' must be an integer 1-5"),
    (lambda r: r.update(options="ABCDE"), "field 'options' must be a list of non-empty strings"),
    (lambda r: r.pop("subject"), "field 'subject' must be a non-empty string"),
])
def test_mathvision_bad_row(tmp_path, edit, msg):
    rows = _rows(VISION)
    edit(rows[1])
    f = _write(tmp_path, VISION, rows)
    with pytest.raises(DataError) as e:
        load_mathvision(f, tmp_path)
    assert str(e.value).startswith(f"{f}:2: ") and msg in str(e.value)


# -- through the task config ------------------------------------------------------------------------

def _task_cfg(task: str, *overrides: str):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="probe", overrides=[f"task={task}", *overrides]).task


@pytest.mark.parametrize("task,folder", [("mathvista", VISTA), ("mathvision", VISION)])
def test_task_config_builds_the_task(task, folder):
    t = build_task(_task_cfg(task, f"task.path={folder / 'testmini.jsonl'}", f"task.visual.image_dir={folder}"))
    assert t.name == task and t.verifier == "typed" and t.chat is True
    assert t.template == EASYR1_MATH and t.system == "You are a helpful assistant."
    assert len(t) == len(_rows(folder))
    user = t.messages(t.problems[0])[-1]["content"]
    assert user.startswith(t.problems[0].question) and user.endswith("The final answer MUST BE put in \\boxed{}.")


def test_question_type_keeps_one_half():
    args = (f"task.path={VISTA / 'testmini.jsonl'}", f"task.visual.image_dir={VISTA}")
    free = build_task(_task_cfg("mathvista", *args, "task.visual.question_type=free_form"))
    assert [p.problem_id for p in free.problems] == ["mathvista-1", "mathvista-2", "mathvista-20", "mathvista-30"]
    mc = build_task(_task_cfg("mathvista", *args, "task.visual.question_type=multi_choice"))
    assert {p.meta["answer_kind"] for p in mc.problems} == {"choice"}
    with pytest.raises(ConfigError, match="task.visual.question_type=essay: must be one of multi_choice, free_form"):
        build_task(_task_cfg("mathvista", *args, "task.visual.question_type=essay"))


@pytest.mark.parametrize("overrides,line", [
    ((), "task=mathvision needs task.path and task.visual.image_dir: your own copy of the benchmark (nothing is "
         "downloaded), e.g. task.path=/data/MATH-V/data/testmini.jsonl task.visual.image_dir=/data/MATH-V"),
    ((f"task.path={VISION / 'testmini.jsonl'}",), "task=mathvision needs task.visual.image_dir: your own copy"),
])
def test_missing_paths_are_one_line(overrides, line):
    with pytest.raises(ConfigError) as e:
        build_task(_task_cfg("mathvision", *overrides))
    assert str(e.value).startswith(line)


def test_wrong_paths_are_one_line(tmp_path):
    with pytest.raises(DataError, match=r"^task=mathvista: task.path=\S+nope.jsonl is not a file"):
        build_task(_task_cfg("mathvista", f"task.path={tmp_path / 'nope.jsonl'}", f"task.visual.image_dir={tmp_path}"))
    with pytest.raises(DataError, match=r"^task=mathvista: task.visual.image_dir=\S+ is not a folder"):
        build_task(_task_cfg("mathvista", f"task.path={VISTA / 'testmini.jsonl'}",
                             f"task.visual.image_dir={tmp_path / 'none'}"))


def test_mathvista_github_json_is_named_with_the_conversion(tmp_path):
    # The GitHub release's testmini.json: one object keyed by pid, pretty-printed.
    rows = {r["pid"]: r for r in _rows(VISTA)}
    f = tmp_path / "testmini.json"
    f.write_text(json.dumps(rows, indent=4))
    with pytest.raises(DataError) as e:
        load_mathvista(f, VISTA)
    assert str(e.value).startswith(f"{f}: one JSON object spanning lines (MathVista's GitHub testmini.json")
    # ... and the conversion it names gives a file that loads.
    import subprocess
    import sys

    cmd = str(e.value).split("python -c ", 1)[1]
    code, rest = cmd.split('" ', 1)
    out = subprocess.run([sys.executable, "-c", code.strip('"'), str(f)], capture_output=True, text=True,
                         check=True).stdout
    (tmp_path / "testmini.jsonl").write_text(out)
    assert len(load_mathvista(tmp_path / "testmini.jsonl", VISTA)) == len(rows)


@pytest.mark.parametrize("qtype,atype,precision,hint", [
    ("free_form", "float", 3, "floating-point number with 3 decimal places"),
    ("free_form", "float", None, "requiring a floating-point number and provide the final value"),
    ("free_form", "text", None, "provide the final answer at the end"),
    ("free_form", "list", None, "requiring a Python list"),
])
def test_mathvista_hint_names_the_answer_form(tmp_path, qtype, atype, precision, hint):
    row = dict(_rows(VISTA)[0], question_type=qtype, answer_type=atype, precision=precision,
               answer="[1, 2]" if atype == "list" else ("blue" if atype == "text" else "1.234"))
    f = _write(tmp_path, VISTA, [row])
    p = load_mathvista(f, tmp_path)[0]
    assert p.question.splitlines()[0].startswith("Hint: ") and hint in p.question.splitlines()[0]


# -- rendering a visual problem with a VLM's processor (Task.render) ---------------------------------
def _one_image_problem(images: int = 1):
    from boundlab.tasks import Problem

    img = str(VISTA / "images" / "1.png")
    return Problem("p1", "How tall?", "1.2", images=[img] * images)


def test_chat_task_renders_image_blocks_through_the_processor():
    """A chat task with images goes through the processor's chat template with image blocks first,
    then the text; the tokenizer alone (a string user turn) would leave no placeholder."""
    from boundlab.tasks import Task
    from boundlab.worlds.toyvision.model import IMAGE_TOKEN, build_processor

    proc, p = build_processor(), _one_image_problem()
    task = Task("v", [p], template="Q {question}", chat=True, system="sys")
    assert task.vision_messages(p)[1]["content"] == [{"type": "image"}, {"type": "text", "text": "Q How tall?"}]
    # The toy processor's template writes each block in order (and no system turn markers).
    assert task.render(p, proc) == "sys" + IMAGE_TOKEN + "Q How tall?"


@pytest.mark.parametrize("template,images,held", [("{question}", 1, 0), ("<image>{question}", 2, 1),
                                                  ("<image><image>{question}", 1, 2)])
def test_placeholder_count_must_match_the_images(template, images, held):
    from boundlab.tasks import Task
    from boundlab.worlds.toyvision.model import build_processor

    p = _one_image_problem(images)
    with pytest.raises(ValueError) as e:
        Task("v", [p], template=template).render(p, build_processor())
    assert str(e.value) == (f"problem 'p1' of task 'v': its prompt holds {held} image placeholder(s) "
                            f"('<image>') for {images} image(s)")
    assert Task("v", [p], template=template).render(p) == template.replace("{question}", "How tall?")
