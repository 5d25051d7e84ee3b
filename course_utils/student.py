"""The student workspace: copies of the chapters with every solution replaced by a stub.

Usage (the Makefile targets in brackets)::

    python -m course_utils.student chapters/01_attention.ipynb [more.ipynb] --out student  [make student]
    python -m course_utils.student --workspace          # copies that are missing       [make lab]
    python -m course_utils.student --reset 01           # a fresh copy, after asking    [make reset NB=01]
    python -m course_utils.student --solution 1.2       # one reference solution        [make solution EX=1.2]

A copy that exists already is the learner's work: it is never overwritten without asking
(``--force`` skips the question). In a notebook, ``show_solution("1.2")`` prints the reference
solution of exercise 1.2 from the course notebook in ``chapters/``.

In the course notebooks, the lines of a solution sit between ``### BEGIN SOLUTION`` and
``### END SOLUTION``; the student copy keeps everything else (the function signature, the
docstring, the checker call) and puts ``raise NotImplementedError`` in their place, so the
checker answers "not implemented yet" until the learner writes the code.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
# a line that looks like a marker: any number of #, any case, any spacing ("## begin  solution")
MARKER_LIKE = re.compile(r"^\s*#+\s*(BEGIN|END)\s*SOLUTION\b", re.IGNORECASE)
ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
WORKSPACE = ROOT / "student"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def stub_source(source: str) -> str:
    """Replace each BEGIN/END SOLUTION block with an indented ``raise NotImplementedError``."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str (a cell's code), got {type(source).__name__}")
    out: list[str] = []
    inside = False
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if stripped not in (BEGIN, END) and MARKER_LIKE.match(line):
            raise ValueError(f"line {number} {stripped!r} looks like a solution marker but is not one: "
                             f"write exactly {BEGIN!r} or {END!r}")
        if stripped == BEGIN:
            if inside:
                raise ValueError("found '### BEGIN SOLUTION' twice without '### END SOLUTION'")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f'{indent}raise NotImplementedError("your code here")')
        elif stripped == END:
            if not inside:
                raise ValueError("found '### END SOLUTION' without '### BEGIN SOLUTION'")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError("'### BEGIN SOLUTION' has no matching '### END SOLUTION'")
    return "\n".join(out)


def make_student_copy(src: Path, dst: Path) -> int:
    """Write the student copy of notebook ``src`` to ``dst``; return how many solutions were stubbed."""
    nb = json.loads(Path(src).read_text(encoding="utf-8"))
    stubbed = 0
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if any(MARKER_LIKE.match(line) for line in source.splitlines()):
            try:
                source = stub_source(source)
            except ValueError as error:
                raise ValueError(f"{Path(src).name}, cell {index} (id {cell.get('id', '?')}): {error}") from None
            stubbed += source.count("raise NotImplementedError")
            tags = cell.setdefault("metadata", {}).get("tags", [])
            cell["metadata"]["tags"] = [t for t in tags if t not in ("hide-input", "solution")]
        cell["source"] = [line for line in re.split(r"(?<=\n)", source) if line]
        cell["outputs"], cell["execution_count"] = [], None
    # name the kernel, so JupyterLab starts the course's Python without asking which kernel
    nb.setdefault("metadata", {}).setdefault("kernelspec", KERNELSPEC)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return stubbed


def is_chapter(path: Path, chapters: Path = CHAPTERS) -> bool:
    """True when ``path`` is a course chapter: a notebook NN_name.ipynb directly in ``chapters``."""
    path = Path(path)
    return (path.suffix == ".ipynb" and re.fullmatch(r"\d\d_\w+", path.stem) is not None
            and path.resolve().parent == Path(chapters).resolve())


