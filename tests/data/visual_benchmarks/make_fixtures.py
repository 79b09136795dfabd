"""Writes the visual-benchmark fixtures beside this file, each in its benchmark's row format, with
tiny PNG images drawn here with PIL (shapes only, a few hundred bytes each).

    python tests/data/visual_benchmarks/make_fixtures.py

- mathvista/testmini.jsonl + mathvista/images/: MathVista rows (pid, question, image, choices, unit,
  precision, answer, question_type, answer_type, metadata), one of each answer form: a float at
  precision 1 and 2, an integer with a unit, multiple choice with degree options, with numeric
  options, with options that are letters, a list. `query` is left out (the loader builds the prompt
  from the fields).
- mathvision/testmini.jsonl + mathvision/images/: MATH-V rows (id, question, options, image, answer,
  solution, level, subject): free-form integer, LaTeX and letter answers; options that are only
  letters, words, and LaTeX lengths.
The questions are written here in the benchmarks' styles (ids borrowed, text not copied).
"""

import json
from pathlib import Path

from PIL import Image, ImageDraw

HERE = Path(__file__).parent


def _canvas():
    img = Image.new("RGB", (64, 48), "white")
    return img, ImageDraw.Draw(img)


def bars(heights):
    img, d = _canvas()
    for i, h in enumerate(heights):
        d.rectangle([6 + i * 14, 44 - h, 16 + i * 14, 44], fill=(60, 90 + 30 * i, 200))
    return img


def triangle():
    img, d = _canvas()
    d.polygon([(8, 40), (56, 40), (20, 8)], outline="black")
    return img


def circles(n):
    img, d = _canvas()
    for i in range(n):
        d.ellipse([4 + i * 10, 18, 12 + i * 10, 26], fill="red")
    return img


def grid():
    img, d = _canvas()
    for x in range(0, 64, 8):
        d.line([(x, 0), (x, 47)], fill="gray")
    for y in range(0, 48, 8):
        d.line([(0, y), (63, y)], fill="gray")
    return img


def _meta(task, skills, grade, context, source):
    return {"split": "testmini", "language": "english", "img_width": 64, "img_height": 48,
            "source": source, "category": "math-targeted-vqa", "task": task, "context": context,
            "grade": grade, "skills": skills}


def mathvista_rows():
    geo = ("geometry problem solving", ["geometry reasoning", "algebraic reasoning"], "high school",
           "geometry diagram", "Geometry3K")
    return [
        ({"pid": "1", "question": "How tall is the second bar, in metres?", "image": "images/1.png",
          "choices": None, "unit": None, "precision": 1, "answer": "1.2",
          "question_type": "free_form", "answer_type": "float",
          "metadata": _meta("figure question answering", ["statistical reasoning"], "college",
                            "bar chart", "FigureQA")}, bars([10, 24, 30])),
        ({"pid": "2", "question": "What is the total mass shown?", "image": "images/2.png",
          "choices": None, "unit": "g", "precision": None, "answer": "1000",
          "question_type": "free_form", "answer_type": "integer",
          "metadata": _meta("visual question answering", ["numeric commonsense", "arithmetic reasoning"],
                            "not applicable", "natural image", "TextVQA")}, circles(4)),
        ({"pid": "3", "question": "Find the angle at the top vertex.", "image": "images/3.png",
          "choices": ["135°", "140°", "145°", "150°"], "unit": None, "precision": None,
          "answer": "145°", "question_type": "multi_choice", "answer_type": "text",
          "metadata": _meta(*geo)}, triangle()),
        ({"pid": "5", "question": "Find $m\\angle H$", "image": "images/5.png",
          "choices": ["97", "102", "107", "122"], "unit": None, "precision": None, "answer": "97",
          "question_type": "multi_choice", "answer_type": "text", "metadata": _meta(*geo)}, triangle()),
        ({"pid": "10", "question": "Which object comes next?", "image": "images/10.png",
          "choices": ["A", "B", "C", "D", "E"], "unit": None, "precision": None, "answer": "E",
          "question_type": "multi_choice", "answer_type": "text",
          "metadata": _meta("figure question answering", ["logical reasoning"], "elementary school",
                            "puzzle test", "IQTest")}, grid()),
        ({"pid": "20", "question": "What is the ratio of the circumference to the diameter?",
          "image": "images/20.png", "choices": None, "unit": None, "precision": 2, "answer": "3.14",
          "question_type": "free_form", "answer_type": "float",
          "metadata": _meta("textbook question answering", ["algebraic reasoning"], "high school",
                            "function plot", "TQA")}, circles(1)),
        ({"pid": "30", "question": "Which two bars are taller than 20?", "image": "images/30.png",
          "choices": None, "unit": None, "precision": None, "answer": "[2, 3]",
          "question_type": "free_form", "answer_type": "list",
          "metadata": _meta("figure question answering", ["statistical reasoning"], "high school",
                            "bar chart", "ChartQA")}, bars([10, 24, 30])),
    ]


def mathvision_rows():
    return [
        ({"id": "4", "question": "How many red dots can you find in this picture?\n<image1>",
          "options": [], "answer": "6", "solution": None, "level": 1, "subject": "counting",
          "image": "images/4.png"}, circles(6)),
        ({"id": "6", "question": "In which picture is the triangle upside down?\n<image1>",
          "options": ["A", "B", "C", "D", "E"], "answer": "D", "solution": None, "level": 3,
          "subject": "logic", "image": "images/6.png"}, triangle()),
        ({"id": "39", "question": "Cubes of the same colour do not touch. Which colour is the cube "
                                  "with the question mark?\n<image1>",
          "options": ["red", "blue", "green", "Yellow", "This cannot be worked out for certain."],
          "answer": "A", "solution": None, "level": 3, "subject": "logic", "image": "images/39.png"},
         grid()),
        ({"id": "91", "question": "The floor is covered with equal tiles (see picture). How long is "
                                  "the room? <image1>",
          "options": ["$6 \\mathrm{~m}$", "$8 \\mathrm{~m}$", "$10 \\mathrm{~m}$",
                      "$11 \\mathrm{~m}$", "$12 \\mathrm{~m}$"],
          "answer": "E", "solution": None, "level": 1, "subject": "combinatorial geometry",
          "image": "images/91.png"}, grid()),
        ({"id": "200", "question": "The triangle is equilateral with side 2. How long is twice its "
                                   "height?\n<image1>",
          "options": [], "answer": "2\\sqrt{3}", "solution": None, "level": 4,
          "subject": "metric geometry - length", "image": "images/200.png"}, triangle()),
        ({"id": "59", "question": "Which face is opposite the red one?\n<image1>", "options": [],
          "answer": "C", "solution": None, "level": 1, "subject": "solid geometry",
          "image": "images/59.png"}, grid()),
    ]


def write(folder: str, rows) -> None:
    out = HERE / folder
    (out / "images").mkdir(parents=True, exist_ok=True)
    with open(out / "testmini.jsonl", "w", encoding="utf-8") as f:
        for row, img in rows:
            img.save(out / row["image"], optimize=True)
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    write("mathvista", mathvista_rows())
    write("mathvision", mathvision_rows())
