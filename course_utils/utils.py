"""Seeding and device helpers used by every chapter."""

from __future__ import annotations

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