def chapter_path(chapter: str | int | Path, chapters: Path = CHAPTERS) -> Path:
    """The course notebook named by ``chapter``: 1, "01", "01_attention" or a path to it."""
    if isinstance(chapter, Path) or str(chapter).endswith(".ipynb"):
        path = Path(str(chapter))
        if path.exists():
            if not is_chapter(path, chapters):
                raise ValueError(f"chapter must be a course chapter in {chapters.name}/ (e.g. "
                                 f"{chapters.name}/01_attention.ipynb), got {path}")
            return path
        chapter = path.stem
    name = str(chapter)
    available = sorted(p.stem for p in Path(chapters).glob("*.ipynb"))
    if name.isdigit():
        name = f"{int(name):02d}"
    found = [s for s in available if s == name or s.split("_", 1)[0] == name]
    if len(found) != 1:
        raise ValueError(f"chapter must name one of {', '.join(available)} (e.g. 01), got {chapter!r}")
    return Path(chapters) / f"{found[0]}.ipynb"


def ensure_workspace(out: Path = WORKSPACE, chapters: Path = CHAPTERS) -> list[Path]:
    """Make the student copy of every chapter that has none in ``out``; return the ones made.

    Existing copies hold the learner's work and are left exactly as they are.
    """
    if not Path(chapters).is_dir():
        raise FileNotFoundError(f"chapters must be the folder of the course's notebooks, got {Path(chapters)}, "
                                f"which is not a folder")
    made = []
    for src in sorted(Path(chapters).glob("*.ipynb")):
        dst = Path(out) / src.name
        if not dst.exists():
            make_student_copy(src, dst)
            made.append(dst)
    return made


NO_TERMINAL = "there is no terminal to ask whether to replace it"


def _confirm(question: str, ask: Callable[[str], str] | None) -> bool | None:
    """The answer to a yes/no question: True, False, or None when there is no terminal to ask."""
    if ask is None:
        if not sys.stdin.isatty():
            return None
        ask = input
    return ask(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def _kept(dst: Path, answer: bool | None, chapter: str) -> str:
    """Why a copy was kept, and how to replace it anyway."""
    if answer is None:
        return (f"{dst}: kept as it is: {NO_TERMINAL} (your work in it would be lost). To replace it anyway: "
                f"make reset NB={chapter} FORCE=1 (or python -m course_utils.student --reset {chapter} --force)")
    return f"{dst}: kept as it is"


def reset_chapter(chapter: str | int | Path, out: Path = WORKSPACE, chapters: Path = CHAPTERS,
                  ask: Callable[[str], str] | None = None, force: bool = False) -> bool:
    """Replace the student copy of one chapter with a fresh one, after asking; True if it was replaced.

    ``ask`` is the question function (default: ``input`` when a terminal is attached; with no
    terminal the answer is no). ``force=True`` replaces without asking.
    """
    src = chapter_path(chapter, chapters)
    dst = Path(out) / src.name
    if dst.exists() and not force:
        question = f"Replace {dst} with a fresh copy? Everything you wrote in it will be lost."
        answer = _confirm(question, ask)
        if not answer:
            print(_kept(dst, answer, src.stem[:2]))
            return False
    n = make_student_copy(src, dst)
    print(f"{dst}: fresh copy, {n} solution block(s) turned into stubs")
    return True


def _solution_cells(path: Path) -> list[str]:
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"]
            if c["cell_type"] == "code" and "solution" in c.get("metadata", {}).get("tags", [])]


