"""Tests for course_utils.validate: messages name the argument, what was expected and what came."""

from __future__ import annotations

import pytest
import torch

from course_utils.validate import check_bool_mask, check_broadcast, check_positive_int, check_rank, check_tensor


def test_check_tensor() -> None:
    x = torch.zeros(1)
    assert check_tensor("x", x) is x
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got ndarray"):
        import numpy as np

        check_tensor("x", np.zeros(1))


def test_check_rank() -> None:
    x = torch.zeros(2, 3)
    assert check_rank("x", x, 2) is x
    assert check_rank("x", x, (2, 3)) is x
    with pytest.raises(ValueError, match=r"x must have 3 dimensions \(B, T, d\), got shape \(2, 3\)"):
        check_rank("x", x, 3, "(B, T, d)")
    with pytest.raises(ValueError, match=r"x must have 3 or 4 dimensions, got shape \(2, 3\)"):
        check_rank("x", x, [3, 4])
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        check_rank("x", [1], 1)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [(0, ValueError, "n must be a positive int, got 0"), (-3, ValueError, "got -3"),
     (2.0, TypeError, "n must be a positive int, got float 2.0"), (True, TypeError, "got bool True"),
     ("4", TypeError, "got str '4'")],
)
def test_check_positive_int(value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        check_positive_int("n", value)


def test_check_positive_int_returns_value() -> None:
    assert check_positive_int("n", 5) == 5


def test_check_bool_mask() -> None:
    m = torch.ones(2, dtype=torch.bool)
    assert check_bool_mask("mask", m) is m
    with pytest.raises(TypeError, match=r"mask must be a boolean keep-mask \(True = attend.*got dtype torch.int64"):
        check_bool_mask("mask", torch.ones(2, dtype=torch.long))


def test_check_broadcast() -> None:
    check_broadcast("mask", (1, 1, 4, 4), (2, 3, 4, 4), "the scores")
    check_broadcast("mask", (4,), (2, 4), "the scores")
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\) does not broadcast to the scores \(2, 4\)"):
        check_broadcast("mask", (3, 4), (2, 4), "the scores")
    with pytest.raises(ValueError, match="does not broadcast"):  # would grow the target
        check_broadcast("mask", (5, 2, 4), (2, 4), "the scores")
