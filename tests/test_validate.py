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


# --- one rule per class of bad input (issue 23) ---------------------------------------------------------
import numpy as np  # noqa: E402

from course_utils.validate import (  # noqa: E402
    as_index,
    check_device,
    check_finite,
    check_fits,
    check_int,
    check_keep_mask_convention,
    check_order,
)


def test_integral_sizes_follow_operator_index() -> None:
    for value in (3, np.int8(3), np.int64(3), np.uint16(3), torch.tensor(3), torch.tensor(3, dtype=torch.int32)):
        assert as_index(value) == 3 and type(check_int("n", value, low=1)) is int
    for value in (True, np.bool_(True), torch.tensor(True), 3.0, np.float64(3.0), torch.tensor(3.0), "3", None,
                  torch.tensor([3])):
        assert as_index(value) is None
        with pytest.raises(TypeError, match="n must be a positive int, got"):
            check_int("n", value, low=1)


def test_check_finite_says_what_and_where() -> None:
    x = torch.tensor([[0.0, 1.0], [float("nan"), float("inf")]])
    with pytest.raises(ValueError, match=r"x must hold finite numbers, got 1 NaN and 1 infinite value\(s\) "
                                         r"\(first at index \(1, 0\)\); look upstream"):
        check_finite("x", x, "look upstream")
    masked = torch.tensor([[0.0, float("-inf")]])
    assert check_finite("x", masked, allow_neg_inf=True) is masked
    with pytest.raises(ValueError, match="at least one value above -inf in every row"):
        check_finite("x", torch.full((2, 3), float("-inf")), allow_neg_inf=True)
    with pytest.raises(ValueError, match="finite numbers or -inf, got 0 NaN and 1 infinite"):
        check_finite("x", torch.tensor([float("inf"), 0.0]), allow_neg_inf=True)
    assert check_finite("ids", torch.tensor([1, 2])).dtype == torch.int64  # integers cannot be NaN


def test_order_fits_and_device() -> None:
    check_order("min_len", 2, "max_len", 2)
    with pytest.raises(ValueError, match="min_len must be <= max_len, got min_len=5 and max_len=2"):
        check_order("min_len", 5, "max_len", 2)
    assert check_fits("T", 4, 4, "max_len") == 4
    with pytest.raises(ValueError, match=r"T must be at most 4 \(the table's max_len\), got 5"):
        check_fits("T", 5, 4, "the table's max_len")
    assert check_device("device", "cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="device must be a device name such as 'cpu', 'cuda' or 'cuda:0', got 'gpu'"):
        check_device("device", "gpu")
    with pytest.raises(ValueError, match="device must be a device this machine has, got 'cuda:99'"):
        check_device("device", "cuda:99")
    with pytest.raises(TypeError, match="device must be a device name"):
        check_device("device", 0)


def test_keep_mask_convention() -> None:
    keep = torch.ones(4, 4, dtype=torch.bool).tril()
    assert check_keep_mask_convention("mask", keep) is keep
    for blocked in (~keep, (~keep).view(1, 1, 4, 4), (~keep).expand(2, 3, 4, 4)):
        with pytest.raises(ValueError, match=r"mask is True strictly above the diagonal.*True = may attend.*~mask"):
            check_keep_mask_convention("mask", blocked)
    with pytest.raises(ValueError, match="PyTorch's convention"):
        check_bool_mask("mask", ~keep)
    assert check_bool_mask("mask", ~keep, convention=False) is not None  # displays accept any mask
    padding = torch.tensor([[True, True, False, False]])  # cannot be told apart: passes
    assert check_keep_mask_convention("mask", padding) is padding
    assert check_keep_mask_convention("mask", torch.zeros(1, 1, dtype=torch.bool)) is not None  # 1 x 1: nothing to tell


def test_broadcast_shape_agrees_with_torch_on_every_small_pair_and_triple() -> None:
    """The plain-Python broadcast rule of the attention checks is PyTorch's, shape for shape."""
    import itertools

    from course_utils.validate import broadcast_shape

    sizes = [(), (1,), (3,), (2,), (1, 3), (2, 1), (2, 3), (3, 2), (1, 1, 3), (4, 1, 1), (0,), (1, 0), (4, 2, 3)]
    for shapes in [*itertools.product(sizes, repeat=2), *itertools.product(sizes[:8], repeat=3)]:
        try:
            expected = tuple(torch.broadcast_shapes(*shapes))
        except RuntimeError:
            expected = None
        assert broadcast_shape(*shapes) == expected, shapes


def test_check_seed_takes_non_negative_ints_only() -> None:
    from course_utils.validate import check_seed

    assert check_seed("seed", 0) == 0 and check_seed("seed", np.int64(7)) == 7
    for bad, error in ((-1, ValueError), (True, TypeError), (1.0, TypeError), ("0", TypeError), (None, TypeError)):
        with pytest.raises(error, match="seed must be a non-negative int"):
            check_seed("seed", bad)


def test_check_model_tokens_is_every_models_input_check() -> None:
    from course_utils.validate import check_model_tokens

    ok = torch.tensor([[1, 2, 3]])
    assert check_model_tokens("src", ok, 5, max_len=3) is ok
    with pytest.raises(TypeError, match="src must hold token ids as torch.long, got dtype torch.int32"):
        check_model_tokens("src", ok.int(), 5)
    with pytest.raises(ValueError, match="tgt has length 3 after 1 cached tokens, beyond max_len=3"):
        check_model_tokens("tgt", ok, 5, max_len=3, offset=1)
    with pytest.raises(ValueError, match=r"src must hold token ids in \[0, 3\), got min 1 and max 3"):
        check_model_tokens("src", ok, 3)
    with pytest.raises(ValueError, match="src must hold at least one token"):
        check_model_tokens("src", ok[:, :0], 5, max_len=3)
    with pytest.raises(ValueError, match="src must have 2 dimensions"):
        check_model_tokens("src", ok[0], 5)
