"""The full encoder-decoder Transformer, built in Chapter 5.

Reads bottom-up: config -> position-wise feed-forward -> encoder block -> key/value cache ->
decoder block -> the model. Attention, LayerNorm, positional encoding and masks come from
the earlier chapters' modules. Masks are boolean keep-masks (True = attend). The copies into
``torch.nn.Transformer`` live in :mod:`course_utils.torch_reference`, the positional schemes of
Chapter 9 in :mod:`course_utils.positions`; both are re-exported here.

Chapter 9 adds a switch ``TransformerConfig.positional`` between positional schemes: added to
the embeddings (sinusoidal, learned), inside every attention (RoPE rotates queries and keys,
ALiBi and the T5 bias add to the scores), or none at all; and two ways to choose the integer
positions themselves: counted from the start or from the end of the source, and sampled at
random during training (Ruoss et al., 2023). The default is the paper's model, unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, overload

import torch
from torch import Tensor, nn

from .attention import MultiHeadAttention
from .masks import causal_mask, combine_masks, padding_mask
from .norm import LayerNorm, residual_sublayer

# Chapter 9's positional machinery and the torch.nn weight copies live in their own modules;
# their names stay importable from here, where the notebooks and earlier code import them.
from .positions import (
    POSITIONAL_SCHEMES,
    AttentionPositions,
    PositionalScheme,
    attend,
    attend_with_bias,
    check_position_fields,
    training_position_map,
)
from .torch_reference import (
    copy_encoder_block_weights,
    copy_ffn_weights,
    copy_mha_weights,
    copy_norm_weights,
    to_torch_transformer,
)
from .validate import (
    check_bool,
    check_bool_mask,
    check_broadcast,
    check_finite,
    check_float_tensor,
    check_int,
    check_model_tokens,
    check_positive_int,
    check_probability,
    check_tensor,
)

__all__ = [
    "POSITIONAL_SCHEMES", "AttentionPositions", "DecoderBlock", "EncoderBlock", "KVCache", "PositionalScheme",
    "PositionwiseFeedForward", "Transformer", "TransformerConfig", "attend", "attend_with_bias",
    "cached_self_attention", "copy_encoder_block_weights", "copy_ffn_weights", "copy_mha_weights",
    "copy_norm_weights", "init_weights", "to_torch_transformer",
]


@dataclass
class TransformerConfig:
    """Sizes and switches of an encoder-decoder Transformer. Chapter 5."""

    src_vocab_size: int  # number of source token ids (V_src)
    tgt_vocab_size: int  # number of target token ids (V_tgt)
    d_model: int = 64  # width of every token vector (paper base: 512); tiny for CPU
    n_heads: int = 4  # attention heads h; d_k = d_model / h (paper: 8)
    d_ff: int = 128  # hidden width of the position-wise FFN (paper: 4 * d_model = 2048)
    n_encoder_layers: int = 2  # encoder blocks N (paper: 6)
    n_decoder_layers: int = 2  # decoder blocks N (paper: 6)
    # paper (section 5.4): 0.1 on every sub-layer output and on embeddings + PE; this model also drops
    # attention weights and the FFN hidden layer, as later implementations do (not in the paper)
    dropout: float = 0.1
    max_len: int = 256  # longest sequence the positional table covers
    norm_first: bool = False  # False: post-LN as in the paper; True: pre-LN (LayerNorm inside the residual branch)
    tie_embeddings: bool = False  # one shared embedding for source, target and output projection (equal vocab sizes)
    pad_id: int = 0  # token id of padding; masks are derived from it when none are given
    positional: str = "sinusoidal"  # one of POSITIONAL_SCHEMES (Chapter 9); the paper's by default
    source_positions: str = "start"  # "start": source token j is at j; "end": at L-1-j (Chapter 9)
    random_positions: int = 0  # > 0: in training, positions are a sorted random subset of 0..this-1 (Chapter 9)
    random_fraction: float = 1.0  # share of training examples that get random positions; the rest keep 0, 1, 2, ...
    # kernels (the same function either way, different speed; Chapter 6 measures them):
    fused_layer_norm: bool = False  # True: LayerNorm through F.layer_norm instead of the from-scratch formula
    sdpa_attention: bool = True  # False: explicit attention maths instead of F.scaled_dot_product_attention
    residual: bool = True  # False: no residual connections (Chapter 10's ablation); same weights either way

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff",
                     "n_encoder_layers", "n_decoder_layers", "max_len"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name)))  # NumPy ints -> int
        if self.d_model % self.n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model={self.d_model} and n_heads={self.n_heads}"
            )
        if self.d_model % 2 != 0:
            raise ValueError(f"d_model must be even for sinusoidal positional encoding, got {self.d_model}")
        check_probability("dropout", self.dropout)
        check_bool("norm_first", self.norm_first)
        check_bool("tie_embeddings", self.tie_embeddings)
        check_bool("fused_layer_norm", self.fused_layer_norm)
        check_bool("sdpa_attention", self.sdpa_attention)
        check_bool("residual", self.residual)
        if self.tie_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                "tie_embeddings=True needs one shared vocabulary: src_vocab_size must equal tgt_vocab_size, "
                f"got {self.src_vocab_size} and {self.tgt_vocab_size}"
            )
        check_int("pad_id", self.pad_id, low=0)
        for name in ("src_vocab_size", "tgt_vocab_size"):
            if self.pad_id >= getattr(self, name):
                raise ValueError(f"pad_id must be a valid token id < {name}={getattr(self, name)}, got {self.pad_id}")
        if self.source_positions not in ("start", "end"):
            raise ValueError(f"source_positions must be 'start' or 'end', got {self.source_positions!r}")
        check_position_fields(self)


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = W_2 dropout(ReLU(W_1 x + b_1)) + b_2, applied to every position alike. Chapter 5.

    The paper's FFN has no dropout inside (section 3.3); the hidden-layer dropout here follows later
    implementations and is off with dropout=0.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_probability("dropout", dropout)
        self.linear1 = nn.Linear(d_model, d_ff)  # d_model -> d_ff
        self.linear2 = nn.Linear(d_ff, d_model)  # d_ff -> d_model
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., d_model) -> (..., d_model)."""
        check_float_tensor("x", x)
        if x.shape[-1] != self.linear1.in_features:
            raise ValueError(
                f"x must have last dimension d_model={self.linear1.in_features}, got shape {tuple(x.shape)}"
            )
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))  # (..., d_ff) -> (..., d_model)


