"""Tests for the book's figure style (course_utils.plots.book_style, retina_png)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

from course_utils.plots import BOOK_RC, book_style, retina_png  # noqa: E402


def test_book_style_sets_column_sized_readable_defaults() -> None:
    book_style()
    assert plt.rcParams["figure.dpi"] == 100
    width_px = plt.rcParams["figure.figsize"][0] * plt.rcParams["figure.dpi"]
    assert width_px <= 688, "the default figure must fit the 688 px text column"
    assert min(BOOK_RC[k] for k in ("font.size", "xtick.labelsize", "ytick.labelsize", "legend.fontsize")) >= 9


def test_retina_png_is_twice_the_display_size_with_a_palette() -> None:
    fig, ax = plt.subplots(figsize=(4, 2), dpi=100)
    ax.plot([0, 1, 2], [1, 0, 1])
    data, meta = retina_png(fig)
    image = Image.open(io.BytesIO(data))
    assert image.mode == "P", "stored with a palette (8 bits per pixel)"
    assert abs(image.width - 2 * meta["width"]) <= 1 and abs(image.height - 2 * meta["height"]) <= 1
    assert 300 <= meta["width"] <= 400, "shown at about its size in inches x 100 px"
    plt.close(fig)


def test_retina_png_skips_an_empty_figure() -> None:
    fig = plt.figure()
    assert retina_png(fig) is None
    plt.close(fig)


# What fits the output box of the text column at 1280 px (the narrowest desktop layout, with the
# page's contents sidebar shown): 78 characters of the code font, measured in headless Chromium.
OUTPUT_COLUMN = 76


def test_printed_tables_fit_the_text_column() -> None:
    """A printed table wider than the column wraps in the HTML book and its columns fall apart.

    A table line is one with a run of three or more spaces before a number: aligned columns.
    Prose lines (checker messages) may wrap; tables may not.
    """
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    wide = []
    for path in sorted([*root.glob("chapters/*.ipynb"), *root.glob("book/*.ipynb")]):
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            for output in cell.get("outputs", []):
                text = "".join(output.get("text", "")) if output.get("output_type") == "stream" else ""
                wide += [f"{path.name} cell {i}: {len(line)} characters: {line[:60]}..."
                         for line in text.splitlines()
                         if len(line) > OUTPUT_COLUMN and re.search(r"\S {3,}[-+\d.]", line)]
    assert not wide, "\n".join(wide)
