"""Code cells fit the book's code box at 1280 px (issue 38.3): no line of a shown code cell is
longer than the 80 columns the box holds (course.css: 13.5 px monospace at >= 992 px), so no cell
scrolls sideways on a desktop. ``ruff format`` wraps code at 79 columns (chapters/ruff.toml) but
leaves long strings and comments alone: split those by hand (implicit string concatenation, a
variable for a long expression, the comment on the line above)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [ROOT / "book" / "intro.ipynb", *sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))]
BOX_COLUMNS = 80
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")  # the book does not show them
# Chapters whose owners have not yet split their long lines: they are listed (xfail) until then.
PENDING: set[str] = set()


def long_lines(path: Path) -> list[str]:
    """'cell N: line' for each shown code line longer than the box (cells tagged remove-input are not shown)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or "remove-input" in cell.get("metadata", {}).get("tags", []):
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        out += [f"cell {index}: {line.strip()[:60]} ({len(line)} columns)" for line in source.splitlines()
                if len(line) > BOX_COLUMNS and line.strip() not in MARKERS]
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2] if p.parent.name == "chapters" else "intro")
def test_code_cells_fit_the_desktop_code_box(path: Path) -> None:
    found = long_lines(path)
    if found and path.stem[:2] in PENDING and path.parent.name == "chapters":
        pytest.xfail(f"{path.name}: {len(found)} lines wider than {BOX_COLUMNS} columns, to be split by its owner")
    assert found == [], f"{path.name}: {len(found)} code lines wider than the box: {found[:8]}"
