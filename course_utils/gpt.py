"""The decoder-only (GPT-style) Transformer and its generation, built in Chapter 8.

One causal stack, no encoder and no cross-attention: every block is Chapter 5's
``EncoderBlock`` (self-attention + FFN, pre-LN or post-LN) run under a causal mask, so token
t sees tokens 0..t only. Attention, LayerNorm, the positional encodings and the KV cache are
the earlier chapters' pieces, imported, not copied.

API (reads bottom-up in this file):

- ``DecoderOnlyConfig(vocab_size, d_model=64, n_heads=4, d_ff=256, n_layers=4, dropout=0.0,
  max_len=128, positional="sinusoidal", norm_first=True, tie_embeddings=True, random_positions=0,
  random_fraction=1.0, fused_layer_norm=False, sdpa_attention=True)``; ``positional`` is any
  name of ``POSITIONAL_SCHEMES``, the one registry both model families share (Chapter 9):
  "sinusoidal" (fixed table, Chapter 2), "learned" (a trainable table, initialised N(0, 1) like
  the scaled embeddings), "rope", "alibi", "t5" (inside attention), "none" (NoPE: the causal
  mask alone lets the model infer positions). ``random_positions`` and ``random_fraction``
  draw random positions in training as in the encoder-decoder; the two kernel switches are
  Chapter 6's (same function, different speed).
- ``DecoderOnly(config)``: ``model(tokens (B, T)) -> logits (B, T, V)``;
  ``model(tokens, return_attention=True)`` -> (logits, [weights (B, h, T, T) per layer]);
  ``model(new_tokens, cache=model.new_cache())`` feeds only new tokens and reuses the cached
  keys/values (same logits as a full recompute, for every scheme).
  Right-padded batches need no padding mask: under the causal mask a real token never sees
  the padding that follows it (exclude padded targets from the loss instead).
- ``generate(model, prompt (B, T0), max_new_tokens, temperature=1.0, top_k=None, top_p=None,
  generator=None, use_cache=True, eos_id=None, pad_id=0)`` -> new ids (B, <= max_new_tokens);
  ``temperature=0`` is greedy decoding.
- ``top_k_filter``, ``top_p_filter``, ``filter_logits``, ``sample_next``: the sampling pieces,
  defined in :mod:`course_utils.sampling` (both model families sample through them).
- ``to_torch_encoder(model)``: an ``nn.TransformerEncoder`` holding a copy of the blocks, the
  independent reference the tests compare with (feed it ``model.embed(tokens)`` and a causal mask).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, overload

import torch
from torch import Tensor, nn

from .ffn import SwiGLU, swiglu_hidden
from .masks import causal_mask
from .model import EncoderBlock, KVCache, init_weights
from .norm import LayerNorm
from .positions import PositionalScheme, check_position_fields, training_position_map
from .sampling import check_sampling, filter_logits, sample_next
from .torch_reference import to_torch_encoder  # noqa: F401  (re-exported: Chapter 8 imports it from here)
from .validate import (
    check_bool,
    check_bool_mask,
    check_broadcast,
    check_choice,
    check_int,
    check_model_tokens,
    check_positive_int,
    check_probability,
    check_rank,
    check_token_ids,
)


@dataclass
class DecoderOnlyConfig:
    """Sizes and switches of a decoder-only (GPT-style) Transformer. Chapter 8."""

    vocab_size: int  # number of token ids V (input and output share them)
    d_model: int = 64  # width of every token vector
    n_heads: int = 4  # attention heads h; d_k = d_model / h
    d_ff: int = 256  # hidden width of the FFN (4 * d_model, as in GPT)
    n_layers: int = 4  # causal blocks N
    dropout: float = 0.0  # on embeddings, sub-layer outputs, attention weights, FFN hidden
    max_len: int = 128  # longest sequence (context window), prompt and generated tokens together
    positional: str = "sinusoidal"  # one of POSITIONAL_SCHEMES, shared with the encoder-decoder (Chapter 9)
    norm_first: bool = True  # pre-LN (GPT-2 onwards) with a final LayerNorm; False: post-LN as in the paper
    tie_embeddings: bool = True  # the output projection reuses the token embedding matrix
    random_positions: int = 0  # > 0: in training, positions are a sorted random subset of 0..this-1 (Chapter 9)
    random_fraction: float = 1.0  # share of training sequences that get random positions
    # kernels (the same function either way, different speed; Chapter 6 measures them):
    fused_layer_norm: bool = False  # True: LayerNorm through F.layer_norm instead of the from-scratch formula
    sdpa_attention: bool = True  # False: explicit attention maths instead of F.scaled_dot_product_attention
    residual: bool = True  # False: no residual connections (Chapter 10's ablation)
    # "relu": the paper's FFN; "swiglu": Chapter 11's gated FFN (no biases) with hidden width
    # swiglu_hidden(d_ff), so that it holds the ReLU FFN's weight count
    ffn: str = "relu"

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name)))  # NumPy ints -> int
        if self.d_model % self.n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model={self.d_model} and n_heads={self.n_heads}"
            )
        if self.positional == "sinusoidal" and self.d_model % 2 != 0:
            raise ValueError(f"d_model must be even for sinusoidal positional encoding, got {self.d_model}")
        check_position_fields(self)  # the encoder-decoder's rule for positional, random_positions, random_fraction
        check_choice("ffn", self.ffn, ("relu", "swiglu"))
        check_probability("dropout", self.dropout)
        for name in ("norm_first", "tie_embeddings", "fused_layer_norm", "sdpa_attention", "residual"):
            check_bool(name, getattr(self, name))


class DecoderOnly(nn.Module):
    """A GPT-style decoder-only Transformer: embed + positions, N causal blocks, tied output projection. Chapter 8."""

    def __init__(self, config: DecoderOnlyConfig):
        super().__init__()
        if not isinstance(config, DecoderOnlyConfig):
            raise TypeError(f"config must be a DecoderOnlyConfig, got {type(config).__name__}")
        self.config = c = config
        self.embedding = nn.Embedding(c.vocab_size, c.d_model)
        # the encoder-decoder's registry of schemes; a learned table starts at std 1, the scale of
        # sqrt(d_model) * embedding (with Chapter 2's 0.02 the positions start as 2 % of the signal
        # and attention by position, a previous-token head, is slow to learn)
        self.positional_scheme = PositionalScheme(c, learned_std=1.0, kinds=("decoder",))
        self.dropout = nn.Dropout(c.dropout)
        kernels = {"fused_layer_norm": c.fused_layer_norm, "sdpa_attention": c.sdpa_attention, "residual": c.residual}
        self.layers = nn.ModuleList(
            EncoderBlock(c.d_model, c.n_heads, c.d_ff, c.dropout, c.norm_first, **kernels) for _ in range(c.n_layers)
        )
        if c.ffn == "swiglu":  # Chapter 11's gated FFN in place of the paper's, before the initialisation below
            for block in self.layers:
                block.ffn = SwiGLU(c.d_model, swiglu_hidden(c.d_ff))
        # a pre-LN stack ends with a LayerNorm (the residual stream is never normalised otherwise)
        self.final_norm: nn.Module = LayerNorm(c.d_model, fused=c.fused_layer_norm) if c.norm_first else nn.Identity()
        self.output_projection = nn.Linear(c.d_model, c.vocab_size)  # d_model -> V logits
        # as Chapter 5's Transformer; the positional scheme keeps its own init
        init_weights(self, (self.embedding,), c.d_model, skip="positional_scheme.")
        if c.tie_embeddings:
            self.output_projection.weight = self.embedding.weight  # one (V, d_model) matrix, two uses

    @property
    def pe(self) -> nn.Module | None:
        """The absolute positional table added to the embeddings (sinusoidal or learned), else None. Chapter 8."""
        return self.positional_scheme.table

    def new_cache(self) -> KVCache:
        """An empty KVCache with one slot per block, for incremental generation. Chapter 8."""
        return KVCache(self.config.n_layers)

    def positions(self, B: int, T: int, offset: int = 0, device: torch.device | None = None) -> Tensor:
        """Integer positions (B, T) of T tokens after ``offset`` cached ones: offset, offset + 1, ... Chapter 9.

        In training with ``random_positions=N`` each sequence maps 0, 1, 2, ... to a sorted random
        subset of 0..N-1 instead (for ``random_fraction`` of the sequences), as in the
        encoder-decoder (Ruoss et al., 2023).
        """
        c = self.config
        pos = torch.arange(offset, offset + T, device=device).expand(B, T)  # (B, T)
        if self.training and c.random_positions > 0:
            pos = training_position_map(B, offset + T, c.random_positions, c.random_fraction, device).gather(1, pos)
        return pos

    def embed(self, tokens: Tensor, offset: int = 0, positions: Tensor | None = None) -> Tensor:
        """tokens (B, T) -> sqrt(d_model) * embedding + positions (default offset..offset+T-1), dropout. Chapter 8."""
        check_model_tokens("tokens", tokens, self.config.vocab_size, self.config.max_len, offset)
        if positions is None:
            B, T = tokens.shape
            positions = torch.arange(offset, offset + T, device=tokens.device).expand(B, T)  # (B, T)
        x = self.embedding(tokens) * math.sqrt(self.config.d_model)  # (B, T, d_model)
        return self.dropout(self.positional_scheme.embed(x, positions))

    def forward(
        self, tokens: Tensor, cache: KVCache | None = None, return_attention: bool = False,
        positions: Tensor | None = None, mask: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """tokens (B, T) -> logits (B, T, V) for the next token at every position [, weights per layer]. Chapter 8.

        With a KVCache, ``tokens`` holds only the new tokens: their positions continue from
        ``cache.length``, the cache grows, and the logits equal a full recompute's last rows.
        ``positions`` (B, T): the new tokens' integer positions (default: offset, offset + 1, ...;
        Chapter 9 evaluates at other ones). ``mask``: a keep-mask over the keys that broadcasts to
        (B, h, T, cache.length + T), instead of the causal mask (Chapter 11's sliding window).
        """
        offset = 0
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise TypeError(f"cache must be a KVCache (model.new_cache()), got {type(cache).__name__}")
            if cache.n_layers != self.config.n_layers:
                raise ValueError(f"cache must have one slot per layer ({self.config.n_layers}), got {cache.n_layers}")
            offset = cache.length
        check_rank("tokens", tokens, 2, "(B, T) of token ids")
        B, T = tokens.shape
        if cache is not None and cache.key_keep is not None and cache.key_keep.shape[0] != B:
            raise ValueError(f"cache holds a batch of {cache.key_keep.shape[0]}, got tokens with batch {B}")
        L = offset + T  # keys: the cached tokens and the new ones
        if positions is None:
            positions = self.positions(B, T, offset, tokens.device)  # (B, T)
        else:
            check_rank("positions", positions, 2, "(B, T) of integer positions")
            if tuple(positions.shape) != (B, T):
                raise ValueError(f"positions must have the shape of tokens {(B, T)}, got {tuple(positions.shape)}")
            if positions.dtype != torch.long or positions.min() < 0 or positions.max() >= self.config.max_len:
                raise ValueError(f"positions must be torch.long in [0, max_len={self.config.max_len}), got dtype "
                                 f"{positions.dtype}, min {positions.min().item()} and max {positions.max().item()}")
        if mask is None:  # new query i sits at offset + i and may see keys 0..offset + i
            mask = causal_mask(L, tokens.device)[:, :, offset:]  # (1, 1, T, L)
        else:
            check_bool_mask("mask", mask)
            check_broadcast("mask", mask.shape, (B, self.config.n_heads, T, L), "the scores (B, h, T, t + T)")
        x = self.embed(tokens, offset, positions)  # (B, T, d_model)
        key_pos = positions if cache is None or cache.key_pos is None else torch.cat([cache.key_pos, positions], 1)
        rel = self.positional_scheme.relation("decoder", positions, key_pos)  # RoPE / ALiBi / T5, else None
        weights: list[Tensor] = []
        for layer, block in enumerate(self.layers):
            x, w = block(x, mask, need_weights=return_attention, cache=cache, layer=layer, rel=rel)
            if w is not None:
                weights.append(w)  # (B, h, T, L)
        if cache is not None:
            new_keep = torch.ones(B, T, dtype=torch.bool, device=tokens.device)
            cache.key_keep = new_keep if cache.key_keep is None else torch.cat([cache.key_keep, new_keep], dim=1)
            cache.key_pos = key_pos
        logits = self.output_projection(self.final_norm(x))  # (B, T, V)
        return (logits, weights) if return_attention else logits


@overload
def generate(
    model: DecoderOnly, prompt: Tensor, max_new_tokens: int, temperature: float = ..., top_k: int | None = ...,
    top_p: float | None = ..., generator: torch.Generator | None = ..., use_cache: bool = ...,
    eos_id: int | None = ..., pad_id: int = ..., *, cache: KVCache | None = ..., positions: Tensor | None = ...,
    return_cache: Literal[False] = ...,
) -> Tensor: ...


@overload
def generate(
    model: DecoderOnly, prompt: Tensor, max_new_tokens: int, temperature: float = ..., top_k: int | None = ...,
    top_p: float | None = ..., generator: torch.Generator | None = ..., use_cache: bool = ...,
    eos_id: int | None = ..., pad_id: int = ..., *, cache: KVCache | None = ..., positions: Tensor | None = ...,
    return_cache: Literal[True],
) -> tuple[Tensor, KVCache]: ...


@torch.no_grad()
def generate(
    model: DecoderOnly,
    prompt: Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
    eos_id: int | None = None,
    pad_id: int = 0,
    *,
    cache: KVCache | None = None,
    positions: Tensor | None = None,
    return_cache: bool = False,
) -> Tensor | tuple[Tensor, KVCache]:
    """Continue ``prompt`` (B, T0) by up to ``max_new_tokens`` tokens; returns the new ids (B, n). Chapter 8.

    temperature=0: greedy (argmax); otherwise sample from the filtered softmax. With
    ``use_cache`` the prompt is fed once and then one token per step (KV cache); without it the
    whole sequence is recomputed every step; both give the same tokens. After a row emits
    ``eos_id`` it gets ``pad_id``; generation stops early when every row has finished.

    ``cache``: a KVCache to continue (``prompt`` then holds only the tokens after the cached
    ones); ``return_cache=True`` returns ``(new ids, cache)``, the cache holding every token but
    the last generated one (Chapter 11 measures it). ``positions`` (B, T0 + max_new_tokens): the
    integer positions of the prompt's and the generated tokens, instead of counting on from the
    cache (Chapter 9's test-time positions).
    """
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a DecoderOnly, got {type(model).__name__}")
    check_token_ids("prompt", prompt, model.config.vocab_size, "(B, T0) of token ids")
    check_positive_int("max_new_tokens", max_new_tokens)
    check_bool("use_cache", use_cache)
    if eos_id is not None:
        check_int("eos_id", eos_id, low=0, high=model.config.vocab_size - 1)
    check_int("pad_id", pad_id, low=0, high=model.config.vocab_size - 1)
    check_bool("return_cache", return_cache)
    if cache is not None and not use_cache:
        raise ValueError("cache needs use_cache=True (without a cache every step recomputes the whole sequence)")
    if return_cache and not use_cache:
        raise ValueError("return_cache=True needs use_cache=True")
    offset = 0 if cache is None else cache.length
    # the model reads every token but the last generated one: that one needs no position
    if offset + prompt.shape[1] + max_new_tokens - 1 > model.config.max_len:
        raise ValueError(
            f"prompt length {prompt.shape[1]}" + (f" after {offset} cached tokens" if offset else "")
            + f" + max_new_tokens {max_new_tokens} exceeds the context window max_len={model.config.max_len}"
        )
    B, T0 = prompt.shape
    if positions is not None:
        check_rank("positions", positions, 2, "(B, T0 + max_new_tokens) of integer positions")
        if tuple(positions.shape) != (B, T0 + max_new_tokens):
            raise ValueError(f"positions must have shape (B, T0 + max_new_tokens) = {(B, T0 + max_new_tokens)}, "
                             f"got {tuple(positions.shape)}")
    temperature, top_k, top_p = check_sampling(temperature, top_k, top_p, greedy_ok=True)
    greedy = temperature == 0
    model.eval()
    seq = prompt
    finished = torch.zeros(B, dtype=torch.bool, device=prompt.device)
    if use_cache and cache is None:
        cache = model.new_cache()
    step_input = prompt
    for _ in range(max_new_tokens):
        t = seq.shape[1]  # tokens of this call so far; step_input holds the last of them
        if use_cache:
            pos = None if positions is None else positions[:, t - step_input.shape[1]: t]
            logits = model(step_input, cache=cache, positions=pos)[:, -1]  # (B, V): next-token logits
        else:
            logits = model(seq, positions=None if positions is None else positions[:, :t])[:, -1]
        if greedy:
            next_id = logits.argmax(dim=-1)  # (B,)
        else:
            next_id = sample_next(filter_logits(logits, temperature, top_k, top_p), generator)  # (B,)
        if eos_id is not None:
            next_id = next_id.masked_fill(finished, pad_id)
            finished |= next_id == eos_id
        seq = torch.cat([seq, next_id[:, None]], dim=1)  # (B, t + 1)
        step_input = next_id[:, None]  # (B, 1): only the newest token goes in next time
        if eos_id is not None and bool(finished.all()):
            break
    new = seq[:, T0:]
    if return_cache:
        assert cache is not None
        return new, cache
    return new
