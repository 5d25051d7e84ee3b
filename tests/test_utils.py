"""Tests for course_utils.utils."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from course_utils.utils import error_bound, get_device, set_seed


def test_set_seed_makes_everything_repeatable() -> None:
    g1 = set_seed(3)
    a = (random.random(), np.random.rand(), torch.rand(2), torch.rand(2, generator=g1))
    g2 = set_seed(3)
    b = (random.random(), np.random.rand(), torch.rand(2), torch.rand(2, generator=g2))
    assert a[:2] == b[:2]
    torch.testing.assert_close(a[2], b[2])
    torch.testing.assert_close(a[3], b[3])
    assert isinstance(g1, torch.Generator) and g1.initial_seed() == 3


def test_set_seed_accepts_large_seeds_and_rejects_non_ints() -> None:
    set_seed(2**40)
    for bad in (1.5, "0", True):
        with pytest.raises(TypeError, match="seed must be an int"):
            set_seed(bad)  # type: ignore[arg-type]


def test_get_device() -> None:
    assert get_device() == torch.device("cpu")
    assert get_device("auto").type in ("cpu", "cuda")
    with pytest.raises(ValueError, match="prefer must be 'cpu', 'cuda' or 'auto', got 'gpu'"):
        get_device("gpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            get_device("cuda")


def test_error_bound_rounds_up_to_a_power_of_ten():
    assert error_bound(3e-7) == "< 1e-6"
    assert error_bound(1e-5) == "< 1e-4"  # strictly below the bound, also at an exact power of ten
    assert error_bound(0.0) == "0 (identical)"
    a = torch.tensor([1.0, 2.0])
    assert error_bound(a, a + torch.tensor([0.0, -0.02])) == "< 1e-1"
    assert error_bound(torch.tensor([-0.5, 0.001])) == "< 1e0"
    with pytest.raises(ValueError, match="non-negative number"):
        error_bound(-1.0)
