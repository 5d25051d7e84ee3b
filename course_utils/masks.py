"""Boolean keep-masks (True = attend, False = masked) for padding and causality. Chapter 4.

Shapes: padding (B, 1, 1, T_k), causal (1, 1, T_q, T_k); combining them broadcasts to
(B, 1, T_q, T_k), which broadcasts over the h heads of the scores (B, h, T_q, T_k).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .validate import broadcast_shape, check_bool_mask, check_device, check_int, check_positive_int, check_rank


def causal_mask(T: int, device: torch.device | str | None = None) -> Tensor:
    """Keep-mask (1, 1, T, T): query i may attend to keys 0..i. Chapter 4."""
    check_positive_int("T", T)
    if device is not None:
        device = check_device("device", device)
    return torch.ones(T, T, dtype=torch.bool, device=device).tril().view(1, 1, T, T)  # (1, 1, T, T)


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """Keep-mask (B, 1, 1, T_k): True where ``tokens`` (B, T_k) is not padding. Chapter 4."""
    check_rank("tokens", tokens, 2, "(B, T)")
    if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise TypeError(f"tokens must hold integer token ids, got dtype {tokens.dtype}")
    pad_id = check_int("pad_id", pad_id, low=0)
    B, T = tokens.shape
    return (tokens != pad_id).view(B, 1, 1, T)  # (B, 1, 1, T_k)


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """Logical AND of keep-masks, broadcast together; None entries are skipped. Chapter 4."""
    out: Tensor | None = None
    for i, m in enumerate(masks):
        if m is None:
            continue
        check_bool_mask(f"masks[{i}]", m)
        if out is None:
            out = m
            continue
        if broadcast_shape(out.shape, m.shape) is None:
            raise ValueError(
                f"masks[{i}] of shape {tuple(m.shape)} does not broadcast with the masks "
                f"before it, shape {tuple(out.shape)}"
            )
        out = out & m
    return out


def decoder_mask(tgt_tokens: Tensor, pad_id: int) -> Tensor:
    """Keep-mask (B, 1, T, T) for decoder self-attention: causal AND key padding. Chapter 4."""
    check_rank("tgt_tokens", tgt_tokens, 2, "(B, T_tgt)")
    T = tgt_tokens.shape[1]
    mask = combine_masks(padding_mask(tgt_tokens, pad_id), causal_mask(T, tgt_tokens.device))
    assert mask is not None
    return mask  # (B, 1, 1, T) & (1, 1, T, T) -> (B, 1, T, T)


def mask_to_text(mask: Tensor, keep: str = "1", drop: str = "0") -> str:
    """A keep-mask as rows of text, one row per query, ``keep`` where True. Chapter 4.

    Leading dimensions of size 1 are dropped, so (1, 1, T_q, T_k) prints as a (T_q, T_k) grid;
    a mask with more than 2 dimensions left must be indexed first (e.g. ``mask[b, 0]``).
    """
    check_bool_mask("mask", mask, convention=False)  # any mask may be shown
    for name, text in (("keep", keep), ("drop", drop)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str (the text shown for each entry), got {type(text).__name__}")
    m = mask
    while m.dim() > 2 and m.shape[0] == 1:
        m = m[0]
    if m.dim() == 1:
        m = m.view(1, -1)  # (T_k,) -> (1, T_k)
    if m.dim() != 2:
        raise ValueError(
            f"mask must reduce to 2 dimensions (T_q, T_k) after dropping leading size-1 dimensions, "
            f"got shape {tuple(mask.shape)}; index a batch element first, e.g. mask[0, 0]"
        )
    return "\n".join(" ".join(keep if bool(v) else drop for v in row) for row in m.tolist())