class _Block(nn.Module):
    """What both blocks share (Chapter 5): the pre-LN / post-LN placement and the residual switch."""

    def __init__(self, norm_first: bool, residual: bool, fused_layer_norm: bool, sdpa_attention: bool) -> None:
        super().__init__()
        self.norm_first = check_bool("norm_first", norm_first)
        self.residual = check_bool("residual", residual)
        check_bool("fused_layer_norm", fused_layer_norm)
        check_bool("sdpa_attention", sdpa_attention)
        self.placement = "pre" if norm_first else "post"


class EncoderBlock(_Block):
    """Self-attention and FFN, each wrapped in dropout + residual + LayerNorm (post-LN or pre-LN). Chapter 5.

    Each sub-layer runs through Chapter 3's :func:`~course_utils.norm.residual_sublayer`;
    ``residual=False`` drops the residual connections (Chapter 10) with the same weights.
    """

    def __init__(
        self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0, norm_first: bool = False,
        fused_layer_norm: bool = False, sdpa_attention: bool = True, residual: bool = True,
    ):
        super().__init__(norm_first, residual, fused_layer_norm, sdpa_attention)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, sdpa=sdpa_attention)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = (LayerNorm(d_model, fused=fused_layer_norm) for _ in range(2))
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
        cache: KVCache | None = None,
        layer: int = 0,
        rel: AttentionPositions | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """x: (B, T, d_model) -> (B, T, d_model), self-attention weights (B, h, T, T) or None.

        With a causal mask this block is the block of a decoder-only model (Chapter 8), which
        may pass a KVCache: x then holds only the new tokens and ``layer`` picks the cache slot.
        ``rel``: positions for RoPE / ALiBi / T5 (Chapter 9); None for the paper's model.
        """
        check_float_tensor("x", x, 3, "(B, T, d_model)")
        weights: list[Tensor | None] = []

        def self_attention(h: Tensor) -> Tensor:
            a, w = cached_self_attention(self.self_attn, h, mask, need_weights, cache, layer, rel)
            weights.append(w)
            return self.dropout1(a)

        # pre-LN: x + Sublayer(LN(x)); post-LN, as in the paper: LN(x + Sublayer(x))
        x = residual_sublayer(x, self_attention, self.norm1, self.placement, self.residual)
        x = residual_sublayer(x, lambda h: self.dropout2(self.ffn(h)), self.norm2, self.placement, self.residual)
        return x, weights[0]


