"""The KV cache's memory: the formula, published configurations, and the bytes a cache really holds. Chapter 11.

Every generated token leaves one key and one value vector per layer and per key/value head in
the cache, so it holds 2 x layers x KV heads x d_head x tokens x batch values. Multi-query and
grouped-query attention shrink it by cutting the KV heads, not the query heads.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from .gpt import DecoderOnly, generate
from .model import KVCache
from .validate import check_positive_int, check_token_ids

# Published decoder configurations (layers, query heads, key/value heads, d_head, context length).
# The paper's base model: its decoder has N = 6 layers, h = 8 heads of d_k = 64 (Vaswani et al. 2017,
# table 3); its decoder also caches the cross-attention keys/values of the source, not counted here.
# The paper has no fixed context length (sinusoidal positions; outputs up to input length + 50): its
# "context" of 512 tokens is a length chosen here, not a number from the paper.
# GPT-3 175B: 96 layers, 96 heads of 128, 2048 tokens (Brown et al. 2020, table 2.1), multi-head.
# Llama 2 70B: 80 layers, 64 query heads of 128 sharing 8 key/value heads, 4096 tokens
# (Touvron et al. 2023, grouped-query attention as in Ainslie et al. 2023).
PUBLISHED_CONFIGS: dict[str, dict[str, Any]] = {
    "Transformer base (2017)": {"n_layers": 6, "n_heads": 8, "n_kv_heads": 8, "d_head": 64, "context": 512,
                                "cite": "vaswani2017attention"},
    "GPT-3 175B (MHA)": {"n_layers": 96, "n_heads": 96, "n_kv_heads": 96, "d_head": 128, "context": 2048,
                         "cite": "brown2020language"},
    "Llama 2 70B (GQA)": {"n_layers": 80, "n_heads": 64, "n_kv_heads": 8, "d_head": 128, "context": 4096,
                          "cite": "touvron2023llama2"},
}


def kv_cache_bytes(
    n_layers: int, n_kv_heads: int, d_head: int, tokens: int, batch: int = 1, bytes_per_value: int = 2
) -> int:
    """2 x layers x KV heads x d_head x tokens x batch x bytes: the memory of a full KV cache. Chapter 11."""
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads), ("d_head", d_head),
                        ("tokens", tokens), ("batch", batch), ("bytes_per_value", bytes_per_value)):
        check_positive_int(name, value)
    return 2 * n_layers * n_kv_heads * d_head * tokens * batch * bytes_per_value


def cache_bytes_held(cache: KVCache) -> int:
    """The bytes of every key/value tensor a KVCache holds (self- and cross-attention). Chapter 11."""
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
    total = 0
    for tensors in (cache.self_k, cache.self_v, cache.cross_k, cache.cross_v):
        for t in tensors:
            if t is not None:
                total += t.numel() * t.element_size()
    return total


def generate_into_cache(model: DecoderOnly, prompt: Tensor, n_new: int) -> tuple[Tensor, KVCache]:
    """Greedy generation of n_new tokens after prompt (B, T0), one per step; returns (all ids, cache). Chapter 11.

    Chapter 8's :func:`~course_utils.gpt.generate` with ``return_cache=True``; the cache then
    holds T0 + n_new - 1 tokens: the last generated token has not been fed yet.
    """
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a DecoderOnly, got {type(model).__name__}")
    check_token_ids("prompt", prompt, model.config.vocab_size, "(B, T0) of token ids")
    check_positive_int("n_new", n_new)
    new, cache = generate(model, prompt, n_new, temperature=0.0, return_cache=True)
    return torch.cat([prompt, new], dim=1), cache
