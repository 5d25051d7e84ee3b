"""Where a Transformer learns token order from: the positional machinery of Chapter 9.

Both model families (Chapter 5's :class:`~course_utils.model.Transformer` and Chapter 8's
:class:`~course_utils.gpt.DecoderOnly`) hold one :class:`PositionalScheme`, chosen by their
config's ``positional`` field among :data:`POSITIONAL_SCHEMES`: added to the embeddings
(sinusoidal, learned), inside every attention (RoPE rotates queries and keys, ALiBi and the T5
bias add to the scores), or none at all. Positions are integer tensors (B, T), one per token,
so that they may be counted from the end of the source or drawn at random (Ruoss et al., 2023).
The maths of each scheme lives in :mod:`course_utils.positional` (Chapter 2); this module
plugs it into attention.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import Tensor, nn

from .attention import MultiHeadAttention
from .positional import (
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
    T5RelativeBias,
    alibi_bias_at,
    alibi_slopes,
    apply_rope_at,
    rope_tables,
)
from .positional import random_positions as random_positions_draw
from .validate import (
    check_int,
    check_number,
    check_positive_int,
    check_rank,
)


class PositionalConfig(Protocol):
    """What a :class:`PositionalScheme` reads from a model's config (TransformerConfig, DecoderOnlyConfig)."""

    positional: str
    d_model: int
    n_heads: int
    max_len: int


POSITIONAL_SCHEMES = ("sinusoidal", "learned", "rope", "alibi", "t5", "none")


class PositionalScheme(nn.Module):
    """Where a Transformer learns token order from, one of POSITIONAL_SCHEMES. Chapter 9.

    ``embed(x, positions)`` adds an absolute encoding (sinusoidal, learned) to the embeddings;
    ``relation(kind, q_pos, k_pos)`` returns what one attention needs instead (RoPE, ALiBi, T5),
    or None. Positions are integer tensors (B, T), one per token. Both model families use it
    (Chapter 8's ``DecoderOnly`` has one kind of attention, "decoder"): ``config`` needs
    ``positional``, ``d_model``, ``n_heads`` and ``max_len``; ``learned_std`` is the learned
    table's initial scale; ``kinds`` the attentions that get a T5 bias table.
    """

    def __init__(self, config: PositionalConfig, learned_std: float = 0.02,
                 kinds: tuple[str, ...] = ("encoder", "decoder", "cross")):
        super().__init__()
        if not all(hasattr(config, a) for a in ("positional", "d_model", "n_heads", "max_len")):
            raise TypeError(f"config must be a TransformerConfig or DecoderOnlyConfig, got {type(config).__name__}")
        c = config
        self.kind = c.positional
        self.table: nn.Module | None = None
        if self.kind == "sinusoidal":
            self.table = SinusoidalPositionalEncoding(c.d_model, c.max_len)
        elif self.kind == "learned":
            self.table = LearnedPositionalEncoding(c.max_len, c.d_model, std=learned_std)
        elif self.kind == "rope":
            self.d_k = c.d_model // c.n_heads
            cos, sin = rope_tables(c.max_len, self.d_k)
            self.register_buffer("cos", cos, persistent=False)  # (max_len, d_k/2)
            self.register_buffer("sin", sin, persistent=False)
        elif self.kind == "alibi":
            self.register_buffer("slopes", alibi_slopes(c.n_heads), persistent=False)  # (h,)
        elif self.kind == "t5":  # one table per kind of attention, shared by the layers of a stack
            bidirectional = {"encoder": True, "decoder": False, "cross": True}
            self.t5 = nn.ModuleDict({k: T5RelativeBias(c.n_heads, bidirectional=bidirectional[k]) for k in kinds})

    def _apply(self, fn, recurse=True):  # noqa: ANN001, ANN202 (the hook behind .double() and .to())
        """After ``.double()`` the RoPE tables are recomputed in float64, not just cast (Chapter 9)."""
        super()._apply(fn, recurse)
        if self.kind == "rope" and self.cos.dtype == torch.float64:
            cos, sin = rope_tables(self.cos.shape[0], self.d_k, dtype=torch.float64)
            self.cos, self.sin = cos.to(self.cos.device), sin.to(self.sin.device)
        return self

    def embed(self, x: Tensor, positions: Tensor) -> Tensor:
        """x (B, T, d_model) plus the absolute encoding of positions (B, T), if the scheme has one."""
        if self.table is None:
            return x
        return x + self.table.at(positions)  # type: ignore[operator]  # (B, T, d_model) + (B, T, d_model)

    def relation(self, kind: str, q_pos: Tensor, k_pos: Tensor) -> AttentionPositions | None:
        """What attention ``kind`` ("encoder", "decoder", "cross") needs to know about positions, or None."""
        if self.kind in ("sinusoidal", "learned", "none"):
            return None
        return AttentionPositions(self, kind, q_pos, k_pos)


