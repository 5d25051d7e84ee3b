"""Layer normalisation from scratch, residual sublayers (pre-LN and post-LN), padding-aware statistics. Chapter 3."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .validate import (
    check_bool,
    check_callable,
    check_choice,
    check_float_tensor,
    check_number,
    check_positive_int,
    check_rank,
)

PLACEMENTS = ("post", "pre")


def _check_eps(eps: object) -> float:
    return check_number("eps", eps, low=0.0, low_open=True)


class LayerNorm(nn.Module):
    """Normalise each token over its d_model features, then scale by gamma and shift by beta. Chapter 3."""

    def __init__(self, d_model: int, eps: float = 1e-5, fused: bool = False):
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.eps = _check_eps(eps)
        self.fused = check_bool("fused", fused)  # True: the same maths through one kernel, F.layer_norm (faster)
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., d_model) -> (..., d_model), each token with mean 0 and std 1 before gamma/beta."""
        check_float_tensor("x", x)
        if x.dim() == 0 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}"
            )
        if self.fused:
            return F.layer_norm(x, (self.d_model,), self.gamma, self.beta, self.eps)
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1), biased like nn.LayerNorm
        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta


def residual_sublayer(
    x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: Callable[[Tensor], Tensor], placement: str = "post",
    residual: bool = True,
) -> Tensor:
    """Post-LN ``norm(x + sublayer(x))`` (the paper) or pre-LN ``x + sublayer(norm(x))``. Chapter 3.

    Every block of Chapters 5 and 8 runs its sub-layers through this function. ``residual=False``
    drops the ``x +`` (Chapter 10's ablation): ``norm(sublayer(x))`` or ``sublayer(norm(x))``.
    """
    check_float_tensor("x", x)
    check_callable("sublayer", sublayer, "a function or module (..., d_model) -> (..., d_model)")
    check_callable("norm", norm, "a function or module such as a LayerNorm")
    check_choice("placement", placement, PLACEMENTS)
    check_bool("residual", residual)
    if placement == "post":
        s = sublayer(x)
        return norm(x + s if residual else s)  # normalise the sum: the residual stream passes through every LN
    s = sublayer(norm(x))  # normalise the sublayer's input only: the identity path stays clean
    return x + s if residual else s


class SublayerConnection(nn.Module):
    """A residual connection around any sublayer, with its own LayerNorm placed 'post' or 'pre'. Chapter 3."""

    def __init__(self, d_model: int, placement: str = "post", eps: float = 1e-5):
        super().__init__()
        check_choice("placement", placement, PLACEMENTS)
        self.placement = placement
        self.norm = LayerNorm(d_model, eps)

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        """x: (..., d_model) -> (..., d_model)."""
        return residual_sublayer(x, sublayer, self.norm, self.placement)


def masked_feature_stats(x: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
    """Per-feature mean and biased variance over the real (keep=True) tokens of a padded batch. Chapter 3.

    x: (B, T, d_model), keep: (B, T) boolean, True = real token. Returns (mean (d_model,), var (d_model,)).
    """
    check_float_tensor("x", x, 3, "(B, T, d_model)")
    check_rank("keep", keep, 2, "(B, T)")
    if keep.dtype != torch.bool:
        raise TypeError(f"keep must be a boolean tensor (True = real token), got dtype {keep.dtype}")
    if tuple(keep.shape) != tuple(x.shape[:2]):
        raise ValueError(f"keep must have shape (B, T) = {tuple(x.shape[:2])}, got {tuple(keep.shape)}")
    if not keep.any():
        raise ValueError("keep has no True entry: there are no real tokens to average over")
    tokens = x[keep]  # (n_real, d_model)
    mean = tokens.mean(dim=0)  # (d_model,)
    var = tokens.var(dim=0, unbiased=False)  # (d_model,), biased like BatchNorm's normalisation
    return mean, var
