"""Helpers every chapter uses: seeding (``set_seed``), comparisons that print the same on any CPU
(``max_error``, ``agreement``, ``power_of_ten``) and the size of a model (``count_params``)."""

from __future__ import annotations

import math
import random

import numpy as np
import torch


def set_seed(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and PyTorch; return a torch.Generator seeded the same way. Chapter 1."""
    from .validate import check_seed  # NumPy ints count, as everywhere

    seed = check_seed("seed", seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def count_params(model: torch.nn.Module) -> int:
    """Number of distinct trainable parameters of ``model`` (a tied matrix counts once). Chapters 10-12.

    The one count of a built model; ``counting.count_parameters(config)`` is Chapter 5's closed form
    for a config, which this count checks.
    """
    from .validate import check_module

    check_module("model", model)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def max_error(got: float | torch.Tensor, reference: float | torch.Tensor = 0.0) -> float:
    """The largest absolute difference between ``got`` and ``reference`` (0 for empty tensors). Chapter 1.

    Use it for the exact measured error, in a cell whose output nbval ignores: the low-order
    bits differ between CPUs, vector instruction sets and thread counts.
    """
    for name, value in (("got", got), ("reference", reference)):
        if isinstance(value, bool) or not isinstance(value, (int, float, torch.Tensor)):
            raise TypeError(f"{name} must be a number or a tensor, got {type(value).__name__}")
    if isinstance(got, torch.Tensor) and isinstance(reference, torch.Tensor) and got.shape != reference.shape:
        raise ValueError(
            f"got and reference must have the same shape, got {tuple(got.shape)} and {tuple(reference.shape)}"
        )
    diff = torch.as_tensor(got, dtype=torch.float64) - torch.as_tensor(reference, dtype=torch.float64)
    if diff.numel() == 0:
        return 0.0
    err = diff.detach().abs().max().item()
    if err != err:
        raise ValueError("got and reference must be finite, got NaN in their difference")
    return err


def agreement(
    got: float | torch.Tensor, reference: float | torch.Tensor, tol: float, what: str = "the reference"
) -> str:
    """Check that ``got`` equals ``reference`` within ``tol`` and say so in words that hold on any machine. Chapter 1.

    Returns e.g. ``"equals nn.LayerNorm within 10⁻⁵"``; raises AssertionError with the measured
    error when the difference is larger. Choose ``tol`` in advance, with headroom over the
    rounding error of the computation, so the printed text is the same on every CPU.
    """
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0 or tol != tol:
        raise ValueError(f"tol must be a positive number, got {tol!r}")
    if not isinstance(what, str):
        raise TypeError(f"what must be a string naming the reference, got {type(what).__name__}")
    err = max_error(got, reference)
    if err > tol:
        raise AssertionError(f"differs from {what} by {err:.3g}, more than the tolerance {tol:g}")
    return f"equals {what} within {power_of_ten(tol)}"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(x: float) -> str:
    """A tolerance as people write it: 1e-05 -> "10⁻⁵"; other numbers as Python's ``g`` format. Chapter 1."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"x must be a positive number, got {type(x).__name__} {x!r:.40}")
    if not 0 < x < math.inf:
        raise ValueError(f"x must be a positive number, got {x!r}")
    exponent = round(math.log10(x))
    if math.isclose(x, 10.0**exponent, rel_tol=1e-9):
        return "10" + str(exponent).translate(_SUPERSCRIPT)
    return f"{x:g}"