class AttentionPositions:
    """Positions of the queries (B, T_q) and keys (B, T_k) of one attention, for RoPE, ALiBi or T5. Chapter 9."""

    def __init__(self, scheme: PositionalScheme, kind: str, q_pos: Tensor, k_pos: Tensor):
        if not isinstance(scheme, PositionalScheme):
            raise TypeError(f"scheme must be a PositionalScheme, got {type(scheme).__name__}")
        check_rank("q_pos", q_pos, 2, "(B, T_q)"), check_rank("k_pos", k_pos, 2, "(B, T_k)")
        self.scheme, self.kind, self.q_pos, self.k_pos = scheme, kind, q_pos, k_pos

    def rotate(self, x: Tensor, positions: Tensor) -> Tensor:
        """RoPE: rotate x (B, h, T, d_k) by its positions (B, T); other schemes leave x as it is."""
        if self.scheme.kind != "rope":
            return x
        return apply_rope_at(x, positions, self.scheme.cos, self.scheme.sin)

    def bias(self) -> Tensor | None:
        """Additive score bias (B, h, T_q, T_k) for ALiBi and T5, None otherwise."""
        if self.scheme.kind == "alibi":
            slopes: Any = self.scheme.slopes  # a buffer (h,)
            return alibi_bias_at(slopes, self.q_pos, self.k_pos)
        if self.scheme.kind == "t5":
            return self.scheme.t5[self.kind](self.q_pos, self.k_pos)
        return None


def attend(
    mha: MultiHeadAttention,
    query: Tensor,
    key: Tensor,
    mask: Tensor | None,
    need_weights: bool,
    rel: AttentionPositions | None = None,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention from query (B, T_q, d_model) to key = value (B, T_k, d_model), with positions. Chapter 9.

    Without ``rel`` this is exactly ``mha(query, key, key, mask)``. With it, queries and keys
    are rotated (RoPE) and the score bias (ALiBi, T5) is added before the softmax.
    """
    if rel is None:
        return mha(query, key, key, mask=mask, need_weights=need_weights)
    q = rel.rotate(mha.split_heads(mha.W_Q(query)), rel.q_pos)  # (B, h, T_q, d_k)
    k = rel.rotate(mha.split_heads(mha.W_K(key)), rel.k_pos)  # (B, h, T_k, d_k)
    v = mha.split_heads(mha.W_V(key))  # (B, h, T_k, d_k)
    return mha.attend_heads(q, k, v, mask, need_weights, bias=rel.bias())


def attend_with_bias(
    mha: MultiHeadAttention, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, bias: Tensor | None,
    need_weights: bool,
) -> tuple[Tensor, Tensor | None]:
    """``mha.attend_heads(q, k, v, mask, need_weights, bias=bias)``: kept for code that imports it. Chapter 9."""
    return mha.attend_heads(q, k, v, mask, need_weights, bias=bias)


def check_position_fields(config: PositionalConfig) -> None:
    """The positional fields of a model config, checked by one rule for both families. Chapter 9.

    ``positional`` is one of :data:`POSITIONAL_SCHEMES`; RoPE needs an even d_k; ``random_positions``
    is 0 (off) or at most ``max_len`` (every drawn position needs a row in the tables, which have
    max_len rows); ``random_fraction`` is in (0, 1].
    """
    c: Any = config
    if c.positional not in POSITIONAL_SCHEMES:
        raise ValueError(f"positional must be one of {POSITIONAL_SCHEMES}, got {c.positional!r}")
    if c.positional == "rope" and (c.d_model // c.n_heads) % 2 != 0:
        raise ValueError(f"RoPE needs an even d_k = d_model / n_heads, got {c.d_model // c.n_heads}")
    if isinstance(c.random_positions, bool) or not isinstance(c.random_positions, int) \
            or not 0 <= c.random_positions <= c.max_len:
        raise ValueError(
            f"random_positions must be an int from 0 (off) to max_len={c.max_len}, got {c.random_positions!r}"
        )
    if isinstance(c.random_fraction, bool) or not isinstance(c.random_fraction, (int, float)) \
            or not 0 < c.random_fraction <= 1:
        raise ValueError(f"random_fraction must be a number in (0, 1], got {c.random_fraction!r}")


def training_position_map(
    batch_size: int, n: int, random_positions: int, random_fraction: float, device: torch.device | str | None = None
) -> Tensor:
    """(batch_size, n): where plain positions 0..n-1 go in one training batch with random positions. Chapter 9.

    Each row is a sorted random subset of 0..random_positions-1 (Ruoss et al., 2023); with
    ``random_fraction`` < 1 only that share of the rows is, the others keep 0, 1, 2, ... (the
    positions they will have at evaluation). Both model families draw their training positions here.
    """
    check_positive_int("batch_size", batch_size)
    check_int("n", n, low=0)
    check_positive_int("random_positions", random_positions)
    check_number("random_fraction", random_fraction, 0.0, 1.0)
    if n > random_positions:
        raise ValueError(f"sequences of {n} positions do not fit random_positions={random_positions}; "
                         "build the model with a larger random_positions")
    table = random_positions_draw(batch_size, n, random_positions).to(device)  # (B, n), sorted per row
    if random_fraction < 1:  # some rows keep the plain positions of evaluation
        plain = torch.rand(batch_size, 1, device=device) >= random_fraction  # (B, 1)
        table = torch.where(plain, torch.arange(n, device=device).expand(batch_size, n), table)
    return table
