"""Greedy decoding with random positions at test time: Ruoss et al.'s evaluation. Chapter 9.

A model trained with randomized positions (``TransformerConfig.random_positions = N``) has seen
its tokens at sorted random subsets of 0..N-1, almost never at the plain positions 0, 1, 2, ...
Ruoss et al. (2023) therefore draw random positions at test time too. Here each example gets one
sorted random subset, drawn once and kept for every decoding step: the source and the target
share it exactly as in training, and a KV cache stays valid because old positions never change.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from .data import PAD_ID, decode, make_batch
from .decoding import greedy_decode
from .model import Transformer
from .positional import random_positions
from .validate import check_int, check_module, check_seed, check_str_list

__all__ = ["greedy_random_positions", "reverse_with_random_positions"]


@torch.no_grad()
def greedy_random_positions(
    model: Transformer, src: Tensor, max_len: int, max_position: int, generator: torch.Generator | None = None
) -> Tensor:
    """Greedy ids (B, <= max_len) with one random sorted position map per example for all steps. Chapter 9."""
    check_module("model", model)
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a Transformer, got a {type(model).__name__} module")
    max_len = check_int("max_len", max_len, low=1)
    T_src = src.shape[1]
    n = max(T_src, max_len + 1)  # the target side holds SOS and up to max_len tokens
    max_position = check_int("max_position", max_position, low=n)
    model.eval()  # plain positions from the model; the random map is applied here
    keep = src != PAD_ID  # (B, T_src)
    plain_src, plain_tgt = model.positions(keep, n)  # (B, T_src), (B, n): 0, 1, 2, ... (or counted from the end)
    table = random_positions(src.shape[0], n, max_position, generator)  # (B, n): one sorted subset per example
    src_pos, tgt_pos = table.gather(1, plain_src), table.gather(1, plain_tgt)  # same map for both halves
    return greedy_decode(model, src, max_len, positions=(src_pos, tgt_pos))


def reverse_with_random_positions(
    model: Transformer, strings: Sequence[str], max_position: int, seed: int = 0, extra: int = 2
) -> list[str]:
    """The model's greedy reversal of each string, with random positions at test time. Chapter 9."""
    strings = check_str_list("strings", strings)
    seed = check_seed("seed", seed)
    extra = check_int("extra", extra, low=1)
    src = make_batch(list(strings))[0]  # (B, T_src)
    ids = greedy_random_positions(model, src, src.shape[1] + extra, max_position, torch.Generator().manual_seed(seed))
    return [decode(row) for row in ids]
