"""Input checks with messages that name the argument, what was expected and what came."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def check_tensor(name: str, x: object) -> Tensor:
    """Raise TypeError unless ``x`` is a tensor; return it. Used by every chapter."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def check_rank(name: str, x: object, ranks: int | Sequence[int], shape_hint: str = "") -> Tensor:
    """Raise ValueError unless ``x`` has one of ``ranks`` dimensions. Used by every chapter."""
    x = check_tensor(name, x)
    allowed = (ranks,) if isinstance(ranks, int) else tuple(ranks)
    if x.dim() not in allowed:
        want = " or ".join(str(r) for r in allowed)
        hint = f" {shape_hint}" if shape_hint else ""
        raise ValueError(
            f"{name} must have {want} dimensions{hint}, got shape {tuple(x.shape)}"
        )
    return x


def check_positive_int(name: str, value: object) -> int:
    """Raise unless ``value`` is a positive int; return it. Used by every chapter."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive int, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return value


def check_bool_mask(name: str, mask: object) -> Tensor:
    """Raise unless ``mask`` is a boolean keep-mask tensor (True = keep). Chapter 4."""
    mask = check_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean keep-mask (True = attend, False = masked), "
            f"got dtype {mask.dtype}; build one with course_utils.masks"
        )
    return mask


def check_broadcast(name: str, shape: Sequence[int], target: Sequence[int], what: str) -> None:
    """Raise ValueError unless ``shape`` broadcasts to ``target``. Chapter 4."""
    try:
        out = torch.broadcast_shapes(tuple(shape), tuple(target))
    except RuntimeError:
        out = None
    if out is None or tuple(out) != tuple(target):
        raise ValueError(
            f"{name} of shape {tuple(shape)} does not broadcast to {what} {tuple(target)}"
        )
