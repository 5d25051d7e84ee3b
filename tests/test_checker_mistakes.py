"""Every checker accepts right answers in several styles and catches realistic wrong ones by name.

The answers live in tests/checker_mistakes_table.py (one row each). Run this file as a script
(``.venv/bin/python tests/test_checker_mistakes.py``) to print the counts for the closing note.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
from collections import Counter

import pytest
import torch
from checker_mistakes_table import ROWS  # tests/ is on sys.path (pytest and python tests/...)

CHECKERS = 25


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
    assert len(per_checker) == CHECKERS
    for ex, n in per_checker.items():
        assert right[ex] >= 2, f"{ex}: {right[ex]} right answers"
        assert n - right[ex] >= 6, f"{ex}: {n - right[ex]} wrong answers"
    # every checker that hands the answer a tensor also catches an answer that changes it in place;
    # these take only numbers or build the learner's class from numbers, so there is nothing to change
    no_tensor_input = {"1.3", "2.1", "2.2", "2.4", "3.3", "4.1", "4.3", "5.1", "5.2"}
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


def test_share_of_caught_mistakes_with_a_specific_hint() -> None:
    c = counts()
    share = c["specific hint"] / c["wrong caught"]
    print(f"\nchecker suite: {c}; share with a specific hint {share:.1%}")
    assert c["wrong caught"] == c["wrong tried"]
    assert c["right accepted"] == c["right tried"]
    assert share >= 0.95


if __name__ == "__main__":
    c = counts()
    print(f"checkers: {CHECKERS}")
    print(f"right answers accepted: {c['right accepted']} / {c['right tried']}")
    print(f"wrong answers caught: {c['wrong caught']} / {c['wrong tried']}")
    print(f"caught with a specific hint: {c['specific hint']} / {c['wrong caught']} "
          f"({c['specific hint'] / c['wrong caught']:.1%})")
