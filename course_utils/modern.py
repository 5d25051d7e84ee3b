"""The modern decoder block next to the 2017 one: pre-norm RMSNorm, SwiGLU, RoPE, grouped-query
attention, no biases, each a switch of one character language model; two ways around the T x T
matrix (a sliding window, linear attention) and gradient checkpointing as further switches;
converting a trained multi-head model to grouped-query attention by mean-pooling heads. Chapter 11.

``ModernLMConfig`` with every switch at its 2017 value (post-LN here is ``norm_first=False``;
the course's Chapter 8 character LM is pre-LN) builds the same network as Chapter 8's
``DecoderOnly`` with the same state-dict keys, so the shipped character LM loads into it with
``norm_first=True``. This module holds no recipe and seeds nothing: the recipes, the training
runs and the shipped tables live in ``course_utils.runs.modern``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from .attention import MultiHeadAttention
from .charlm import model_bits_per_char
from .ffn import SwiGLU, swiglu_hidden  # noqa: F401  (defined with the other FFNs; Chapter 11 imports them from here)
from .flash import linear_attention
from .gpt import DecoderOnly
from .masks import causal_mask
from .model import PositionwiseFeedForward, init_weights
from .norm import LayerNorm
from .positional import SinusoidalPositionalEncoding, apply_rope, rope_tables
from .sliding_window import sliding_window_mask
from .validate import (
    check_bool,
    check_callable,
    check_choice,
    check_float_tensor,
    check_int,
    check_model_tokens,
    check_module,
    check_number,
    check_positive_int,
)


@dataclass
class ModernLMConfig:
    """Sizes and switches of a decoder-only character LM, 2017 values by default. Chapter 11."""

    vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256  # ReLU FFN width; SwiGLU gets swiglu_hidden(d_ff) for the same parameter count
    n_layers: int = 2
    max_len: int = 64
    n_kv_heads: int | None = None  # None = n_heads (MHA); 1 = MQA; in between = GQA
    norm_first: bool = False  # False: post-LN as in the paper; True: pre-norm with a final norm
    norm: str = "layernorm"  # "layernorm" or "rmsnorm"
    ffn: str = "relu"  # "relu" (the paper's FFN) or "swiglu"
    positional: str = "sinusoidal"  # "sinusoidal" (added to the input) or "rope" (rotates q and k)
    bias: bool = True  # biases in every linear layer (False: none, as in Llama)
    attention: str = "softmax"  # "softmax" or "linear" (Katharopoulos et al. 2020: phi(q) . phi(k), O(T))
    window: int | None = None  # None: full causal attention; w: each token sees itself and w - 1 before
    checkpoint: bool = False  # gradient checkpointing: keep only block inputs, recompute the rest in backward

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            check_positive_int(name, getattr(self, name))
        for name in ("norm_first", "bias", "checkpoint"):
            check_bool(name, getattr(self, name))
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"d_model must be divisible by n_heads, got {self.d_model} and {self.n_heads}")
        if self.n_kv_heads is not None:
            check_positive_int("n_kv_heads", self.n_kv_heads)
            if self.n_heads % self.n_kv_heads:
                raise ValueError(f"n_kv_heads must divide n_heads={self.n_heads}, got {self.n_kv_heads}")
        check_choice("norm", self.norm, ("layernorm", "rmsnorm"))
        check_choice("ffn", self.ffn, ("relu", "swiglu"))
        check_choice("positional", self.positional, ("sinusoidal", "rope"))
        check_choice("attention", self.attention, ("softmax", "linear"))
        if self.window is not None:
            check_positive_int("window", self.window)
            if self.attention == "linear":
                raise ValueError("window must be None with attention='linear' (linear attention has no T x T mask)")


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * g: LayerNorm without mean and beta (Zhang and Sennrich 2019). Chapter 11."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        check_positive_int("d_model", d_model)
        self.eps = check_number("eps", eps, 0.0, low_open=True)
        self.weight = nn.Parameter(torch.ones(d_model))  # g, one gain per feature

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., d_model) -> (..., d_model)."""
        if check_float_tensor("x", x).dim() == 0 or x.shape[-1] != self.weight.shape[0]:
            raise ValueError(f"x must have last dimension d_model={self.weight.shape[0]}, got shape {tuple(x.shape)}")
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return x / rms * self.weight


