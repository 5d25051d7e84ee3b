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
