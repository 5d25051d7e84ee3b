"""Every exercise heading states its kind, an estimated time and a difficulty (issue 38.8)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import exercise_headings as eh  # noqa: E402  (scripts/exercise_headings.py)

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
# Chapters whose owners had not yet applied `scripts/exercise_headings.py --apply` when the format
# came in: their headings are checked as soon as they carry estimates. Empty this set once applied.
PENDING: set[str] = set()


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name[:2])
def test_every_exercise_heading_states_kind_minutes_and_stars(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    headings = eh.exercises(nb)
    assert len(headings) >= 3, f"{path.name}: a chapter has 3-6 exercises, found {len(headings)} headings"
    found = eh.problems(nb)
    if found and path.name[:2] in PENDING and eh.minutes(nb) == 0:
        pytest.xfail(f"{path.name}: headings not yet given estimates (run scripts/exercise_headings.py --apply)")
    assert found == [], f"{path.name}: " + "; ".join(found)


def test_the_format_is_parsed_and_summed() -> None:
    nb = {"cells": [
        {"cell_type": "markdown", "source": ["## Exercises\n", "### Exercise 9.1 (derive, 20 min, ★★☆): a\n"]},
        {"cell_type": "code", "source": "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n"},
        {"cell_type": "markdown", "source": "### Exercise 9.2 (implement): b"},
        {"cell_type": "code",
         "source": "def g():\n    ### BEGIN SOLUTION\n    x = 1\n    return x\n    ### END SOLUTION\n"},
    ]}
    assert eh.minutes(nb) == 20
    assert eh.problems(nb) == ["no time and difficulty: '### Exercise 9.2 (implement): b'"]
    assert eh.apply(nb) == 1
    assert nb["cells"][2]["source"] == "### Exercise 9.2 (implement, 10 min, ★☆☆): b"
    assert eh.problems(nb) == [] and eh.minutes(nb) == 30
    assert eh.apply(nb) == 0  # a heading with its estimates is kept as written


@pytest.mark.parametrize("line", [
    "### Exercise 1.1 (implement, 12 min, ★★☆): not a multiple of 5",
    "### Exercise 1.1 (implement, 10 min, ☆★★): stars in the wrong order",
    "### Exercise 1.1 (guess, 10 min, ★★☆): unknown kind",
    "### Exercise 1.1: no kind",
])
def test_bad_headings_are_reported(line: str) -> None:
    nb = {"cells": [{"cell_type": "markdown", "source": line}]}
    assert len(eh.problems(nb)) == 1


def test_estimates_stay_in_range() -> None:
    for kind in eh.KINDS:
        for lines in (0, 1, 5, 30, 200):
            minutes, level = eh.estimate(kind, lines)
            assert 5 <= minutes <= 45 and minutes % 5 == 0 and level in (1, 2, 3)
    with pytest.raises(ValueError, match="level must be 1, 2 or 3"):
        eh.stars(4)
