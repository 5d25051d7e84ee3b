"""Tests for course_utils.student: the student copy of Chapter 1 has stubs that the checkers report."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402

from course_utils.student import BEGIN, END, main, make_student_copy, stub_source  # noqa: E402

CHAPTER = Path(__file__).resolve().parents[1] / "chapters" / "01_attention.ipynb"

SOLUTION_CELL = f"""def my_fn(x):
    \"\"\"Doc.\"\"\"
    {BEGIN}
    y = x + 1
    return y
    {END}


class M:
    def f(self):
        {BEGIN}
        return 1
        {END}


check(my_fn)"""


def test_stub_source_replaces_each_block_keeping_indent() -> None:
    out = stub_source(SOLUTION_CELL)
    assert "y = x + 1" not in out and "return 1" not in out and BEGIN not in out and END not in out
    assert '    raise NotImplementedError("your code here")' in out.splitlines()
    assert '        raise NotImplementedError("your code here")' in out.splitlines()
    assert out.count("raise NotImplementedError") == 2
    assert out.startswith('def my_fn(x):\n    """Doc."""') and out.endswith("check(my_fn)")
    compile(out, "<stub>", "exec")  # still valid Python


def test_stub_source_leaves_plain_code_alone() -> None:
    assert stub_source("x = 1\nprint(x)") == "x = 1\nprint(x)"


@pytest.mark.parametrize(
    ("source", "message"),
    [(f"{BEGIN}\n{BEGIN}\n{END}", "twice"), (f"x\n{END}", "without"), (f"{BEGIN}\nx", "no matching")],
)
def test_stub_source_unbalanced_markers(source: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stub_source(source)


@pytest.fixture(scope="module")
def student_nb(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, int]:
    dst = tmp_path_factory.mktemp("student") / "01_attention.ipynb"
    n = make_student_copy(CHAPTER, dst)
    return json.loads(dst.read_text(encoding="utf-8")), n


def test_student_copy_of_chapter_1(student_nb: tuple[dict, int]) -> None:
    nb, n = student_nb
    original = json.loads(CHAPTER.read_text(encoding="utf-8"))
    assert n == 8  # softmax, attention, prediction, top_weight, MyMHA.__init__, MyMHA.forward, lookup_queries, kernel
    assert len(nb["cells"]) == len(original["cells"])
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"  # JupyterLab starts it without asking
    sources = ["".join(c["source"]) for c in code]
    assert not any(BEGIN in s or END in s for s in sources)
    assert not any("x.max(dim=-1, keepdim=True)" in s for s in sources)  # the softmax solution is gone
    stubs = [c for c in code if "raise NotImplementedError" in "".join(c["source"])]
    assert all("solution" not in c["metadata"].get("tags", []) for c in stubs)
    assert all("hide-input" not in c["metadata"].get("tags", []) for c in stubs)
    originals = [c for c in original["cells"] if c["cell_type"] == "code" and BEGIN in "".join(c["source"])]
    assert len(stubs) == len(originals) == 6


def test_stubbed_exercises_report_not_implemented(
    student_nb: tuple[dict, int], capsys: pytest.CaptureFixture[str]
) -> None:
    nb, _ = student_nb
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    namespace: dict = {}
    exec(code[0], namespace)  # the imports of the chapter
    exec(next(s for s in code if "from course_utils.exercises.ch01_attention import" in s), namespace)
    capsys.readouterr()
    stubs = [s for s in code if "raise NotImplementedError" in s]
    for source in stubs:
        exec(source, namespace)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(stubs) == 6
    for n, line in enumerate(lines, 1):
        assert f"Exercise 1.{n} " in line and "not implemented yet" in line, line


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main([str(CHAPTER), "--out", str(tmp_path)])
    assert (tmp_path / CHAPTER.name).exists()
    assert "8 solution block(s) turned into stubs" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing.ipynb"), "--out", str(tmp_path)])


# --- the student workspace --------------------------------------------------------------------

from course_utils.student import (  # noqa: E402
    CHAPTERS,
    chapter_path,
    checker_of,
    ensure_workspace,
    reset_chapter,
    show_solution,
    solution_source,
)


def test_chapter_path_accepts_number_prefix_and_stem() -> None:
    assert chapter_path(1) == chapter_path("01") == chapter_path("01_attention") == CHAPTER
    with pytest.raises(ValueError, match="chapter must name one of 01_attention, .* got '99'"):
        chapter_path("99")


def test_workspace_makes_missing_copies_and_keeps_existing_work(tmp_path: Path) -> None:
    mine = tmp_path / CHAPTER.name
    mine.write_text("my work", encoding="utf-8")
    made = ensure_workspace(tmp_path)
    assert mine.read_text(encoding="utf-8") == "my work"  # never overwritten
    assert mine not in made and len(made) == len(list(CHAPTERS.glob("*.ipynb"))) - 1
    assert ensure_workspace(tmp_path) == []  # nothing missing any more


def test_reset_asks_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / CHAPTER.name
    mine.write_text("my work", encoding="utf-8")
    questions: list[str] = []
    assert not reset_chapter("01", tmp_path, ask=lambda q: questions.append(q) or "n")
    assert mine.read_text(encoding="utf-8") == "my work" and "Everything you wrote in it will be lost" in questions[0]
    assert not reset_chapter("01", tmp_path)  # no terminal to ask: the answer is no
    assert mine.read_text(encoding="utf-8") == "my work"
    assert reset_chapter("1", tmp_path, ask=lambda q: "yes")
    assert "raise NotImplementedError" in mine.read_text(encoding="utf-8")
    assert "fresh copy, 8 solution block(s)" in capsys.readouterr().out


def test_command_line_keeps_existing_copies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / CHAPTER.name
    mine.write_text("my work", encoding="utf-8")
    main([str(CHAPTER), "--out", str(tmp_path)])
    assert mine.read_text(encoding="utf-8") == "my work" and "kept as it is" in capsys.readouterr().out
    main([str(CHAPTER), "--out", str(tmp_path), "--force"])
    assert "raise NotImplementedError" in mine.read_text(encoding="utf-8")


def _exercises() -> list[tuple[Path, int]]:
    return [(path, i) for path in sorted(CHAPTERS.glob("*.ipynb"))
            for i in range(1, 1 + sum("solution" in c.get("metadata", {}).get("tags", [])
                                      for c in json.loads(path.read_text(encoding="utf-8"))["cells"]))]


@pytest.mark.parametrize(("path", "number"), _exercises(), ids=lambda x: getattr(x, "stem", str(x)))
def test_solution_n_of_chapter_c_is_exercise_c_n(path: Path, number: int) -> None:
    chapter = int(path.name[:2])
    source = solution_source(f"{chapter}.{number}")
    assert BEGIN not in source and END not in source and "NotImplementedError" not in source
    module = next(m.stem for m in (CHAPTERS.parent / "course_utils" / "exercises").glob(f"ch{chapter:02d}_*.py"))
    assert checker_of(source, f"course_utils.exercises.{module}").exercise == f"{chapter}.{number}"


def test_show_solution_prints_the_code(capsys: pytest.CaptureFixture[str]) -> None:
    show_solution("1.2")
    out = capsys.readouterr().out
    assert out.startswith("# Reference solution of exercise 1.2 (from chapters/01_attention.ipynb)")
    assert "def my_attention(" in out and "check_scaled_attention(my_attention)" in out
    for bad, message in (("1", "must look like '1.2'"), ("1.9", "has exercises 1.1 to 1.6, got '1.9'")):
        with pytest.raises(ValueError, match=message):
            solution_source(bad)


# --- malformed markers, non-chapter notebooks, no terminal (issue 23) -----------------------------------

@pytest.mark.parametrize(
    ("source", "message"),
    [(f"{BEGIN}\nx\n{BEGIN}\ny\n{END}", "twice"),  # nested BEGIN
     (f"x = 1\n{END}", "without"),  # END without BEGIN
     (f"{BEGIN}\nx = 1", "no matching"),  # BEGIN without END
     ("## BEGIN SOLUTION\nx = 1\n### END SOLUTION", "looks like a solution marker"),
     ("### begin solution\nx = 1\n### END SOLUTION", "looks like a solution marker"),
     (f"{BEGIN}\nx = 1\n#END SOLUTION", "looks like a solution marker")],
)
def test_malformed_markers_are_errors_that_name_the_line(source: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stub_source(source)


def _notebook(path: Path, sources: list[str]) -> Path:
    cells = [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": s, "outputs": [],
              "execution_count": None} for i, s in enumerate(sources)]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                    encoding="utf-8")
    return path


def test_student_copy_names_the_cell_with_a_bad_marker(tmp_path: Path) -> None:
    # an END alone in a cell has no BEGIN in that cell: it was skipped silently before
    src = _notebook(tmp_path / "01_x.ipynb", ["x = 1", f"y = 2\n{END}"])
    with pytest.raises(ValueError, match=r"01_x.ipynb, cell 1 \(id c1\): found '### END SOLUTION' without"):
        make_student_copy(src, tmp_path / "out" / "01_x.ipynb")


def test_only_course_chapters_get_student_copies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = _notebook(tmp_path / "intro.ipynb", ["x = 1"])
    with pytest.raises(SystemExit):
        main([str(other), "--out", str(tmp_path / "out")])
    assert "must be course chapters in chapters/" in capsys.readouterr().err
    copy = tmp_path / CHAPTER.name
    copy.write_text(CHAPTER.read_text(encoding="utf-8"), encoding="utf-8")  # a chapter outside chapters/
    with pytest.raises(SystemExit):
        main([str(copy), "--out", str(tmp_path / "out")])
    with pytest.raises(ValueError, match="chapter must be a course chapter in chapters/"):
        chapter_path(copy)
    assert not (tmp_path / "out").exists()


def test_no_terminal_says_why_and_how_to_force(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    mine = tmp_path / CHAPTER.name
    mine.write_text("my work", encoding="utf-8")
    assert not reset_chapter("01", tmp_path)
    out = capsys.readouterr().out
    assert "no terminal to ask" in out and "FORCE=1" in out and "--force" in out
    main([str(CHAPTER), "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "no terminal to ask" in out and "--force" in out and mine.read_text(encoding="utf-8") == "my work"
    assert reset_chapter("01", tmp_path, force=True)
    assert "raise NotImplementedError" in mine.read_text(encoding="utf-8")
