"""Layer normalisation from scratch. Chapter 3."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .validate import check_positive_int, check_tensor


class LayerNorm(nn.Module):
    """Normalise each token over its d_model features, then scale by gamma and shift by beta. Chapter 3."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., d_model) -> (..., d_model), each token with mean 0 and std 1 before gamma/beta."""
        check_tensor("x", x)
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}"
            )
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1), biased like nn.LayerNorm
        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta
