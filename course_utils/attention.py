"""Scaled dot-product attention and multi-head attention, built in Chapter 1."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .validate import (
    broadcast_shape,
    check_bool,
    check_bool_mask,
    check_broadcast,
    check_float_tensor,
    check_number,
    check_positive_int,
    check_probability,
    check_rank,
)


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, bias: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T / sqrt(d_k) + bias) V with an optional boolean keep-mask. Chapter 1.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v); mask broadcasts to
    (..., T_q, T_k) with True = attend. Returns (output (..., T_q, d_v), weights (..., T_q, T_k)).
    A query row whose keys are all masked gets zero weights and a zero output, never NaN.
    ``bias`` (Chapter 9's ALiBi and T5 positions) broadcasts to (..., T_q, T_k) and is added to
    the scaled scores before the mask and the softmax; None adds nothing.
    """
    check_float_tensor("q", q, range(2, 6), "(..., T_q, d_k)")
    check_float_tensor("k", k, range(2, 6), "(..., T_k, d_k)")
    check_float_tensor("v", v, range(2, 6), "(..., T_k, d_v)")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if broadcast_shape(q.shape[:-2], k.shape[:-2], v.shape[:-2]) is None:
        raise ValueError(
            f"q, k and v must agree on their leading (batch, head) dimensions, got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share d_k (last dimension), got q {tuple(q.shape)} and k {tuple(k.shape)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys T_k, got k {tuple(k.shape)} "
            f"and v {tuple(v.shape)}"
        )
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, d_k) x (..., d_k, T_k) -> (..., T_q, T_k)
    if bias is not None:
        check_float_tensor("bias", bias, range(2, 6), "(..., T_q, T_k)")
        if bias.dtype != q.dtype:
            raise TypeError(f"bias must have the dtype of q, k and v ({q.dtype}), got {bias.dtype}")
        check_broadcast("bias", bias.shape, scores.shape, "the scores (..., T_q, T_k)")
        scores = scores + bias  # (..., T_q, T_k)
    empty = None  # where some query row has no key at all: those rows, (..., T_q, 1)
    if mask is not None:
        check_bool_mask("mask", mask)
        check_broadcast("mask", mask.shape, scores.shape, "the scores (..., T_q, T_k)")
        scores = scores.masked_fill(~mask, float("-inf"))  # a blocked key gets weight exp(-inf) = 0
        no_key = ~mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
        if bool(no_key.any()):  # softmax of a row of -inf only is NaN: scores 0 here, weights 0 below
            empty = no_key
            scores = scores.masked_fill(empty, 0.0)
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k), rows sum to 1
    if empty is not None and mask is not None:
        weights = weights.masked_fill(~mask, 0.0)  # fully masked rows become all zeros
    return weights @ v, weights  # (..., T_q, T_k) x (..., T_k, d_v) -> (..., T_q, d_v)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: project, split into heads, attend, merge, project. Chapter 1."""

    def __init__(
        self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True, sdpa: bool = True,
        n_kv_heads: int | None = None,
    ):
        super().__init__()
        # sdpa=True: without weights, use PyTorch's fused F.scaled_dot_product_attention; False: always
        # the explicit softmax(Q K^T / sqrt(d_k)) V above (same maths; which is faster depends on the CPU, Chapter 6)
        self.sdpa = check_bool("sdpa", sdpa)
        check_positive_int("d_model", d_model)
        check_positive_int("n_heads", n_heads)
        check_probability("dropout", dropout)
        check_bool("bias", bias)
        if d_model % n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model={d_model} and n_heads={n_heads}"
            )
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        # Chapter 11: n_kv_heads < n_heads shares each key/value head among n_heads / n_kv_heads query
        # heads (grouped-query attention; 1 = multi-query); the default n_kv_heads = n_heads is the paper's MHA
        self.n_kv_heads = n_heads if n_kv_heads is None else check_positive_int("n_kv_heads", n_kv_heads)
        if n_heads % self.n_kv_heads != 0:
            raise ValueError(
                f"n_kv_heads must divide n_heads, got n_kv_heads={self.n_kv_heads} and n_heads={n_heads}"
            )
        d_kv = self.n_kv_heads * self.d_k  # width of the key and value projections
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)
        self.W_K = nn.Linear(d_model, d_kv, bias=bias)
        self.W_V = nn.Linear(d_model, d_kv, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, T, d_model) -> (B, h, T, d_k). Chapter 1.

        Keys and values of n_kv_heads < h heads (Chapter 11): (B, T, n_kv * d_k) -> (B, n_kv, T, d_k).
        """
        check_rank("x", x, 3, "(B, T, d_model)")
        if x.shape[-1] not in (self.d_model, self.n_kv_heads * self.d_k):
            raise ValueError(f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}")
        B, T, width = x.shape
        return x.view(B, T, width // self.d_k, self.d_k).transpose(1, 2)  # (B, heads, T, d_k)

    def merge_heads(self, x: Tensor) -> Tensor:
        """(B, h, T, d_k) -> (B, T, d_model). Chapter 1."""
        check_rank("x", x, 4, "(B, h, T, d_k)")
        if (x.shape[1], x.shape[3]) != (self.n_heads, self.d_k):
            raise ValueError(
                f"x must have shape (B, h={self.n_heads}, T, d_k={self.d_k}), got {tuple(x.shape)}"
            )
        B, _, T, _ = x.shape
        return x.transpose(1, 2).reshape(B, T, self.d_model)  # (B, T, h * d_k)

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask: Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` (B, T_q, d_model) to ``key``/``value`` (B, T_k, d_model). Chapter 1.

        key and value default to query (self-attention). Returns (output (B, T_q, d_model),
        per-head weights (B, h, T_q, T_k), or None when need_weights=False, which takes
        PyTorch's fused kernel: same maths, faster, used in training).
        """
        key = query if key is None else key
        value = key if value is None else value
        check_bool("need_weights", need_weights)
        for name, x in (("query", query), ("key", key), ("value", value)):
            check_float_tensor(name, x, 3, "(B, T, d_model)")
            if x.shape[-1] != self.d_model:
                raise ValueError(
                    f"{name} must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}"
                )
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(
                f"query, key and value must have the same batch size B, got {query.shape[0]}, "
                f"{key.shape[0]} and {value.shape[0]}"
            )
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"key and value must have the same number of positions T_k, got key {tuple(key.shape)} "
                f"and value {tuple(value.shape)}"
            )
        if not query.dtype == key.dtype == value.dtype == self.W_Q.weight.dtype:
            raise TypeError(
                f"query, key and value must have the module's dtype {self.W_Q.weight.dtype}, got "
                f"{query.dtype}, {key.dtype} and {value.dtype}"
            )
        # 1) project and split into heads
        q = self.split_heads(self.W_Q(query))  # (B, h, T_q, d_k)
        k = self.split_heads(self.W_K(key))  # (B, h, T_k, d_k)
        v = self.split_heads(self.W_V(value))  # (B, h, T_k, d_k)
        # 2) attend in every head at once, 3) merge heads and project
        return self.attend_heads(q, k, v, mask, need_weights)

    def attend_heads(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, need_weights: bool = True,
        bias: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend with split heads q (B, h, T_q, d_k), k and v (B, h, T_k, d_k), then merge and W_O. Chapter 1.

        Returns (output (B, T_q, d_model), weights (B, h, T_q, T_k) or None). The KV cache of
        Chapter 6 calls this directly with cached k and v. With n_kv_heads < h, k and v hold
        (B, n_kv_heads, T_k, d_k): each key/value head serves h / n_kv_heads consecutive query heads (Chapter 11).
        ``bias`` (B or 1, h, T_q, T_k): a score bias added before the softmax (ALiBi, T5: Chapter 9).
        """
        check_bool("need_weights", need_weights)
        check_float_tensor("q", q, 4, "(B, h, T_q, d_k)")
        check_float_tensor("k", k, 4, "(B, h or n_kv_heads, T_k, d_k)")
        check_float_tensor("v", v, 4, "(B, h or n_kv_heads, T_k, d_k)")
        grouped = k.dim() == 4 and self.n_kv_heads != self.n_heads and k.shape[1] == self.n_kv_heads
        explicit = need_weights or not self.sdpa or bias is not None  # the softmax written out, as in Chapter 1
        if grouped and explicit:
            group = self.n_heads // self.n_kv_heads
            k = k.repeat_interleave(group, dim=1)  # (B, n_kv, T_k, d_k) -> (B, h, T_k, d_k)
            v = v.repeat_interleave(group, dim=1)  # (B, n_kv, T_k, d_k) -> (B, h, T_k, d_k)
        if explicit:
            out, weights = scaled_dot_product_attention(q, k, v, mask, bias)  # (B, h, T_q, d_k)
            weights_out: Tensor | None = weights if need_weights else None
            if self.training and self.dropout.p > 0:
                # dropout on the attention weights: not in the paper (section 5.4 drops sub-layer outputs and
                # embeddings + positions); it comes from later implementations such as the Annotated Transformer
                out = self.dropout(weights) @ v
        else:
            if mask is not None:
                check_bool_mask("mask", mask)
                check_broadcast(
                    "mask", mask.shape, (q.shape[0], self.n_heads, q.shape[2], k.shape[2]),
                    "the scores (B, h, T_q, T_k)",
                )
            p = self.dropout.p if self.training else 0.0
            # (B, h, T_q, d_k); enable_gqa lets n_kv_heads key/value heads serve the h query heads
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, enable_gqa=grouped)
            weights_out = None
        return self.W_O(self.merge_heads(out)), weights_out  # (B, h, T_q, d_k) -> (B, T_q, d_model)


# ---------------------------------------------------------------- attention as kernel regression
def nadaraya_watson(queries: Tensor, keys: Tensor, values: Tensor, sigma: float) -> tuple[Tensor, Tensor]:
    """Gaussian-kernel regression: (output (..., T_q, d_v), weights (..., T_q, T_k)). Chapter 1.

    Each query's output is the average of the values weighted by ``exp(-||q - k_j||^2 / (2 sigma^2))``,
    normalised to sum to 1 (Nadaraya 1964; Watson 1964). Written with explicit squared distances,
    the way the estimator is usually stated; Chapter 1 shows it is softmax attention on q . k.
    """
    check_float_tensor("queries", queries, range(2, 6), "(..., T_q, d)")
    check_float_tensor("keys", keys, range(2, 6), "(..., T_k, d)")
    check_float_tensor("values", values, range(2, 6), "(..., T_k, d_v)")
    sigma = check_number("sigma", sigma, low=0.0, low_open=True)
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries and keys must have the same last dimension d, got {tuple(queries.shape)} "
                         f"and {tuple(keys.shape)}")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"keys and values must have the same number of rows T_k, got {tuple(keys.shape)} "
                         f"and {tuple(values.shape)}")
    diff = queries.unsqueeze(-2) - keys.unsqueeze(-3)  # (..., T_q, 1, d) - (..., 1, T_k, d) -> (..., T_q, T_k, d)
    sq_dist = diff.pow(2).sum(-1)  # (..., T_q, T_k)
    weights = torch.softmax(-sq_dist / (2 * sigma**2), dim=-1)  # kernel values, normalised over the keys
    return weights @ values, weights  # (..., T_q, T_k) x (..., T_k, d_v) -> (..., T_q, d_v)
