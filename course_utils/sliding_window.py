"""Sliding-window (local) attention: the mask, its cost, and its effect on a trained language model. Chapter 11."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .charlm import consecutive_windows
from .gpt import DecoderOnly
from .masks import causal_mask
from .validate import check_bool_mask, check_positive_int, check_rank, check_token_ids


def sliding_window_mask(T: int, window: int, device: torch.device | str | None = None) -> Tensor:
    """Keep-mask (1, 1, T, T): query t attends keys t - window + 1 .. t (itself and window - 1 before). Chapter 11."""
    check_positive_int("T", T)
    check_positive_int("window", window)
    pos = torch.arange(T, device=device)
    distance = pos[:, None] - pos[None, :]  # (T, T): query position minus key position
    return ((distance >= 0) & (distance < window))[None, None]  # (1, 1, T, T)


def keys_per_query(T: int, window: int | None) -> float:
    """Mean number of keys a query attends over positions 0..T-1 (window None: full causal). Chapter 11."""
    check_positive_int("T", T)
    if window is not None:
        check_positive_int("window", window)
    mask = causal_mask(T) if window is None else sliding_window_mask(T, window)
    return float(mask.sum()) / T


@torch.no_grad()
def masked_logits(model: DecoderOnly, tokens: Tensor, mask: Tensor) -> Tensor:
    """The logits (B, T, V) of a decoder-only model run under ``mask`` instead of its causal mask. Chapter 11.

    One call of the model's own forward pass, so every positional scheme is kept.
    """
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a DecoderOnly, got {type(model).__name__}")
    check_token_ids("tokens", tokens, model.config.vocab_size, "(B, T) of token ids")
    check_bool_mask("mask", mask)
    logits = model(tokens, mask=mask)
    assert isinstance(logits, Tensor)
    return logits  # (B, T, V)


@torch.no_grad()
def windowed_bits_per_char(model: DecoderOnly, val_ids: Tensor, block_size: int, window: int | None,
                           max_windows: int = 64) -> float:
    """Next-character cross-entropy in bits over consecutive blocks of val_ids, under a sliding window. Chapter 11."""
    check_rank("val_ids", val_ids, 1, "(N,) token ids")
    check_positive_int("block_size", block_size)
    check_positive_int("max_windows", max_windows)
    if window is not None:
        check_positive_int("window", window)
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a DecoderOnly, got {type(model).__name__}")
    if block_size > model.config.max_len:
        raise ValueError(f"block_size must be at most {model.config.max_len} (the model's max_len), got {block_size}")
    check_token_ids("val_ids", val_ids[None], model.config.vocab_size, "(N,)")
    if len(val_ids) < block_size + 1:
        raise ValueError(f"val_ids must hold at least block_size + 1 = {block_size + 1} tokens, got {len(val_ids)}")
    model.eval()
    mask = causal_mask(block_size) if window is None else sliding_window_mask(block_size, window)
    idx = consecutive_windows(len(val_ids), block_size, max_windows)  # (n, T), as Chapter 8 scores
    total = 0.0
    for chunk in idx.split(32):
        logits = masked_logits(model, val_ids[chunk], mask)  # (c, T, V)
        total += float(torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), val_ids[chunk + 1].reshape(-1), reduction="sum"))
    return total / idx.numel() / math.log(2)
