"""Seeding and device helpers used by every chapter."""

from __future__ import annotations

import math
import random

import numpy as np
import torch


def set_seed(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and PyTorch; return a torch.Generator seeded the same way. Chapter 1."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def get_device(prefer: str = "cpu") -> torch.device:
    """The device to use: 'cpu' (the course default) or 'cuda' when asked for and available. Chapter 1."""
    if prefer not in ("cpu", "cuda", "auto"):
        raise ValueError(f"prefer must be 'cpu', 'cuda' or 'auto', got {prefer!r}")
    if prefer in ("cuda", "auto") and torch.cuda.is_available():
        return torch.device("cuda")
    if prefer == "cuda":
        raise RuntimeError("prefer='cuda' but no CUDA device is available; use 'cpu'")
    return torch.device("cpu")


def error_bound(err: float | torch.Tensor, reference: torch.Tensor | None = None) -> str:
    """An error as the smallest power of ten above it ("< 1e-6"), so re-runs print the same text. Chapter 1.

    ``err`` is a number or a tensor (its largest absolute entry is used); with ``reference``,
    the error is the largest absolute difference between the tensors ``err`` and ``reference``.
    """
    if reference is not None:
        err = err - reference
    if isinstance(err, torch.Tensor):
        err = err.detach().abs().max().item() if err.numel() else 0.0
    if not isinstance(err, (int, float)) or isinstance(err, bool) or err != err or err < 0:
        raise ValueError(f"err must be a non-negative number or a tensor of differences, got {err!r}")
    return "0 (identical)" if err == 0 else f"< 1e{math.floor(math.log10(err)) + 1}"
