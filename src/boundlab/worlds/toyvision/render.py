"""The visual toy world's pictures: a toy2 expression drawn in a fixed bitmap font on a small grid.

The expression is written one character per cell of a GRID x GRID box of CELL-pixel cells, row by
row, right-aligned so its last character sits in the last cell (the box wraps like a narrow text
column). The font is PIL's built-in bitmap font (`ImageFont.load_default_imagefont`, 6x11 glyphs):
no FreeType, no system font, so the same problem gives the same PNG bytes on any machine with this
Pillow (a test checks the bytes). Why cells: a vision encoder whose patch is one cell sees one glyph
per patch, so what the tiny model must learn to read is a glyph per patch, not text layout.

Distractors (`distractors=k`): k light-grey marks (dots and short strokes) at positions drawn from
a seed derived from the question alone, so they are as reproducible as the glyphs; the model must
learn to read through them.
"""

from __future__ import annotations

import hashlib
import io
import random
from functools import lru_cache
from pathlib import Path

GRID = 4
CELL = 12
SIZE = GRID * CELL  # the image is SIZE x SIZE pixels: CLIP-style encoders take square images
INK, PAPER, MARK = 0, 255, 170
# Bump when the drawing changes: it is part of every file name, so old PNGs are never reused.
RENDER_VERSION = 1


@lru_cache(maxsize=1)
def _font():
    from PIL import ImageFont

    return ImageFont.load_default_imagefont()


def draw(question: str, distractors: int = 0):
    """The problem's picture as a PIL image (mode L)."""
    from PIL import Image, ImageDraw

    if not question or len(question) > GRID * GRID:
        raise ValueError(f"toy_vision draws 1..{GRID * GRID} characters, got {question!r}")
    if distractors < 0:
        raise ValueError(f"distractors must be >= 0, got {distractors}")
    im = Image.new("L", (SIZE, SIZE), PAPER)
    d = ImageDraw.Draw(im)
    if distractors:
        # Marks first, glyphs on top: a mark may touch a glyph but never hides its ink.
        rng = random.Random(int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big"))
        for _ in range(distractors):
            x, y = rng.randrange(SIZE), rng.randrange(SIZE)
            if rng.random() < 0.5:
                d.point((x, y), fill=MARK)
            else:
                dx, dy = rng.choice(((3, 0), (0, 3), (2, 2)))
                d.line((x, y, min(x + dx, SIZE - 1), min(y + dy, SIZE - 1)), fill=MARK)
    start = GRID * GRID - len(question)
    for k, ch in enumerate(question):
        cell = start + k
        row, col = divmod(cell, GRID)
        # 6x11 glyphs centred in a 12x12 cell.
        d.text((col * CELL + 3, row * CELL), ch, fill=INK, font=_font())
    return im


def png_bytes(question: str, distractors: int = 0) -> bytes:
    """The picture as PNG bytes; the encoder runs with fixed settings, so the bytes are reproducible."""
    buf = io.BytesIO()
    draw(question, distractors).save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def file_name(question: str, distractors: int = 0) -> str:
    h = hashlib.sha256(f"v{RENDER_VERSION}|{distractors}|{question}".encode()).hexdigest()[:20]
    return f"{h}.png"


def render_to(folder: Path, question: str, distractors: int = 0) -> Path:
    """The picture's file under `folder`, drawn once (written atomically; an existing file with other
    bytes, e.g. torn by a killed run, is redrawn)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(question, distractors)
    data = png_bytes(question, distractors)
    if not path.is_file() or path.read_bytes() != data:
        tmp = path.with_name(path.name + f".{random.getrandbits(32):08x}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path.resolve()
