"""Every checker accepts right answers in several styles and catches realistic wrong ones by name.

The answers live in tests/checker_mistakes_table.py (one row each). Run this file as a script
(``.venv/bin/python tests/test_checker_mistakes.py``) to print the counts for the closing note.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import io
import re
from collections import Counter
from pathlib import Path

import pytest
import torch
from checker_mistakes_table import ROWS as TABLE_ROWS  # tests/ is on sys.path (pytest and python tests/...)

EXERCISES = Path(__file__).resolve().parents[1] / "course_utils" / "exercises"
# A chapter's own table may live in tests/checker_mistakes_chNN.py (a list ROWS of the same rows, built
# with right()/wrong() from checker_mistakes_table): every such file is read, so chapters being written
# in parallel do not all edit one file.
ROWS = list(TABLE_ROWS) + [
    row
    for path in sorted(Path(__file__).resolve().parent.glob("checker_mistakes_ch*.py"))
    for row in importlib.import_module(path.stem).ROWS
]

# Checkers the table leaves out, each with its reason. Every other @checker must have rows.
EXEMPT = {
    # experiments and derivations: their answers are measurements or numbers, tried by their own test files
    "2.5": "experiment:"
             " tests/test_exercises_ch02.py tries the reference, two other right answers and three named mistakes",
    "5.5": "experiment:"
             " tests/test_exercises_ch05.py tries the reference, two other right answers and three named mistakes",
    "6.5": "experiment:"
             " tests/test_exercises_ch06.py tries the reference, two other right answers and three named mistakes",
    "7.5": "experiment:"
             " tests/test_exercises_ch07.py tries the reference, two other right answers and three named mistakes",
    "8.2": "implement (the KV cache internals, with a spy):"
             " tests/test_exercises_ch08.py tries the reference, two other right answers and three named mistakes",
    "8.5": "implement (DecoderOnly assembled):"
             " tests/test_exercises_ch08.py tries the reference, two other right answers and three named mistakes",
    "9.1": "derive:"
             " tests/test_exercises_ch09.py tries the reference, two other right answers and three named mistakes",
    "9.2": "derive:"
             " tests/test_exercises_ch09.py tries the reference, two other right answers and three named mistakes",
    "9.4": "implement:"
             " tests/test_exercises_ch09.py tries the reference, two other right answers and three named mistakes",
    "9.5": "experiment:"
             " tests/test_exercises_ch09.py tries the reference, two other right answers and three named mistakes",
    "10.1": "derive:"
             " tests/test_exercises_ch10.py tries the reference, two other right answers and three named mistakes",
    "10.2": "experiment:"
             " tests/test_exercises_ch10.py tries the reference, two other right answers and three named mistakes",
    "10.4": "predict:"
             " tests/test_exercises_ch10.py tries the reference, two other right answers and three named mistakes",
    "13.6": "transfer (French):"
             " tests/test_exercises_ch13.py tries the reference, another right answer and eight named mistakes",
    # transfer and prediction exercises checked by their own test files with answers of their kind
    "1.5": "transfer exercise (design queries):"
             " tests/test_exercises_ch01.py tries its answers",
    "3.5": "prediction exercise (a number within a range):"
             " tests/test_exercises_ch03.py",
    "4.5": "transfer exercise (left padding):"
             " tests/test_exercises_ch04.py",
}


def checkers_in_source() -> dict[str, str]:
    """{exercise label: checker name} of every @checker in course_utils/exercises, read from the source."""
    found = {}
    for path in sorted(EXERCISES.glob("ch*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            for deco in getattr(node, "decorator_list", []):
                if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "checker":
                    found[deco.args[0].value] = node.name
    return found


@functools.cache
def run_index(i: int):  # type: ignore[no-untyped-def]
    _, check, answer, _ = ROWS[i]
    torch.manual_seed(0)
    with contextlib.redirect_stdout(io.StringIO()):
        return check(*answer)


def run(row):  # type: ignore[no-untyped-def]
    return run_index(ROWS.index(row))


def is_specific(message: str) -> bool:
    """True when a failure message names the mistake instead of only locating a difference.

    Generic: "differs from the reference ...", "checking stopped with ...", a crash of the
    learner's code reported with no hint after "(called with ...)", "should be 0.5, got 0.25".
    """
    if "differs from the reference" in message or "checking stopped with" in message:
        return False
    if " raised " in message and message.rstrip().endswith(")"):
        return False
    return re.search(r"should be -?[0-9.e+-]+, got", message) is None


def _id(row) -> str:  # type: ignore[no-untyped-def]
    ex, _, _, hint = row
    return f"{ex}-{'right' if hint is None else hint[:30]}"


@pytest.mark.parametrize("row", ROWS, ids=[_id(r) for r in ROWS])
def test_row(row) -> None:  # type: ignore[no-untyped-def]
    result = run(row)
    hint = row[3]
    message = result.message
    assert "\n" not in message, message  # one line, never a module repr or a traceback
    if hint is None:
        assert result.passed, message
    else:
        assert not result.passed and not result.not_implemented, message
        assert hint in message, message


def test_table_covers_every_checker() -> None:
    per_checker = Counter(ex for ex, *_ in ROWS)
    right = Counter(ex for ex, _, _, hint in ROWS if hint is None)
    existing = checkers_in_source()
    assert len(existing) >= 40, "the AST scan found too few checkers: did course_utils/exercises move?"
    missing = set(existing) - set(per_checker) - set(EXEMPT)
    assert not missing, f"checkers with no rows in tests/checker_mistakes_table.py: {sorted(missing)}"
    assert set(per_checker) <= set(existing), f"rows for unknown exercises: {sorted(set(per_checker) - set(existing))}"
    stale = {ex for ex in EXEMPT if ex not in existing or ex in per_checker}
    assert not stale, f"exemptions for checkers that are gone or now have rows: {sorted(stale)}"
    for ex, n in per_checker.items():
        assert right[ex] >= 2, f"{ex}: {right[ex]} right answers"
        assert n - right[ex] >= 6, f"{ex}: {n - right[ex]} wrong answers"
    # every checker that hands the answer a tensor also catches an answer that changes it in place;
    # these take only numbers or build the learner's class from numbers, so there is nothing to change
    # 6.2 and 6.3 train the model they are handed (changing it is their job); 9.3 and 10.3 take numbers
    # 3.6 re-initialises the stack it is handed (in place is its job); 9.6 and 13.3 take numbers
    # 12.4 takes a parameter count, 12.5 numbers, 12.6 a size and a number of steps (passed as copies)
    no_tensor_input = {"1.3", "2.1", "2.2", "2.4", "3.3", "3.6", "4.1", "4.3", "5.1", "5.2", "6.2", "6.3", "9.3", "9.6",
                       "10.3", "12.4", "12.5", "12.6", "13.3"}
    in_place = {ex for ex, *_, hint in ROWS if hint == "in place"}
    assert in_place == set(per_checker) - no_tensor_input


def counts() -> dict[str, int]:
    """Wrong answers tried/caught/with a specific hint, and right answers tried/accepted."""
    out = Counter()
    for row in ROWS:
        result = run(row)
        if row[3] is None:
            out["right tried"] += 1
            out["right accepted"] += bool(result.passed)
        else:
            out["wrong tried"] += 1
            if not result.passed:
                out["wrong caught"] += 1
                out["specific hint"] += is_specific(result.message)
    return dict(out)


def chapter_of(exercise: str) -> int:
    return int(exercise.split(".")[0])


def counts_by_chapter() -> dict[int, dict[str, int]]:
    """:func:`counts` per chapter."""
    out: dict[int, Counter] = {}
    for row in ROWS:
        result = run(row)
        c = out.setdefault(chapter_of(row[0]), Counter())
        if row[3] is None:
            c["right tried"] += 1
            c["right accepted"] += bool(result.passed)
        else:
            c["wrong tried"] += 1
            if not result.passed:
                c["wrong caught"] += 1
                c["specific hint"] += is_specific(result.message)
    return {k: dict(v) for k, v in sorted(out.items())}


def test_share_of_caught_mistakes_with_a_specific_hint() -> None:
    """At least 90 % of the caught wrong answers get a specific hint, overall and in every chapter."""
    c = counts()
    share = c["specific hint"] / c["wrong caught"]
    print(f"\nchecker suite: {c}; share with a specific hint {share:.1%}")
    assert c["wrong caught"] == c["wrong tried"]
    assert c["right accepted"] == c["right tried"]
    assert share >= 0.9
    low = {ch: f"{v['specific hint']}/{v['wrong caught']}" for ch, v in counts_by_chapter().items()
           if v.get("wrong caught") and v.get("specific hint", 0) / v["wrong caught"] < 0.9}
    assert not low, f"chapters under 90 % specific hints: {low}"


if __name__ == "__main__":
    c = counts()
    existing = checkers_in_source()
    print(f"checkers: {len(existing)}, with rows: {len({r[0] for r in ROWS})}, exempt: {len(EXEMPT)}")
    print(f"right answers accepted: {c['right accepted']} / {c['right tried']}")
    print(f"wrong answers caught: {c['wrong caught']} / {c['wrong tried']}")
    print(f"caught with a specific hint: {c['specific hint']} / {c['wrong caught']} "
          f"({c['specific hint'] / c['wrong caught']:.1%})")
    for chapter, v in counts_by_chapter().items():
        caught = v.get("wrong caught", 0)
        print(f"  chapter {chapter}: right {v.get('right accepted', 0)}/{v.get('right tried', 0)}, "
              f"wrong caught {caught}/{v.get('wrong tried', 0)}, specific {v.get('specific hint', 0)}/{caught}"
              + (f" ({v.get('specific hint', 0) / caught:.0%})" if caught else ""))