class ModernBlock(nn.Module):
    """Causal self-attention and FFN with residuals; every 2017-vs-modern choice is a switch. Chapter 11."""

    def __init__(self, c: ModernLMConfig):
        super().__init__()
        if not isinstance(c, ModernLMConfig):
            raise TypeError(f"c must be a ModernLMConfig, got {type(c).__name__}")
        self.norm_first, self.rope, self.linear = c.norm_first, c.positional == "rope", c.attention == "linear"
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, bias=c.bias, n_kv_heads=c.n_kv_heads)
        if c.ffn == "swiglu":
            self.ffn: nn.Module = SwiGLU(c.d_model, swiglu_hidden(c.d_ff), bias=c.bias)
        else:
            self.ffn = PositionwiseFeedForward(c.d_model, c.d_ff)
            if not c.bias:
                self.ffn.linear1 = nn.Linear(c.d_model, c.d_ff, bias=False)
                self.ffn.linear2 = nn.Linear(c.d_ff, c.d_model, bias=False)
        self.norm1, self.norm2 = (RMSNorm(c.d_model) if c.norm == "rmsnorm" else LayerNorm(c.d_model)
                                  for _ in range(2))

    def attention(self, x: Tensor, mask: Tensor, rope: tuple[Tensor, Tensor] | None) -> Tensor:
        """Self-attention of x (B, T, d_model) under mask, RoPE applied to queries and keys when given."""
        mha = self.self_attn
        q = mha.split_heads(mha.W_Q(x))  # (B, h, T, d_k)
        k = mha.split_heads(mha.W_K(x))  # (B, n_kv, T, d_k)
        v = mha.split_heads(mha.W_V(x))  # (B, n_kv, T, d_k)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        if self.linear:  # kernelised attention: causal by its running sums, no mask needed
            group = mha.n_heads // mha.n_kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, h, T, d_k)
            return mha.W_O(mha.merge_heads(linear_attention(q, k, v, causal=True)))  # (B, T, d_model)
        return mha.attend_heads(q, k, v, mask, need_weights=False)[0]  # (B, T, d_model)

    def forward(self, x: Tensor, mask: Tensor, rope: tuple[Tensor, Tensor] | None = None) -> Tensor:
        """x: (B, T, d_model) -> (B, T, d_model)."""
        d_model = self.self_attn.d_model
        if check_float_tensor("x", x, 3, "(B, T, d_model)").shape[-1] != d_model:
            raise ValueError(f"x must have last dimension d_model={d_model}, got shape {tuple(x.shape)}")
        if self.norm_first:  # pre-norm: x + Sublayer(Norm(x))
            x = x + self.attention(self.norm1(x), mask, rope)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.attention(x, mask, rope))  # post-LN, as in the paper
        return self.norm2(x + self.ffn(x))