class KVCache:
    """Per decoder layer: self-attention keys/values so far and cross-attention keys/values of the memory. Chapter 5.

    self_k[l], self_v[l]: (B, h, t, d_k) for the t target tokens decoded so far; cross_k[l],
    cross_v[l]: (B, h, T_src, d_k), computed once from the encoder memory on the first call.
    """

    def __init__(self, n_layers: int):
        check_positive_int("n_layers", n_layers)
        self.n_layers = n_layers
        self.self_k: list[Tensor | None] = [None] * n_layers
        self.self_v: list[Tensor | None] = [None] * n_layers
        self.cross_k: list[Tensor | None] = [None] * n_layers
        self.cross_v: list[Tensor | None] = [None] * n_layers
        self.key_keep: Tensor | None = None  # (B, t) bool: which cached target tokens are not padding
        self.key_pos: Tensor | None = None  # (B, t) long: positions of the cached target tokens (Chapter 9)

    @property
    def length(self) -> int:
        """Number of target tokens already in the cache."""
        return 0 if self.key_keep is None else int(self.key_keep.shape[1])

    def __repr__(self) -> str:
        return f"KVCache(n_layers={self.n_layers}, length={self.length})"


def cached_self_attention(
    mha: MultiHeadAttention, x: Tensor, mask: Tensor | None, need_weights: bool, cache: KVCache | None, layer: int,
    rel: AttentionPositions | None = None,
) -> tuple[Tensor, Tensor | None]:
    """Self-attention of the new tokens x (B, T_new, d_model) over the cached ones and themselves. Chapter 5.

    Without a cache it is plain self-attention. With one, the keys and values of x are
    appended to ``cache.self_k[layer]`` / ``cache.self_v[layer]`` and the queries of x attend
    to all t + T_new of them (``mask`` must then broadcast to (B, h, T_new, t + T_new)).
    ``rel`` (Chapter 9): RoPE rotates the new queries and keys by the new tokens' positions
    rel.q_pos before they are cached; ALiBi / T5 add their bias over all rel.k_pos.
    """
    if cache is None:
        return attend(mha, x, x, mask, need_weights, rel)
    check_int("layer", layer, 0, cache.n_layers - 1)
    q = mha.split_heads(mha.W_Q(x))  # (B, h, T_new, d_k)
    k = mha.split_heads(mha.W_K(x))  # (B, h, T_new, d_k)
    v = mha.split_heads(mha.W_V(x))  # (B, h, T_new, d_k)
    if rel is not None:  # RoPE: the new queries and keys sit at the new tokens' positions
        q, k = rel.rotate(q, rel.q_pos), rel.rotate(k, rel.q_pos)
    past_k, past_v = cache.self_k[layer], cache.self_v[layer]
    if past_k is not None and past_v is not None:
        k = torch.cat([past_k, k], dim=2)  # (B, h, t + T_new, d_k)
        v = torch.cat([past_v, v], dim=2)  # (B, h, t + T_new, d_k)
    cache.self_k[layer], cache.self_v[layer] = k, v
    return mha.attend_heads(q, k, v, mask, need_weights, bias=None if rel is None else rel.bias())


