"""The decoder-only (GPT-style) Transformer and its generation, built in Chapter 8.

One causal stack, no encoder and no cross-attention: every block is Chapter 5's
``EncoderBlock`` (self-attention + FFN, pre-LN or post-LN) run under a causal mask, so token
t sees tokens 0..t only. Attention, LayerNorm, the positional encodings and the KV cache are
the earlier chapters' pieces, imported, not copied.

API (reads bottom-up in this file):

- ``DecoderOnlyConfig(vocab_size, d_model=64, n_heads=4, d_ff=256, n_layers=4, dropout=0.0,
  max_len=128, positional="sinusoidal", norm_first=True, tie_embeddings=True)``;
  ``positional`` is one of ``POSITIONAL_SCHEMES``: "sinusoidal" (fixed table, Chapter 2),
  "learned" (a trainable table, initialised N(0, 1) like the scaled embeddings), "none" (NoPE:
  no positional information is added; the causal mask alone lets the model infer positions).
- ``DecoderOnly(config, pe=None)``: ``pe`` optionally replaces the scheme by any module with
  ``forward(x (B, T, d_model), offset: int) -> x with positions added``.
  ``model(tokens (B, T)) -> logits (B, T, V)``; ``model(tokens, return_attention=True)`` ->
  (logits, [weights (B, h, T, T) per layer]); ``model(new_tokens, cache=model.new_cache())``
  feeds only new tokens and reuses the cached keys/values (same logits as a full recompute).
  Right-padded batches need no padding mask: under the causal mask a real token never sees
  the padding that follows it (exclude padded targets from the loss instead).
- ``generate(model, prompt (B, T0), max_new_tokens, temperature=1.0, top_k=None, top_p=None,
  generator=None, use_cache=True, eos_id=None, pad_id=0)`` -> new ids (B, <= max_new_tokens);
  ``temperature=0`` is greedy decoding.
- ``top_k_filter``, ``top_p_filter``, ``filter_logits``, ``sample_next``: the sampling pieces.
- ``to_torch_encoder(model)``: an ``nn.TransformerEncoder`` holding a copy of the blocks, the
  independent reference the tests compare with (feed it ``model.embed(tokens)`` and a causal mask).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .masks import causal_mask
from .model import EncoderBlock, KVCache, copy_encoder_block_weights, copy_norm_weights
from .norm import LayerNorm
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding
from .validate import check_finite, check_positive_int, check_rank, check_tensor

POSITIONAL_SCHEMES = ("sinusoidal", "learned", "none")


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
    positional: str = "sinusoidal"  # "sinusoidal", "learned" or "none" (NoPE)
    norm_first: bool = True  # pre-LN (GPT-2 onwards) with a final LayerNorm; False: post-LN as in the paper
    tie_embeddings: bool = True  # the output projection reuses the token embedding matrix

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name)))  # NumPy ints -> int
        if self.d_model % self.n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model={self.d_model} and n_heads={self.n_heads}"
            )
        if self.positional not in POSITIONAL_SCHEMES:
            raise ValueError(f"positional must be one of {POSITIONAL_SCHEMES}, got {self.positional!r}")
        if self.positional == "sinusoidal" and self.d_model % 2 != 0:
            raise ValueError(f"d_model must be even for sinusoidal positional encoding, got {self.d_model}")
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)) or not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be a float in [0, 1), got {self.dropout!r}")


class NoPositionalEncoding(nn.Module):
    """NoPE: adds nothing; order reaches the model only through the causal mask. Chapter 8."""

    def __init__(self, max_len: int):
        super().__init__()
        self.max_len = check_positive_int("max_len", max_len)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, T, d_model) -> x unchanged (positions beyond max_len are refused, like the other schemes)."""
        if offset + x.shape[1] > self.max_len:
            raise ValueError(f"sequence of length {x.shape[1]} (offset {offset}) exceeds max_len={self.max_len}")
        return x


def positional_module(scheme: str, d_model: int, max_len: int) -> nn.Module:
    """The module that adds positions for ``scheme`` in POSITIONAL_SCHEMES. Chapter 8."""
    if scheme == "sinusoidal":
        return SinusoidalPositionalEncoding(d_model, max_len)
    if scheme == "learned":
        # std 1: the same scale as sqrt(d_model) * token embedding and as the sinusoidal table; with
        # Chapter 2's default 0.02 the positions start as 2 % of the signal and attention by position
        # (a previous-token head) is slow to learn
        return LearnedPositionalEncoding(max_len, d_model, std=1.0)
    if scheme == "none":
        return NoPositionalEncoding(max_len)
    raise ValueError(f"scheme must be one of {POSITIONAL_SCHEMES}, got {scheme!r}")