class ModernLM(nn.Module):
    """A character LM built from ModernBlocks: embed (+ sinusoidal positions), N blocks, tied output. Chapter 11."""

    def __init__(self, config: ModernLMConfig):
        super().__init__()
        if not isinstance(config, ModernLMConfig):
            raise TypeError(f"config must be a ModernLMConfig, got {type(config).__name__}")
        self.config = c = config
        self.embedding = nn.Embedding(c.vocab_size, c.d_model)
        self.pe = SinusoidalPositionalEncoding(c.d_model, c.max_len) if c.positional == "sinusoidal" else None
        self.layers = nn.ModuleList(ModernBlock(c) for _ in range(c.n_layers))
        norm = RMSNorm(c.d_model) if c.norm == "rmsnorm" else LayerNorm(c.d_model)
        self.final_norm: nn.Module = norm if c.norm_first else nn.Identity()
        self.output_projection = nn.Linear(c.d_model, c.vocab_size, bias=c.bias)
        if c.positional == "rope":
            cos, sin = rope_tables(c.max_len, c.d_model // c.n_heads)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        init_weights(self, (self.embedding,), c.d_model)  # as Chapter 8: Xavier matrices, embeddings N(0, 1/d_model)
        self.output_projection.weight = self.embedding.weight  # tied, as in Chapter 8

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (B, T) -> next-token logits (B, T, V)."""
        check_model_tokens("tokens", tokens, self.config.vocab_size, self.config.max_len)
        T = tokens.shape[1]
        x = self.embedding(tokens) * math.sqrt(self.config.d_model)  # (B, T, d_model)
        if self.pe is not None:
            x = self.pe(x)
        rope = (self.rope_cos, self.rope_sin) if self.pe is None else None
        c = self.config
        mask = causal_mask(T, tokens.device) if c.window is None else sliding_window_mask(T, c.window, tokens.device)
        for block in self.layers:
            if c.checkpoint and self.training and torch.is_grad_enabled():
                x = checkpoint(block, x, mask, rope, use_reentrant=False)  # recomputed in the backward pass
            else:
                x = block(x, mask, rope)
        return self.output_projection(self.final_norm(x))  # (B, T, V)


# ---------------------------------------------------------------- MHA -> GQA by mean-pooling heads
def mean_pool_kv(mha: MultiHeadAttention, n_kv_heads: int) -> MultiHeadAttention:
    """A copy of ``mha`` with n_kv_heads K/V heads, each the mean of its group (Ainslie et al. 2023). Chapter 11.

    Group j holds the consecutive query heads j*G .. (j+1)*G - 1, G = h / n_kv_heads, which is
    how ``MultiHeadAttention`` shares a key/value head. W_Q and W_O are copied unchanged.
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha must be a MultiHeadAttention, got {type(mha).__name__}")
    if mha.n_kv_heads != mha.n_heads:
        raise ValueError(
            f"mha must be multi-head (n_kv_heads = n_heads = {mha.n_heads}), got n_kv_heads={mha.n_kv_heads}"
        )
    n_kv = check_int("n_kv_heads", n_kv_heads, low=1, high=mha.n_heads)
    if mha.n_heads % n_kv:
        raise ValueError(f"n_kv_heads must divide n_heads={mha.n_heads}, got {n_kv}")
    bias = mha.W_Q.bias is not None
    new = MultiHeadAttention(mha.d_model, mha.n_heads, mha.dropout.p, bias=bias, sdpa=mha.sdpa, n_kv_heads=n_kv)
    new = new.to(mha.W_Q.weight.dtype)
    G, d_k = mha.n_heads // n_kv, mha.d_k
    with torch.no_grad():
        for name in ("W_Q", "W_O"):
            getattr(new, name).load_state_dict(getattr(mha, name).state_dict())
        for name in ("W_K", "W_V"):
            old, dst = getattr(mha, name), getattr(new, name)
            # (h * d_k, d_model) -> (n_kv, G, d_k, d_model) -> mean over G -> (n_kv * d_k, d_model)
            dst.weight.copy_(old.weight.view(n_kv, G, d_k, -1).mean(dim=1).reshape(n_kv * d_k, -1))
            if bias:
                dst.bias.copy_(old.bias.view(n_kv, G, d_k).mean(dim=1).reshape(n_kv * d_k))  # (n_kv * d_k,)
    return new.train(mha.training)


def convert_to_gqa(model: DecoderOnly, n_kv_heads: int,
                   pool: Callable[[MultiHeadAttention, int], MultiHeadAttention] | None = None) -> DecoderOnly:
    """A copy of a decoder-only model whose every self-attention has n_kv_heads mean-pooled K/V heads. Chapter 11.

    ``pool(mha, n_kv_heads) -> MultiHeadAttention`` replaces mean_pool_kv (the exercise's version).
    """
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a DecoderOnly, got {type(model).__name__}")
    h = model.config.n_heads
    n_kv = check_int("n_kv_heads", n_kv_heads, low=1, high=h)
    if h % n_kv:
        raise ValueError(f"n_kv_heads must divide n_heads={h}, got {n_kv}")
    pool = mean_pool_kv if pool is None else check_callable("pool", pool)
    new = copy.deepcopy(model)
    for block in new.layers:
        block.self_attn = pool(block.self_attn, n_kv)  # type: ignore[arg-type]  # a MultiHeadAttention
    return new


# ---------------------------------------------------------------- scoring
def bits_per_char(model: nn.Module, val_ids: Tensor, block_size: int, max_windows: int) -> float:
    """Validation bits per character over consecutive blocks (Chapter 8's measure). Chapter 11."""
    check_module("model", model)
    return model_bits_per_char(model, val_ids, block_size, max_windows=max_windows)  # type: ignore[arg-type]
