"""Measurements on attention weights: alignment, offsets and sharpness per head. Chapter 7.

Every function takes the weights of one attention layer, shape (B, h, T_q, T_k), as the model
returns them, and averages over the batch and over the query positions that count. Which
query looks at which key is given by a ``reference`` tensor (B, T_q) of key positions, with
-1 for a query that does not count (padding, or the EOS step of the decoder).

- ``reversal_targets`` / ``copy_targets``: the reference for cross-attention of a reversal /
  copy model (output step t copies source position L-1-t / t).
- ``diagonal_reference``: the reference for self-attention (query t itself), so offsets are
  key - query.
- ``alignment_score``: mean attention mass on the reference key, per head.
- ``offset_mass`` / ``dominant_offset``: mean mass at reference + d for each offset d.
- ``attention_entropy``: mean entropy (nats) of the attention rows, per head.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .validate import check_int, check_positive_int, check_rank, check_tensor

__all__ = [
    "alignment_score",
    "attention_entropy",
    "copy_targets",
    "diagonal_reference",
    "dominant_offset",
    "offset_mass",
    "reversal_targets",
]


def _check_lengths(name: str, lengths: object) -> Tensor:
    lengths = check_rank(name, lengths, 1, "(B,)")
    if lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor of lengths, got dtype {lengths.dtype}")
    if (lengths < 1).any():
        raise ValueError(f"{name} must be >= 1 everywhere, got min {int(lengths.min())}")
    return lengths.long()


def _check_weights(name: str, weights: object) -> Tensor:
    weights = check_rank(name, weights, 4, "(B, h, T_q, T_k)")
    if not weights.dtype.is_floating_point:
        raise TypeError(f"{name} must be a float tensor of attention weights, got dtype {weights.dtype}")
    return weights.detach()


def _check_reference(name: str, reference: object, weights: Tensor) -> Tensor:
    reference = check_rank(name, reference, 2, "(B, T_q)")
    if reference.dtype.is_floating_point or reference.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor of key positions, got dtype {reference.dtype}")
    B, _, T_q, T_k = weights.shape
    if tuple(reference.shape) != (B, T_q):
        raise ValueError(
            f"{name} must have shape (B, T_q) = {(B, T_q)} to match weights {tuple(weights.shape)}, "
            f"got {tuple(reference.shape)}"
        )
    reference = reference.long().to(weights.device)
    if (reference < -1).any() or (reference >= T_k).any():
        raise ValueError(
            f"{name} must hold key positions 0..{T_k - 1} or -1 (query does not count), "
            f"got values from {int(reference.min())} to {int(reference.max())}"
        )
    if not (reference >= 0).any():
        raise ValueError(f"{name} marks no query as counting (all -1); nothing to average")
    return reference


def _check_rows(weights: Tensor, valid: Tensor, name: str) -> None:
    """Counting rows must be probability distributions (catches scores passed by mistake)."""
    rows = weights.permute(0, 2, 1, 3)[valid]  # (B, h, T_q, T_k) -> (B, T_q, h, T_k) -> (N, h, T_k)
    if not torch.isfinite(rows).all():
        raise ValueError(f"{name} has NaN or inf in rows that count")
    if (rows < -1e-6).any():
        raise ValueError(f"{name} must be attention weights (>= 0), got min {rows.min().item():.3g}")
    sums = rows.sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-3):
        bad = (sums - 1).abs().max().item()
        raise ValueError(
            f"{name} rows that count must sum to 1 (attention weights after softmax), "
            f"got a row sum off by {bad:.3g}"
        )


def reversal_targets(src_lengths: Tensor, T_q: int) -> Tensor:
    """Source position each output step copies in reversal: L-1-t for t < L, else -1. (B, T_q). Chapter 7.

    ``src_lengths`` (B,) are the real source lengths (characters, no padding, no EOS).
    Output step t predicts character t of the reversed string, i.e. source character L-1-t;
    the step that predicts EOS (t = L) and padding steps get -1.
    """
    lengths = _check_lengths("src_lengths", src_lengths)
    check_positive_int("T_q", T_q)
    t = torch.arange(T_q).unsqueeze(0)  # (1, T_q)
    target = lengths.unsqueeze(1) - 1 - t  # (B, 1) - (1, T_q) -> (B, T_q)
    return torch.where(t < lengths.unsqueeze(1), target, torch.full_like(target, -1))


def copy_targets(src_lengths: Tensor, T_q: int) -> Tensor:
    """Source position each output step copies in a copy task: t for t < L, else -1. (B, T_q). Chapter 7."""
    lengths = _check_lengths("src_lengths", src_lengths)
    check_positive_int("T_q", T_q)
    t = torch.arange(T_q).unsqueeze(0).expand(lengths.shape[0], T_q)  # (B, T_q)
    return torch.where(t < lengths.unsqueeze(1), t, torch.full_like(t, -1))


def diagonal_reference(lengths: Tensor, T: int) -> Tensor:
    """Each query's own position (t for t < length, else -1), the reference for self-attention. Chapter 7.

    With it, ``offset_mass`` measures offsets key - query (0 = itself, -1 = the previous token).
    """
    T = check_positive_int("T", T)
    check_rank("lengths", lengths, 1, "(B,)")
    if isinstance(lengths, Tensor) and lengths.numel() and int(lengths.max()) > T:
        raise ValueError(f"lengths must be at most T={T}, got {int(lengths.max())}")
    return copy_targets(lengths, T)


def offset_mass(weights: Tensor, reference: Tensor, max_offset: int) -> Tensor:
    """Mean attention mass at key reference + d, d = -max_offset..max_offset, per head. Chapter 7.

    Returns (h, 2*max_offset+1). Averaged over every (example, query) whose reference is >= 0;
    a key outside 0..T_k-1 has mass 0.
    """
    weights = _check_weights("weights", weights)
    reference = _check_reference("reference", reference, weights)
    max_offset = check_int("max_offset", max_offset, low=0)
    valid = reference >= 0  # (B, T_q)
    _check_rows(weights, valid, "weights")
    T_k = weights.shape[-1]
    rows = weights.permute(0, 2, 1, 3)[valid].double()  # (N, h, T_k), N counting queries
    ref = reference[valid]  # (N,)
    out = []
    for d in range(-max_offset, max_offset + 1):
        key = ref + d  # (N,)
        inside = (key >= 0) & (key < T_k)
        picked = rows.gather(-1, key.clamp(0, T_k - 1).view(-1, 1, 1).expand(-1, rows.shape[1], 1))  # (N, h, 1)
        picked = picked.squeeze(-1) * inside.unsqueeze(-1)  # (N, h)
        out.append(picked.mean(0))
    return torch.stack(out, dim=-1).to(weights.dtype)  # (h, 2*max_offset+1)


def alignment_score(weights: Tensor, reference: Tensor) -> Tensor:
    """Mean attention mass on the reference key (e.g. the source character being copied), per head. (h,). Chapter 7.

    1 means every counting query puts all its attention on its reference key; a head that
    attends uniformly over T_k keys scores 1/T_k.
    """
    return offset_mass(weights, reference, 0)[:, 0]


def dominant_offset(weights: Tensor, reference: Tensor, max_offset: int) -> tuple[Tensor, Tensor]:
    """Offset d with the most mean mass at reference + d, and that mass, per head: ((h,), (h,)). Chapter 7."""
    mass = offset_mass(weights, reference, max_offset)  # (h, 2*max_offset+1)
    best, index = mass.max(dim=-1)
    return index - max_offset, best


def attention_entropy(weights: Tensor, query_mask: Tensor | None = None) -> Tensor:
    """Mean entropy in nats of the attention rows, per head (h,): 0 = one key, ln(T_k) = uniform. Chapter 7.

    ``query_mask`` (B, T_q), True = the query counts (default: all). Terms with weight 0 add 0.
    """
    weights = _check_weights("weights", weights)
    B, _, T_q, _ = weights.shape
    if query_mask is None:
        valid = torch.ones(B, T_q, dtype=torch.bool, device=weights.device)
    else:
        check_tensor("query_mask", query_mask)
        if query_mask.dtype != torch.bool:
            raise TypeError(f"query_mask must be a boolean tensor (True = query counts), got dtype {query_mask.dtype}")
        if tuple(query_mask.shape) != (B, T_q):
            raise ValueError(
                f"query_mask must have shape (B, T_q) = {(B, T_q)} to match weights {tuple(weights.shape)}, "
                f"got {tuple(query_mask.shape)}"
            )
        valid = query_mask.to(weights.device)
        if not valid.any():
            raise ValueError("query_mask marks no query as counting (all False); nothing to average")
    _check_rows(weights, valid, "weights")
    rows = weights.permute(0, 2, 1, 3)[valid].double()  # (N, h, T_k)
    entropy = -torch.special.xlogy(rows, rows).sum(-1)  # (N, h); xlogy(0, 0) = 0
    return entropy.mean(0).to(weights.dtype)