class DecoderOnly(nn.Module):
    """A GPT-style decoder-only Transformer: embed + positions, N causal blocks, tied output projection. Chapter 8."""

    def __init__(self, config: DecoderOnlyConfig, pe: nn.Module | None = None):
        super().__init__()
        if not isinstance(config, DecoderOnlyConfig):
            raise TypeError(f"config must be a DecoderOnlyConfig, got {type(config).__name__}")
        if pe is not None and not isinstance(pe, nn.Module):
            raise TypeError(f"pe must be an nn.Module with forward(x, offset), got {type(pe).__name__}")
        self.config = c = config
        self.embedding = nn.Embedding(c.vocab_size, c.d_model)
        self.pe = pe if pe is not None else positional_module(c.positional, c.d_model, c.max_len)
        self.dropout = nn.Dropout(c.dropout)
        self.layers = nn.ModuleList(
            EncoderBlock(c.d_model, c.n_heads, c.d_ff, c.dropout, c.norm_first) for _ in range(c.n_layers)
        )
        # a pre-LN stack ends with a LayerNorm (the residual stream is never normalised otherwise)
        self.final_norm: nn.Module = LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.output_projection = nn.Linear(c.d_model, c.vocab_size)  # d_model -> V logits
        self._reset_parameters()
        if c.tie_embeddings:
            self.output_projection.weight = self.embedding.weight  # one (V, d_model) matrix, two uses

    def _reset_parameters(self) -> None:
        # as Chapter 5's Transformer: Xavier-uniform matrices, embeddings N(0, 1/d_model) so that
        # sqrt(d_model) * embedding has unit scale; a learned position table keeps its own init
        for name, p in self.named_parameters():
            if p.dim() > 1 and not name.startswith("pe."):
                nn.init.xavier_uniform_(p)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=self.config.d_model**-0.5)

    def new_cache(self) -> KVCache:
        """An empty KVCache with one slot per block, for incremental generation. Chapter 8."""
        return KVCache(self.config.n_layers)

    def embed(self, tokens: Tensor, offset: int = 0) -> Tensor:
        """tokens (B, T) -> sqrt(d_model) * embedding + positions offset..offset+T-1, then dropout. Chapter 8."""
        check_rank("tokens", tokens, 2, "(B, T) of token ids")
        if tokens.dtype != torch.long:
            raise TypeError(f"tokens must hold token ids as torch.long, got dtype {tokens.dtype}")
        if tokens.shape[1] == 0:
            raise ValueError(f"tokens must hold at least one token, got shape {tuple(tokens.shape)}")
        if offset + tokens.shape[1] > self.config.max_len:
            raise ValueError(
                f"tokens has length {tokens.shape[1]}" + (f" after {offset} cached tokens" if offset else "")
                + f", beyond max_len={self.config.max_len} (the context window)"
            )
        V = self.config.vocab_size
        if tokens.min() < 0 or tokens.max() >= V:
            raise ValueError(
                f"tokens holds ids outside [0, {V}), got min {int(tokens.min())} and max {int(tokens.max())}"
            )
        x = self.embedding(tokens) * math.sqrt(self.config.d_model)  # (B, T, d_model)
        return self.dropout(self.pe(x, offset=offset))

    def forward(
        self, tokens: Tensor, cache: KVCache | None = None, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """tokens (B, T) -> logits (B, T, V) for the next token at every position [, weights per layer]. Chapter 8.

        With a KVCache, ``tokens`` holds only the new tokens: their positions continue from
        ``cache.length``, the cache grows, and the logits equal a full recompute's last rows.
        """
        offset = 0
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise TypeError(f"cache must be a KVCache (model.new_cache()), got {type(cache).__name__}")
            if cache.n_layers != self.config.n_layers:
                raise ValueError(f"cache must have one slot per layer ({self.config.n_layers}), got {cache.n_layers}")
            offset = cache.length
        x = self.embed(tokens, offset)  # (B, T, d_model)
        B, T = tokens.shape
        L = offset + T  # keys: the cached tokens and the new ones
        if offset == 0:
            mask = causal_mask(T, tokens.device)  # (1, 1, T, T)
        else:
            if cache is not None and cache.key_keep is not None and cache.key_keep.shape[0] != B:
                raise ValueError(f"cache holds a batch of {cache.key_keep.shape[0]}, got tokens with batch {B}")
            # new query i sits at position offset + i and may see keys 0..offset + i
            mask = causal_mask(L, tokens.device)[:, :, offset:]  # (1, 1, T, L)
        weights: list[Tensor] = []
        for layer, block in enumerate(self.layers):
            x, w = block(x, mask, need_weights=return_attention, cache=cache, layer=layer)
            if w is not None:
                weights.append(w)  # (B, h, T, L)
        if cache is not None:
            new_keep = torch.ones(B, T, dtype=torch.bool, device=tokens.device)
            cache.key_keep = new_keep if cache.key_keep is None else torch.cat([cache.key_keep, new_keep], dim=1)
        logits = self.output_projection(self.final_norm(x))  # (B, T, V)
        return (logits, weights) if return_attention else logits


# ---------------------------------------------------------------- sampling pieces
def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """Keep the k largest logits of each row (..., V), set the others to -inf. Chapter 8.

    Ties with the k-th largest value are all kept.
    """
    check_tensor("logits", logits)
    check_finite("logits", logits, "a NaN logit cannot be ranked", allow_neg_inf=True)
    check_positive_int("k", k)
    if k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest value
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """Nucleus filter: keep the smallest set of most likely tokens whose probability sums to >= p. Chapter 8.

    logits (..., V) -> same shape with the others at -inf; the most likely token is always kept.
    """
    check_tensor("logits", logits)
    check_finite("logits", logits, "a NaN logit cannot be ranked", allow_neg_inf=True)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
        raise ValueError(f"p must be a number in (0, 1], got {p!r}")
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)  # (..., V)
    probs = torch.softmax(sorted_logits, dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above each one
    drop_sorted = mass_before >= p  # the set already reached p without this token
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def filter_logits(
    logits: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Tensor:
    """logits / temperature, then top-k, then top-p filtering (each optional). Chapter 8."""
    check_tensor("logits", logits)
    check_finite("logits", logits, "a NaN logit cannot be ranked or sampled", allow_neg_inf=True)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or temperature <= 0:
        raise ValueError(f"temperature must be a positive number (0 = greedy in generate), got {temperature!r}")
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


def sample_next(logits: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """One id per row of logits (B, V), drawn from softmax(logits) by inverting the CDF. Chapter 8.

    One uniform number per row from ``generator`` picks the first token whose cumulative
    probability exceeds it, so a seeded generator gives the same tokens on any CPU (up to ties
    at float precision), unlike kernels whose random stream depends on vectorisation.
    """
    check_rank("logits", logits, 2, "(B, V)")
    check_finite("logits", logits, "NaN logits would sample the last token silently", allow_neg_inf=True)
    probs = torch.softmax(logits.double(), dim=-1)  # (B, V), double: a stable cumulative sum
    cdf = probs.cumsum(dim=-1)  # (B, V)
    u = torch.rand(logits.shape[0], 1, generator=generator, dtype=torch.float64) * cdf[:, -1:]  # (B, 1)
    ids = (cdf <= u).sum(dim=-1)  # (B,): number of tokens whose cumulative mass is still <= u
    return ids.clamp(max=logits.shape[-1] - 1)


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
) -> Tensor:
    """Continue ``prompt`` (B, T0) by up to ``max_new_tokens`` tokens; returns the new ids (B, n). Chapter 8.

    temperature=0: greedy (argmax); otherwise sample from the filtered softmax. With
    ``use_cache`` the prompt is fed once and then one token per step (KV cache); without it the
    whole sequence is recomputed every step; both give the same tokens. After a row emits
    ``eos_id`` it gets ``pad_id``; generation stops early when every row has finished.
    """
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a DecoderOnly, got {type(model).__name__}")
    check_rank("prompt", prompt, 2, "(B, T0) of token ids")
    check_positive_int("max_new_tokens", max_new_tokens)
    if prompt.shape[1] + max_new_tokens > model.config.max_len:
        raise ValueError(
            f"prompt length {prompt.shape[1]} + max_new_tokens {max_new_tokens} exceeds the context window "
            f"max_len={model.config.max_len}"
        )
    greedy = temperature == 0
    if not greedy:
        filter_logits(prompt.new_zeros(1, 2, dtype=torch.float), temperature, top_k, top_p)  # validate early
    model.eval()
    B = prompt.shape[0]
    seq = prompt
    finished = torch.zeros(B, dtype=torch.bool, device=prompt.device)
    cache = model.new_cache() if use_cache else None
    step_input = prompt
    for _ in range(max_new_tokens):
        logits = model(step_input if use_cache else seq, cache=cache)[:, -1]  # (B, V): next-token logits
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
    return seq[:, prompt.shape[1]:]


# ---------------------------------------------------------------- the independent reference
def to_torch_encoder(model: DecoderOnly) -> nn.TransformerEncoder:
    """An nn.TransformerEncoder (batch_first) holding a copy of ``model``'s blocks and final norm. Chapter 8.

    Run it on ``model.embed(tokens)`` with a causal mask and apply ``model.output_projection``:
    the logits equal ``model(tokens)``.
    """
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a DecoderOnly, got {type(model).__name__}")
    c = model.config
    with warnings.catch_warnings():  # pre-LN disables PyTorch's nested-tensor fast path, with a warning
        warnings.simplefilter("ignore", UserWarning)
        layer = nn.TransformerEncoderLayer(
            c.d_model, c.n_heads, c.d_ff, dropout=c.dropout, batch_first=True, norm_first=c.norm_first
        )
        ref = nn.TransformerEncoder(
            layer, c.n_layers, norm=nn.LayerNorm(c.d_model) if c.norm_first else None, enable_nested_tensor=False
        )
    with torch.no_grad():
        for mine, theirs in zip(model.layers, ref.layers, strict=True):
            copy_encoder_block_weights(mine, theirs)
        if c.norm_first:
            copy_norm_weights(model.final_norm, ref.norm)
    return ref.train(model.training)
