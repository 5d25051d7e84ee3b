"""Tests for course_utils.utils."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from course_utils.utils import agreement, max_error, power_of_ten, set_seed


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
        with pytest.raises(TypeError, match="seed must be a non-negative int"):
            set_seed(bad)  # type: ignore[arg-type]


def test_max_error_is_the_largest_absolute_difference() -> None:
    a = torch.tensor([1.0, 2.0, 3.0])
    assert max_error(a, a + torch.tensor([0.0, -0.02, 0.01])) == pytest.approx(0.02)
    assert max_error(torch.tensor([-0.5, 0.001])) == 0.5
    assert max_error(0.25, 0.0) == 0.25
    assert max_error(torch.empty(0), torch.empty(0)) == 0.0
    with pytest.raises(ValueError, match="same shape"):
        max_error(torch.zeros(2), torch.zeros(3))
    with pytest.raises(TypeError, match="got must be a number or a tensor, got str"):
        max_error("1", 0.0)  # type: ignore[arg-type]


def test_agreement_states_the_tolerance_not_the_measured_error() -> None:
    a = torch.tensor([1.0, 2.0])
    # the text does not depend on the size of the (machine-dependent) error below the tolerance
    assert agreement(a, a, 1e-5, "nn.LayerNorm") == "equals nn.LayerNorm within 10⁻⁵"
    assert agreement(a + 3e-7, a, 1e-5, "nn.LayerNorm") == "equals nn.LayerNorm within 10⁻⁵"
    assert agreement(0.0, 0.0, 2.5e-3) == "equals the reference within 0.0025"
    with pytest.raises(AssertionError, match=r"differs from nn.LayerNorm by 0.001, more than the tolerance 1e-05"):
        agreement(a + 1e-3, a, 1e-5, "nn.LayerNorm")
    with pytest.raises(ValueError, match="tol must be a positive number"):
        agreement(a, a, 0.0)


def test_power_of_ten_writes_tolerances_as_people_do() -> None:
    assert power_of_ten(1e-5) == "10⁻⁵"
    assert power_of_ten(1e-12) == "10⁻¹²"
    assert power_of_ten(100.0) == "10²"
    assert power_of_ten(3e-4) == "0.0003"
    with pytest.raises(ValueError, match="x must be a positive number"):
        power_of_ten(0.0)


def test_count_params_counts_a_tied_matrix_once_and_skips_frozen_ones():
    from torch import nn

    from course_utils.utils import count_params
    from course_utils.vit import count_params as vit_count_params

    assert vit_count_params is count_params  # Chapter 12 imports it from course_utils.vit
    model = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False))
    assert count_params(model) == 15 + 15
    model[1].weight = model[0].weight  # tied: (5, 3) used twice, counted once
    assert count_params(model) == 15
    model[0].weight.requires_grad_(False)
    assert count_params(model) == 0
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        count_params([1, 2])