class DecoderBlock(_Block):
    """Causal self-attention, cross-attention (Q from the decoder, K and V from the encoder), FFN. Chapter 5."""

    def __init__(
        self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0, norm_first: bool = False,
        fused_layer_norm: bool = False, sdpa_attention: bool = True, residual: bool = True,
    ):
        super().__init__(norm_first, residual, fused_layer_norm, sdpa_attention)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, sdpa=sdpa_attention)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, sdpa=sdpa_attention)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = (LayerNorm(d_model, fused=fused_layer_norm) for _ in range(3))
        self.dropout1, self.dropout2, self.dropout3 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def _self_attention(
        self, x: Tensor, mask: Tensor | None, need_weights: bool, cache: KVCache | None, layer: int,
        rel: AttentionPositions | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        return cached_self_attention(self.self_attn, x, mask, need_weights, cache, layer, rel)

    def _cross_attention(
        self, x: Tensor, memory: Tensor, mask: Tensor | None, need_weights: bool, cache: KVCache | None, layer: int,
        rel: AttentionPositions | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        # Q from the decoder stream x, K and V from the encoder output (memory)
        if cache is None:
            return attend(self.cross_attn, x, memory, mask, need_weights, rel)
        mha = self.cross_attn
        if cache.cross_k[layer] is None or cache.cross_v[layer] is None:
            k_mem = mha.split_heads(mha.W_K(memory))  # (B, h, T_src, d_k), once
            cache.cross_k[layer] = k_mem if rel is None else rel.rotate(k_mem, rel.k_pos)
            cache.cross_v[layer] = mha.split_heads(mha.W_V(memory))  # (B, h, T_src, d_k), once
        q = mha.split_heads(mha.W_Q(x))  # (B, h, T_new, d_k)
        if rel is not None:
            q = rel.rotate(q, rel.q_pos)
        k, v = cache.cross_k[layer], cache.cross_v[layer]
        assert k is not None and v is not None
        return mha.attend_heads(q, k, v, mask, need_weights, bias=None if rel is None else rel.bias())

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        src_mask: Tensor | None = None,
        need_weights: bool = False,
        cache: KVCache | None = None,
        layer: int = 0,
        rel_self: AttentionPositions | None = None,
        rel_cross: AttentionPositions | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """x: (B, T_tgt, d_model), memory: (B, T_src, d_model) -> (x, self weights, cross weights).

        ``rel_self``, ``rel_cross``: positions for RoPE / ALiBi / T5 (Chapter 9); None for the paper's model.
        """
        check_float_tensor("x", x, 3, "(B, T_tgt, d_model)")
        check_float_tensor("memory", memory, 3, "(B, T_src, d_model)")
        if memory.shape[0] != x.shape[0]:
            raise ValueError(f"memory must have the batch size B={x.shape[0]} of x, got shape {tuple(memory.shape)}")
        weights: dict[str, Tensor | None] = {}

        def self_attention(h: Tensor) -> Tensor:
            a, weights["self"] = self._self_attention(h, tgt_mask, need_weights, cache, layer, rel_self)
            return self.dropout1(a)

        def cross_attention(h: Tensor) -> Tensor:
            c, weights["cross"] = self._cross_attention(h, memory, src_mask, need_weights, cache, layer, rel_cross)
            return self.dropout2(c)

        # pre-LN: x + Sublayer(LN(x)); post-LN, as in the paper: LN(x + Sublayer(x))
        x = residual_sublayer(x, self_attention, self.norm1, self.placement, self.residual)
        x = residual_sublayer(x, cross_attention, self.norm2, self.placement, self.residual)
        x = residual_sublayer(x, lambda h: self.dropout3(self.ffn(h)), self.norm3, self.placement, self.residual)
        return x, weights["self"], weights["cross"]


def init_weights(model: nn.Module, embeddings: Iterable[nn.Embedding], d_model: int, skip: str | None = None) -> None:
    """The course's initialisation, for every Transformer it builds (chapters 5, 8, 11, 12).

    Xavier-uniform for every matrix (like ``nn.Transformer``), then the token embeddings
    N(0, 1/d_model), so that sqrt(d_model) * embedding has unit scale like the positional encoding.
    Parameters whose name starts with ``skip`` keep their own initialisation; a shared embedding
    is drawn once.
    """
    for name, p in model.named_parameters():
        if p.dim() > 1 and not (skip is not None and name.startswith(skip)):
            nn.init.xavier_uniform_(p)
    for emb in {id(e): e for e in embeddings}.values():
        nn.init.normal_(emb.weight, mean=0.0, std=d_model**-0.5)


class Transformer(nn.Module):
    """Encoder-decoder Transformer of "Attention Is All You Need", post-LN or pre-LN. Chapter 5."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
        self.config = c = config
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = self.src_embed if c.tie_embeddings else nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.positional_scheme = PositionalScheme(c)  # sinusoidal by default (Chapter 9 switches it)
        self.dropout = nn.Dropout(c.dropout)
        kernels = {"fused_layer_norm": c.fused_layer_norm, "sdpa_attention": c.sdpa_attention, "residual": c.residual}
        self.encoder_layers = nn.ModuleList(
            EncoderBlock(c.d_model, c.n_heads, c.d_ff, c.dropout, c.norm_first, **kernels)
            for _ in range(c.n_encoder_layers)
        )
        self.decoder_layers = nn.ModuleList(
            DecoderBlock(c.d_model, c.n_heads, c.d_ff, c.dropout, c.norm_first, **kernels)
            for _ in range(c.n_decoder_layers)
        )
        # pre-LN stacks end with a LayerNorm (the residual stream is never normalised otherwise)
        final_norm = (lambda: LayerNorm(c.d_model, fused=c.fused_layer_norm)) if c.norm_first else nn.Identity
        self.encoder_norm: nn.Module = final_norm()
        self.decoder_norm: nn.Module = final_norm()
        self.output_projection = nn.Linear(c.d_model, c.tgt_vocab_size)  # d_model -> V_tgt logits
        self._reset_parameters()
        if c.tie_embeddings:
            self.output_projection.weight = self.src_embed.weight  # one (V, d_model) matrix, three uses

    def _reset_parameters(self) -> None:
        init_weights(self, (self.src_embed, self.tgt_embed), self.config.d_model)

    @property
    def pe(self) -> nn.Module | None:
        """The absolute positional table added to the embeddings (sinusoidal or learned), else None. Chapter 5."""
        return self.positional_scheme.table

    # -- helpers -----------------------------------------------------------------------------
    def _check_mask(self, name: str, mask: Tensor, target: tuple[int, ...], what: str) -> None:
        check_bool_mask(name, mask)
        check_broadcast(name, mask.shape, target, what)

    def _embed(self, tokens: Tensor, embedding: nn.Embedding, positions: Tensor) -> Tensor:
        x = embedding(tokens) * math.sqrt(self.config.d_model)  # (B, T, d_model)
        return self.dropout(self.positional_scheme.embed(x, positions))  # + PE[positions] (if additive), dropout

    def positions(self, src_keep: Tensor, T_tgt: int, offset: int = 0) -> tuple[Tensor, Tensor]:
        """Integer positions of the source tokens (B, T_src) and of target tokens offset.. (B, T_tgt). Chapter 9.

        ``src_keep`` (B, T_src) marks real source tokens (padding on the right). Source token j is
        at j, or at L-1-j with ``source_positions="end"`` (L real tokens: the last one is at 0,
        so output step t and the source token it copies in reversal share position t). In
        training with ``random_positions=N``, every example maps positions 0, 1, 2, ... to a
        sorted random subset of 0..N-1, the same map for source and target (Ruoss et al., 2023);
        with ``random_fraction`` < 1 only that share of the examples does, the others keep 0, 1, 2, ...
        """
        c = self.config
        B, T_src = src_keep.shape
        device = src_keep.device
        src_pos = torch.arange(T_src, device=device).expand(B, T_src)  # (B, T_src)
        if c.source_positions == "end":
            lengths = src_keep.long().sum(1, keepdim=True)  # (B, 1)
            src_pos = (lengths - 1 - src_pos).clamp(min=0)  # padding also gets 0; it is masked anyway
        tgt_pos = torch.arange(offset, offset + T_tgt, device=device).expand(B, T_tgt)  # (B, T_tgt)
        if self.training and c.random_positions > 0:  # one map for both halves
            table = training_position_map(B, max(T_src, offset + T_tgt), c.random_positions, c.random_fraction, device)
            src_pos, tgt_pos = table.gather(1, src_pos), table.gather(1, tgt_pos)
        return src_pos, tgt_pos

    # -- the three entry points ----------------------------------------------------------------
    @overload  # for the type checker: the memory alone, or with the weights when return_attention=True
    def encode(self, src: Tensor, src_mask: Tensor | None = ..., return_attention: Literal[False] = ...,
               positions: Tensor | None = ...) -> Tensor: ...
    @overload
    def encode(self, src: Tensor, src_mask: Tensor | None = ..., *, return_attention: Literal[True],
               positions: Tensor | None = ...) -> tuple[Tensor, list[Tensor]]: ...

    def encode(
        self, src: Tensor, src_mask: Tensor | None = None, return_attention: bool = False,
        positions: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """src (B, T_src) -> memory (B, T_src, d_model) [, encoder self-attention weights per layer]. Chapter 5.

        ``positions`` (B, T_src): the source positions (default: from :meth:`positions`, Chapter 9).
        """
        check_model_tokens("src", src, self.config.src_vocab_size, self.config.max_len)
        check_bool("return_attention", return_attention)
        B, T = src.shape
        if src_mask is None:
            src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, T_src)
        h = self.config.n_heads
        self._check_mask("src_mask", src_mask, (B, h, T, T), "the encoder scores (B, h, T_src, T_src)")
        if positions is None:
            positions = self.positions(src != self.config.pad_id, 1)[0]  # (B, T_src)
        x = self._embed(src, self.src_embed, positions)
        rel = self.positional_scheme.relation("encoder", positions, positions)
        weights: list[Tensor] = []
        for block in self.encoder_layers:
            x, w = block(x, src_mask, need_weights=return_attention, rel=rel)
            if w is not None:
                weights.append(w)  # (B, h, T_src, T_src)
        memory = self.encoder_norm(x)
        return (memory, weights) if return_attention else memory

    @overload  # for the type checker, as for encode
    def decode(self, tgt: Tensor, memory: Tensor, src_mask: Tensor | None = ..., tgt_mask: Tensor | None = ...,
               cache: KVCache | None = ..., return_attention: Literal[False] = ...,
               positions: tuple[Tensor, Tensor] | None = ...) -> Tensor: ...
    @overload
    def decode(self, tgt: Tensor, memory: Tensor, src_mask: Tensor | None = ..., tgt_mask: Tensor | None = ...,
               cache: KVCache | None = ..., *, return_attention: Literal[True],
               positions: tuple[Tensor, Tensor] | None = ...) -> tuple[Tensor, dict[str, list[Tensor]]]: ...

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        cache: KVCache | None = None,
        return_attention: bool = False,
        positions: tuple[Tensor, Tensor] | None = None,
    ) -> Tensor | tuple[Tensor, dict[str, list[Tensor]]]:
        """tgt (B, T_tgt), memory (B, T_src, d_model) -> logits (B, T_tgt, V_tgt) [, {"self", "cross"}]. Chapter 5.

        src_mask: keep-mask over the memory (B, 1, 1, T_src), None = attend to all of it.
        With a KVCache, tgt holds only the new tokens: their positions continue from
        cache.length, the cache is extended, and the logits equal a full recompute.
        ``positions``: (source (B, T_src), target (B, T_tgt)) positions (default: from
        :meth:`positions`, with the real source tokens read off src_mask; Chapter 9).
        """
        c = self.config
        offset = 0
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
            if cache.n_layers != c.n_decoder_layers:
                raise ValueError(
                    f"cache must have one entry per decoder layer ({c.n_decoder_layers}), got {cache.n_layers}"
                )
            offset = cache.length
        check_model_tokens("tgt", tgt, c.tgt_vocab_size, c.max_len, offset)
        check_float_tensor("memory", memory, 3, "(B, T_src, d_model)")
        check_finite("memory", memory, "the encoder output must be numbers for the decoder to attend to")
        if memory.dtype != self.tgt_embed.weight.dtype:
            raise TypeError(f"memory must have the model's dtype {self.tgt_embed.weight.dtype}, got {memory.dtype}; "
                            "convert the model (model.double()) or the memory (memory.float())")
        if memory.shape[0] != tgt.shape[0] or memory.shape[2] != c.d_model:
            raise ValueError(
                f"memory must have shape (B={tgt.shape[0]}, T_src, d_model={c.d_model}), got {tuple(memory.shape)}"
            )
        B, T = tgt.shape
        keep = tgt != c.pad_id  # (B, T_new)
        if cache is not None:
            if cache.key_keep is not None and cache.key_keep.shape[0] != B:
                raise ValueError(f"cache holds a batch of {cache.key_keep.shape[0]}, got tgt with batch {B}")
            all_keep = keep if cache.key_keep is None else torch.cat([cache.key_keep, keep], dim=1)  # (B, t + T_new)
            if tgt_mask is None:
                L = offset + T
                query_pos = torch.arange(offset, L, device=tgt.device).view(T, 1)  # (T_new, 1)
                causal = (torch.arange(L, device=tgt.device).view(1, L) <= query_pos).view(1, 1, T, L)
                tgt_mask = combine_masks(all_keep.view(B, 1, 1, L), causal)  # (B, 1, T_new, t + T_new)
        elif tgt_mask is None:
            tgt_mask = combine_masks(padding_mask(tgt, c.pad_id), causal_mask(T, tgt.device))  # (B, 1, T, T)
        L = offset + T
        assert tgt_mask is not None
        h, T_src = c.n_heads, memory.shape[1]
        self._check_mask("tgt_mask", tgt_mask, (B, h, T, L), "the decoder self-attention scores (B, h, T_tgt, T_keys)")
        if src_mask is not None:
            self._check_mask("src_mask", src_mask, (B, h, T, T_src), "the cross-attention scores (B, h, T_tgt, T_src)")
        if positions is None:
            if src_mask is None:
                src_keep = torch.ones(B, T_src, dtype=torch.bool, device=memory.device)
            else:  # a source key counts as real when some query may attend to it
                src_keep = src_mask.expand(B, -1, -1, T_src).flatten(1, 2).any(1)  # (B, T_src)
            positions = self.positions(src_keep, T, offset)
        src_pos, tgt_pos = positions
        key_pos = tgt_pos if cache is None or cache.key_pos is None else torch.cat([cache.key_pos, tgt_pos], dim=1)
        rel_self = self.positional_scheme.relation("decoder", tgt_pos, key_pos)
        rel_cross = self.positional_scheme.relation("cross", tgt_pos, src_pos)
        x = self._embed(tgt, self.tgt_embed, tgt_pos)
        self_w: list[Tensor] = []
        cross_w: list[Tensor] = []
        for layer, block in enumerate(self.decoder_layers):
            x, ws, wc = block(x, memory, tgt_mask, src_mask, return_attention, cache, layer, rel_self, rel_cross)
            if ws is not None and wc is not None:
                self_w.append(ws)  # (B, h, T_tgt, T_tgt) or (B, h, T_new, t + T_new) with a cache
                cross_w.append(wc)  # (B, h, T_tgt, T_src)
        if cache is not None:
            cache.key_keep, cache.key_pos = all_keep, key_pos
        logits = self.output_projection(self.decoder_norm(x))  # (B, T_tgt, V_tgt)
        return (logits, {"self": self_w, "cross": cross_w}) if return_attention else logits

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        return_attention: bool = False,
    ) -> Tensor | tuple[Tensor, dict[str, list[Tensor]]]:
        """src (B, T_src), tgt (B, T_tgt) -> logits (B, T_tgt, V_tgt) [, attention weights]. Chapter 5."""
        check_tensor("src", src)
        check_tensor("tgt", tgt)
        if src.dim() == 2 and tgt.dim() == 2 and src.shape[0] != tgt.shape[0]:
            raise ValueError(f"src and tgt must have the same batch size, got {src.shape[0]} and {tgt.shape[0]}")
        check_model_tokens("src", src, self.config.src_vocab_size, self.config.max_len)
        if src_mask is None:
            src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, T_src)
        # one set of positions for both halves (they share one random draw in training, Chapter 9)
        src_pos, tgt_pos = self.positions(src != self.config.pad_id, tgt.shape[1])
        if return_attention:
            memory, enc_w = self.encode(src, src_mask, return_attention=True, positions=src_pos)
            logits, dec_w = self.decode(tgt, memory, src_mask, tgt_mask, return_attention=True,
                                        positions=(src_pos, tgt_pos))
            return logits, {"encoder": enc_w, "decoder_self": dec_w["self"], "cross": dec_w["cross"]}
        memory = self.encode(src, src_mask, positions=src_pos)
        assert isinstance(memory, Tensor)
        return self.decode(tgt, memory, src_mask, tgt_mask, positions=(src_pos, tgt_pos))

    def new_cache(self) -> KVCache:
        """An empty KVCache with one slot per decoder layer, for incremental decoding. Chapter 5."""
        return KVCache(self.config.n_decoder_layers)