def solution_source(exercise: str, chapters: Path = CHAPTERS) -> str:
    """The code of the reference solution of ``exercise`` ("1.2": chapter 1, its 2nd exercise), markers removed."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", str(exercise))
    if not match:
        raise ValueError(f"exercise must look like '1.2' (chapter.exercise), got {exercise!r}")
    chapter, number = int(match[1]), int(match[2])
    path = chapter_path(chapter, chapters)
    cells = _solution_cells(path)
    if not 1 <= number <= len(cells):
        raise ValueError(f"chapter {chapter} has exercises {chapter}.1 to {chapter}.{len(cells)}, got {exercise!r}")
    lines = [line for line in cells[number - 1].splitlines() if line.strip() not in (BEGIN, END)]
    return "\n".join(lines)


def show_solution(exercise: str, chapters: Path = CHAPTERS) -> None:
    """Print the reference solution of one exercise, e.g. ``show_solution("1.2")``, once you have tried it."""
    source = solution_source(exercise, chapters)
    name = chapter_path(int(exercise.split(".")[0]), chapters).name
    print(f"# Reference solution of exercise {exercise.strip()} (from chapters/{name})")
    print(source)


def checker_of(source: str, chapter_module: str) -> object:
    """The checker a solution cell calls last (its ``.exercise`` is the exercise id). Used by the tests."""
    if not isinstance(source, str) or not isinstance(chapter_module, str):
        bad_name, bad = ("source", source) if not isinstance(source, str) else ("chapter_module", chapter_module)
        raise TypeError(f"{bad_name} must be a str, got {type(bad).__name__}")
    calls = re.findall(r"^(check_\w+)\(", source, flags=re.MULTILINE)
    if not calls:
        raise ValueError("the solution cell calls no check_... function")
    module = importlib.import_module(chapter_module)
    if hasattr(module, calls[-1]):
        return getattr(module, calls[-1])
    # a chapter's checkers may sit in several modules (ch09_length, ch09_stretch): look in its siblings
    package, _, name = chapter_module.rpartition(".")
    prefix = re.match(r"ch\d+_", name)
    folder = Path(module.__file__).parent if prefix and module.__file__ else None
    siblings = sorted(f"{package}.{m.stem}" for m in folder.glob(f"{prefix[0]}*.py")) if folder and prefix else []
    found = [m for m in siblings if hasattr(importlib.import_module(m), calls[-1])]
    if not found:
        raise ValueError(f"{calls[-1]} is in none of the chapter's checker modules "
                         f"({', '.join(siblings) or chapter_module})")
    return getattr(importlib.import_module(found[0]), calls[-1])


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=WORKSPACE)
    parser.add_argument("--force", action="store_true", help="overwrite existing copies without asking")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--workspace", action="store_true", help="make the copies that are missing")
    group.add_argument("--reset", metavar="CHAPTER", help="a fresh copy of one chapter (e.g. 01), after asking")
    group.add_argument("--solution", metavar="EXERCISE", help="print the reference solution (e.g. 1.2)")
    args = parser.parse_args(argv)
    try:
        if args.workspace:
            made = ensure_workspace(args.out)
            kept = len(list(args.out.glob("*.ipynb"))) - len(made)
            print(f"{args.out}: {len(made)} new student copies, {kept} existing ones kept as they are")
            return
        if args.reset:
            reset_chapter(args.reset, args.out, force=args.force)
            return
        if args.solution:
            show_solution(args.solution)
            return
    except ValueError as error:
        parser.error(str(error))
    if not args.notebooks:
        parser.error("name the notebooks to copy, or use --workspace, --reset or --solution")
    for src in args.notebooks:
        if not src.exists():
            parser.error(f"notebook not found: {src}")
        if not is_chapter(src):
            parser.error(f"notebooks must be course chapters in chapters/ (e.g. chapters/01_attention.ipynb), "
                         f"got {src}: other notebooks hold no exercises to turn into stubs")
        dst = args.out / src.name
        answer = None if args.force or not dst.exists() else _confirm(
            f"Overwrite {dst}? Your work in it will be lost.", None)
        if dst.exists() and not args.force and not answer:
            if answer is None:
                print(f"{dst}: exists, kept as it is: {NO_TERMINAL}; add --force to replace it "
                      f"(or make reset NB={src.stem[:2]} FORCE=1)")
            else:
                print(f"{dst}: exists, kept as it is (make reset NB={src.stem[:2]} replaces it after asking)")
            continue
        try:
            n = make_student_copy(src, dst)
        except ValueError as error:
            parser.error(str(error))
        print(f"{dst}: {n} solution block(s) turned into stubs")


if __name__ == "__main__":
    main()
