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


def _shown(meta: dict) -> float:
    """The smallest text (CSS px) of a figure's picture as a 342-px phone column shows it."""
    return meta["text_px"] * min(1.0, 342 / meta["width"])


def test_retina_png_records_the_smallest_text_and_draws_a_phone_version() -> None:
    """A wide two-panel figure: its text would be ~6 px on a phone, so a stacked phone version
    with text of at least 9 shown px is stored beside it; the figure itself is left as it was."""
    import base64

    book_style()
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 2.8))
    for ax in axes:
        ax.plot([0, 1, 2], [1, 0, 1], label="line")
        ax.legend(fontsize=8)
    fig.tight_layout()
    before = [ax.get_position().bounds for ax in axes]
    data, meta = retina_png(fig)
    assert meta["text_px"] == round(8 * 100 / 72, 1), "the legend's 8 pt is the smallest text"
    assert _shown(meta) < 9
    phone = meta["phone"]
    assert _shown(phone) >= 9, f"the phone version's text is {_shown(phone):.1f} px on a phone"
    png = base64.b64decode(phone["png"])
    image = Image.open(io.BytesIO(png))
    assert image.height > image.width, "the two panels are stacked"
    assert [ax.get_position().bounds for ax in axes] == before and tuple(fig.get_size_inches()) == (6.4, 2.8)
    assert retina_png(fig)[0] == data, "drawing the phone version leaves the figure as it was"
    plt.close(fig)


def test_a_narrow_figure_needs_no_phone_version() -> None:
    book_style()
    fig, ax = plt.subplots(figsize=(3.4, 2.5))
    ax.plot([0, 1], [0, 1])
    _, meta = retina_png(fig)
    assert "phone" not in meta and _shown(meta) >= 9
    plt.close(fig)


def test_the_architecture_and_patch_attention_figures_are_legible_on_a_phone() -> None:
    import numpy as np

    from course_utils.diagrams import draw_transformer
    from course_utils.plots import patch_attention_figure

    book_style()
    rng = np.random.default_rng(0)
    figures = [draw_transformer(),
               patch_attention_figure(rng.random((4, 8, 8)), rng.dirichlet(np.ones(4), size=4).reshape(4, 2, 2))]
    for fig in figures:
        _, meta = retina_png(fig)
        shown = _shown(meta.get("phone", meta))
        assert shown >= 9, f"{fig.axes[0]}: {shown:.1f} px on a phone"
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


# --- Reader pages hold reader material: the checks that used to sit in the chapters ---------

import base64  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / "chapters").glob("*.ipynb"))


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_every_object_named_in_the_map_of_the_paper_exists() -> None:
    """Chapter 10's map of the paper names course_utils objects: each one must import."""
    chapter = next(p for p in CHAPTERS if p.name.startswith("10_"))
    text = "".join("".join(c["source"]) for c in _cells(chapter) if c["cell_type"] == "markdown")
    table = text[text.index("## The map of the paper"):]
    rows = [line for line in table.splitlines() if line.startswith("|") and "---" not in line][1:]
    names = {n for row in rows for n in re.findall(r"`([a-z_]+\.[A-Za-z_]+)`", row.split("|")[-2])}
    assert len(names) >= 15, f"expected the map's course_utils column, found {sorted(names)}"
    missing = []
    for name in sorted(names):
        module, attr = name.split(".")
        try:
            obj = getattr(importlib.import_module(f"course_utils.{module}"), attr)
        except (ImportError, AttributeError):
            missing.append(name)
            continue
        if not callable(obj):
            missing.append(name)
    assert missing == [], f"the map of the paper names objects that do not exist: {missing}"


def test_explorer_frames_stay_small() -> None:
    """Every explorer's frames (stored in the notebook, served one file each) stay small."""
    found = 0
    for chapter in CHAPTERS:
        for cell in _cells(chapter):
            for out in cell.get("outputs", []):
                html = "".join(out.get("data", {}).get("text/html", ""))
                if 'class="cu-explorer"' not in html:
                    continue
                found += 1
                # a reader loads one set: the wide frames, or the phone frames on a phone
                for kind in ("cu-frame-wide", "cu-frame-phone", None):
                    pattern = (f'class="{kind}"' if kind else r'<img data-key="[^"]*" alt') \
                        + r'[^>]*base64,([A-Za-z0-9+/=]+)'
                    frames = [len(base64.b64decode(d)) for d in re.findall(pattern, html)]
                    if kind is None and not frames and "cu-frame-wide" in html:
                        continue  # an explorer with a phone layout has no unclassed frames
                    assert frames or kind == "cu-frame-phone", f"{chapter.name}: an explorer with no frames"
                    if frames:
                        assert max(frames) <= 120 * 1024, f"{chapter.name}: a frame of {max(frames) // 1024} KiB"
                        assert sum(frames) <= 900 * 1024, f"{chapter.name}: {sum(frames) // 1024} KiB of frames"
    assert found >= 4, f"expected the book's explorers, found {found}"


INTERNAL = re.compile(r"#.*\bnbval\b|KiB of HTML", re.IGNORECASE)


def test_chapter_code_holds_no_tool_talk() -> None:
    """Comments aimed at the test tools and asset-size prints stay out of the reader's code."""
    found = [f"{p.name}: {line.strip()[:60]}" for p in CHAPTERS for c in _cells(p) if c["cell_type"] == "code"
             for line in "".join(c["source"]).splitlines() if INTERNAL.search(line)]
    assert found == [], f"chapter code talks about the test tools: {found}"


def test_quiz_code_is_removed_not_hidden() -> None:
    """A quiz cell's code holds the answers: the book removes it (no toggle reveals it)."""
    quizzes = 0
    for chapter in CHAPTERS:
        for cell in _cells(chapter):
            if cell["cell_type"] == "code" and "Quiz(" in "".join(cell["source"]):
                quizzes += 1
                tags = cell.get("metadata", {}).get("tags", [])
                assert "remove-input" in tags and "hide-input" not in tags, f"{chapter.name}: quiz cell tags {tags}"
    assert quizzes >= len(CHAPTERS), f"expected a quiz per chapter, found {quizzes}"
