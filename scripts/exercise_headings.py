"""Exercise headings state their kind, an estimated time and a difficulty; checked and applied here.

The format of every exercise heading of a chapter notebook::

    ### Exercise 4.2 (implement, 15 min, ★★☆): a padding mask from sequence lengths

kind (implement, experiment, derive, predict, design, transfer), minutes (a multiple of 5) and
one to three filled stars of three. The landing page sums the minutes per chapter
(:func:`chapter_minutes`, glued into its chapter table).

    .venv/bin/python scripts/exercise_headings.py --check chapters/*.ipynb   # exit 1 on a bad heading
    .venv/bin/python scripts/exercise_headings.py --apply chapters/08_*.ipynb  # add the estimates
    .venv/bin/python scripts/exercise_headings.py --minutes                  # minutes per chapter

``--apply`` edits only the heading lines of markdown cells (so it merges cleanly with the code
edits of a notebook's owner) and keeps a heading that already has its estimates. A new heading's
estimate comes from the exercise's reference solution: minutes and stars grow with the number of
solution lines, and an experiment adds the time its runs take (see :func:`estimate`). An author
who knows better edits the heading by hand; the check only asks for the format.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("implement", "experiment", "derive", "predict", "design", "transfer")
FULL, EMPTY = "\u2605", "\u2606"  # ★ ☆ (text glyphs every font has, never emoji)
ANY = re.compile(r"^### Exercise (\d+)\.(\d+)\b")
HEADING = re.compile(
    r"^### Exercise (?P<chapter>\d+)\.(?P<number>\d+) "
    r"\((?P<kind>" + "|".join(KINDS) + r")(?:, (?P<minutes>\d+) min, (?P<stars>[" + FULL + EMPTY + r"]{3}))?\)"
    r": (?P<title>\S.*)$"
)
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
# extra minutes by kind: an experiment runs (and waits for) training; a derivation is on paper
KIND_MINUTES = {"implement": 0, "experiment": 10, "derive": 10, "predict": 0, "design": 5, "transfer": 5}


def stars(level: int) -> str:
    """``level`` (1-3) filled stars of three: '★★☆' for 2."""
    if level not in (1, 2, 3):
        raise ValueError(f"level must be 1, 2 or 3, got {level!r}")
    return FULL * level + EMPTY * (3 - level)


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def exercises(nb: dict) -> list[tuple[int, str, int]]:
    """(cell index, heading line, solution lines) for each exercise heading of a notebook.

    The solution lines are those between the markers of the first solution cell after the heading.
    """
    cells = nb.get("cells", [])
    found = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown":
            continue
        for line in _source(cell).splitlines():
            if ANY.match(line):
                lines = 0
                for later in cells[index + 1:]:
                    if later.get("cell_type") == "code" and BEGIN in _source(later):
                        block = _source(later).split(BEGIN, 1)[1].split(END, 1)[0]
                        lines = sum(1 for row in block.splitlines() if row.strip() and not row.strip().startswith("#"))
                        break
                found.append((index, line, lines))
    return found


def problems(nb: dict) -> list[str]:
    """Every exercise heading that does not state its kind, minutes and stars in the format."""
    out = []
    for _, line, _ in exercises(nb):
        match = HEADING.match(line)
        if match is None:
            out.append(f"not in the format '### Exercise N.M (kind, M min, {stars(2)}): title': {line!r}")
        elif match["minutes"] is None:
            out.append(f"no time and difficulty: {line!r}")
        elif int(match["minutes"]) <= 0 or int(match["minutes"]) % 5:
            out.append(f"minutes must be a positive multiple of 5: {line!r}")
        elif not re.fullmatch(f"{FULL}+{EMPTY}*", match["stars"]):
            out.append(f"stars must be 1-3 filled ones then empty ones, as {stars(2)}: {line!r}")
    return out


def estimate(kind: str, solution_lines: int) -> tuple[int, int]:
    """(minutes, difficulty 1-3) of an exercise from its kind and its reference solution's length."""
    minutes = 5 + 2 * solution_lines + KIND_MINUTES.get(kind, 0)
    minutes = max(5, min(45, 5 * round(minutes / 5)))
    level = 1 if solution_lines <= 3 else 2 if solution_lines <= 10 else 3
    if kind == "derive":
        level = max(level, 2)
    return minutes, level


def apply(nb: dict) -> int:
    """Add the estimates to every heading that lacks them; return how many headings changed."""
    changed = 0
    cells = nb.get("cells", [])
    for index, line, lines in exercises(nb):
        match = HEADING.match(line)
        if match is None or match["minutes"] is not None:
            continue
        minutes, level = estimate(match["kind"], lines)
        new = (f"### Exercise {match['chapter']}.{match['number']} ({match['kind']}, {minutes} min, "
               f"{stars(level)}): {match['title']}")
        cell = cells[index]
        text = _source(cell).replace(line, new, 1)
        cell["source"] = text.splitlines(keepends=True) if isinstance(cell["source"], list) else text
        changed += 1
    return changed


def minutes(nb: dict) -> int:
    """The sum of the minutes stated in a notebook's exercise headings."""
    return sum(int(m["minutes"]) for _, line, _ in exercises(nb)
               for m in [HEADING.match(line)] if m and m["minutes"])


def chapter_minutes(chapters: Path = ROOT / "chapters") -> dict[str, tuple[int, int]]:
    """{'01': (exercises, minutes), ...} for every chapter notebook (minutes 0 where not stated)."""
    out = {}
    for path in sorted(chapters.glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        out[path.name[:2]] = (len(exercises(nb)), minutes(nb))
    return out


def _write(path: Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="report headings not in the format (exit 1)")
    action.add_argument("--apply", action="store_true", help="add estimates to headings that lack them")
    action.add_argument("--minutes", action="store_true", help="print exercises and minutes per chapter")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    if args.minutes:
        for chapter, (count, total) in chapter_minutes().items():
            print(f"{chapter}: {count} exercises, {total} min")
        return 0
    if not args.notebooks:
        parser.error("name the notebooks, e.g. chapters/*.ipynb")
    bad = 0
    for path in args.notebooks:
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        if args.apply:
            if json.dumps(nb, indent=1, ensure_ascii=False) + "\n" != text:
                print(f"{path}: not in nbformat's layout (indent 1); not touched", file=sys.stderr)
                bad += 1
                continue
            n = apply(nb)
            if n:
                _write(path, nb)
            print(f"{path}: {n} headings given their estimates")
        found = problems(nb)
        for problem in found:
            print(f"{path}: {problem}", file=sys.stderr)
        bad += bool(found)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
