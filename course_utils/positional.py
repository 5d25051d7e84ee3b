"""Positional information: sinusoidal encoding (the paper's). Chapter 2."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .validate import check_positive_int, check_rank


def sinusoidal_encoding(T: int, d_model: int) -> Tensor:
    """PE (T, d_model): PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(...). Chapter 2."""
    check_positive_int("T", T)
    check_positive_int("d_model", d_model)
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even for sinusoidal PE, got {d_model}")
    position = torch.arange(T, dtype=torch.float32).unsqueeze(1)  # (T, 1)
    inv_freq = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )  # (d_model / 2,)
    angles = position * inv_freq  # (T, 1) * (d_model / 2,) -> (T, d_model / 2)
    pe = torch.zeros(T, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe


class SinusoidalPositionalEncoding(nn.Module):
    """Adds a fixed sinusoidal table to (B, T, d_model) inputs, up to ``max_len`` positions. Chapter 2."""

    pe: Tensor

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        self.d_model, self.max_len = d_model, check_positive_int("max_len", max_len)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, T, d_model) -> x + PE[offset : offset + T]."""
        check_rank("x", x, 3, "(B, T, d_model)")
        T = x.shape[1]
        if offset + T > self.max_len:
            raise ValueError(
                f"sequence of length {T} (offset {offset}) exceeds max_len={self.max_len} "
                "of the positional table; build it with a larger max_len"
            )
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}"
            )
        return x + self.pe[offset : offset + T]  # (B, T, d_model) + (T, d_model)
