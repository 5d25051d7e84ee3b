"""Every exercise of every chapter, as stored in the notebook: the solution passes its checker,
and the student copy's stub makes the same checker say "not implemented yet" (never a failure
or a traceback). One test for all chapters, so each chapter's checker tests need not repeat it."""

from __future__ import annotations

import ast
import functools
import json
from pathlib import Path

import pytest

from course_utils.student import BEGIN, stub_source

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / "chapters").glob("*.ipynb"))


def _cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


def _imports(path: Path) -> str:
    """The notebook's top-level import statements: the names a solution cell may use."""
    statements = []
    for cell in _cells(path):
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:  # a cell with IPython magics imports nothing we need
            continue
        statements += [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return "\n".join(statements)


CONTEXT_TAG = "needs-notebook-context"  # a solution that reads results computed above it (a fitted surface)
EARLIER_TAG = "uses-earlier-solutions"  # a solution that calls a function of an earlier exercise (Exercise 13.5)


def _solutions() -> list[tuple[str, str, str]]:
    found = []
    for path in CHAPTERS:
        for i, cell in enumerate(c for c in _cells(path) if "solution" in c.get("metadata", {}).get("tags", [])):
            found.append((path.name, f"{path.stem}-exercise-{i + 1}", "".join(cell["source"])))
    return found


def _namespace(notebook: str, source: str) -> dict:
    """The notebook's imports; for a solution tagged CONTEXT_TAG, also every code cell above it that is
    not itself a solution (the chapter's results the exercise builds on); for one tagged EARLIER_TAG, the
    solution cells above it (the learner's earlier functions it calls). Run once per solution and shared by its
    two tests (a fresh dict each time)."""
    return dict(_base_namespace(notebook, source))


@functools.cache
def _base_namespace(notebook: str, source: str) -> dict:
    path = Path(CHAPTERS[0].parent, notebook)
    namespace: dict = {}
    exec(_imports(path), namespace)
    cells = _cells(path)
    (index,) = [i for i, c in enumerate(cells) if "".join(c["source"]) == source]
    if CONTEXT_TAG in cells[index].get("metadata", {}).get("tags", []):
        import matplotlib

        matplotlib.use("Agg")
        for cell in cells[:index]:
            if "solution" not in cell.get("metadata", {}).get("tags", []):
                exec("".join(cell["source"]), namespace)
    if EARLIER_TAG in cells[index].get("metadata", {}).get("tags", []):
        for cell in cells[:index]:
            if "solution" in cell.get("metadata", {}).get("tags", []):
                exec("".join(cell["source"]), namespace)
    return namespace


SOLUTIONS = _solutions()


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_three_to_six_exercises(path: Path) -> None:
    tagged = [c for c in _cells(path) if "solution" in c.get("metadata", {}).get("tags", [])]
    assert 3 <= len(tagged) <= 6
    for cell in tagged:
        assert BEGIN in "".join(cell["source"]), "a solution cell must mark its solution for the student copy"
        assert "hide-input" in cell["metadata"]["tags"], "a solution must be hidden in the HTML until clicked"


@pytest.mark.parametrize(("notebook", "source"), [(n, s) for n, _, s in SOLUTIONS], ids=[i for _, i, _ in SOLUTIONS])
def test_solution_passes_its_checker(notebook: str, source: str, capsys: pytest.CaptureFixture[str]) -> None:
    namespace = _namespace(notebook, source)
    capsys.readouterr()  # what the cells above printed
    exec(source, namespace)
    out = capsys.readouterr().out
    assert "all checks passed" in out and "not right" not in out and "differs" not in out, out


@pytest.mark.parametrize(("notebook", "source"), [(n, s) for n, _, s in SOLUTIONS], ids=[i for _, i, _ in SOLUTIONS])
def test_student_stub_reports_not_implemented(notebook: str, source: str, capsys: pytest.CaptureFixture[str]) -> None:
    stub = stub_source(source)
    assert "raise NotImplementedError" in stub and BEGIN not in stub
    namespace = _namespace(notebook, source)
    capsys.readouterr()  # what the cells above printed
    exec(stub, namespace)
    out = capsys.readouterr().out
    assert "not implemented yet" in out and "all checks passed" not in out, out
    assert all("not implemented yet" in line for line in out.strip().splitlines()), out


def _checkers() -> list[tuple[str, str]]:
    """(exercise label, checker name) of every @checker in course_utils/exercises, read from the source."""
    found = []
    for path in sorted((Path(__file__).resolve().parents[1] / "course_utils" / "exercises").glob("ch*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            for deco in getattr(node, "decorator_list", []):
                if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "checker":
                    found.append((deco.args[0].value, node.name))
    return found


def test_every_checker_belongs_to_one_exercise_of_its_chapter() -> None:
    checkers = _checkers()
    labels = [label for label, _ in checkers]
    assert len(checkers) >= 40 and len(set(labels)) == len(labels), "two checkers share an exercise number"
    for label, name in checkers:
        (notebook,) = [p for p in CHAPTERS if int(p.name[:2]) == int(label.split(".")[0])]
        text = "".join("".join(c["source"]) for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"])
        assert f"### Exercise {label}:" in text or f"### Exercise {label} (" in text, f"{label} has no heading"
        assert f"{name}(" in text, f"{name} ({label}) is never called in {notebook.name}"
