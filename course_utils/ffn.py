"""What the position-wise feed-forward network does: GELU, gated FFNs (GeGLU beside SwiGLU) and
the FFN read as a key-value memory (Geva et al., 2021). Chapter 5."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .model import PositionwiseFeedForward
from .validate import (
    check_bool,
    check_choice,
    check_float_tensor,
    check_int,
    check_module,
    check_positive_int,
    check_rank,
)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU(x) = x * Phi(x), Phi the standard normal CDF ("none"), or its tanh approximation ("tanh"). Chapter 5."""
    check_float_tensor("x", x)
    check_choice("approximate", approximate, ("none", "tanh"))
    if approximate == "tanh":  # Hendrycks and Gimpel (2016), eq. in section 2
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def swiglu_hidden(d_ff: int) -> int:
    """Hidden width of a SwiGLU FFN with the parameters of a ReLU FFN of width d_ff: round(2 d_ff / 3). Chapter 11."""
    return round(2 * check_positive_int("d_ff", d_ff) / 3)


class SwiGLU(nn.Module):
    """FFN_SwiGLU(x) = (Swish(x W) * x V) W_2 (Shazeer 2020): three matrices, a gated hidden layer. Chapter 11."""

    def __init__(self, d_model: int, d_hidden: int, bias: bool = False):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_hidden", d_hidden)
        check_bool("bias", bias)
        self.W = nn.Linear(d_model, d_hidden, bias=bias)  # gate
        self.V = nn.Linear(d_model, d_hidden, bias=bias)  # value
        self.W_2 = nn.Linear(d_hidden, d_model, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., d_model) -> (..., d_model)."""
        d_model = self.W.in_features
        if check_float_tensor("x", x).dim() == 0 or x.shape[-1] != d_model:
            raise ValueError(f"x must have last dimension d_model={d_model}, got shape {tuple(x.shape)}")
        return self.W_2(F.silu(self.W(x)) * self.V(x))  # (..., d_hidden) -> (..., d_model)


class GELUFeedForward(PositionwiseFeedForward):
    """The paper's FFN with GELU in place of ReLU (BERT, GPT-2): same two matrices, same parameters. Chapter 5."""

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., d_model) -> (..., d_model)."""
        check_float_tensor("x", x)
        return self.linear2(self.dropout(gelu(self.linear1(x))))  # (..., d_ff) -> (..., d_model)


class GeGLU(SwiGLU):
    """FFN_GEGLU(x) = (GELU(x W) * x V) W_2 (Shazeer 2020): SwiGLU with GELU as the gate. Chapter 5."""

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., d_model) -> (..., d_model)."""
        return self.W_2(gelu(self.W(x)) * self.V(x))  # (..., d_hidden) -> (..., d_model)


FFN_ACTIVATIONS: dict[str, type[PositionwiseFeedForward] | type[SwiGLU]] = {
    "relu": PositionwiseFeedForward, "gelu": GELUFeedForward, "swiglu": SwiGLU, "geglu": GeGLU}


def swap_ffn_activation(model: nn.Module, activation: str) -> nn.Module:
    """Give every FFN of ``model`` the activation ``activation``, keeping its weights. Chapter 5.

    "relu" <-> "gelu" for two-matrix FFNs, "swiglu" <-> "geglu" for gated ones: the parameters (and
    their initial values) stay the same, only the non-linearity changes. Works in place; returns model.
    """
    check_module("model", model)
    check_choice("activation", activation, tuple(FFN_ACTIVATIONS))
    gated = activation in ("swiglu", "geglu")
    found = 0
    for module in model.modules():
        ffn = getattr(module, "ffn", None)
        if not isinstance(ffn, (PositionwiseFeedForward, SwiGLU)):
            continue
        if isinstance(ffn, SwiGLU) != gated:
            raise ValueError(f"activation {activation!r} needs a {'gated' if gated else 'two-matrix'} FFN, "
                             f"got a {type(ffn).__name__}")
        ffn.__class__ = FFN_ACTIVATIONS[activation]  # same parameters and buffers, another forward
        found += 1
    if not found:
        raise ValueError("model must hold at least one FFN (a sub-module attribute `ffn`), found none")
    return model


# ---------------------------------------------------------------- the FFN as a key-value memory
def _ffn_of(model: nn.Module, layer: int) -> PositionwiseFeedForward | SwiGLU:
    layers = getattr(model, "layers", None)
    if not isinstance(layers, nn.ModuleList):
        raise TypeError(f"model must have a ModuleList `layers` of blocks, got {type(model).__name__}")
    layer = check_int("layer", layer, low=0, high=len(layers) - 1)
    ffn = getattr(layers[layer], "ffn", None)
    if not isinstance(ffn, (PositionwiseFeedForward, SwiGLU)):
        raise TypeError(f"layer {layer} must have an `ffn` (PositionwiseFeedForward or SwiGLU), "
                        f"got {type(ffn).__name__}")
    return ffn


def _out_linear(ffn: PositionwiseFeedForward | SwiGLU) -> nn.Linear:
    return ffn.linear2 if isinstance(ffn, PositionwiseFeedForward) else ffn.W_2


@torch.no_grad()
def ffn_memory_coefficients(model: nn.Module, tokens: Tensor, layer: int) -> Tensor:
    """The hidden activations m (B, T, d_ff) of layer ``layer``'s FFN on ``tokens`` (B, T). Chapter 5.

    FFN(x) = sum_i m_i v_i + b_2: m_i is how strongly unit i's key matches x, v_i (column i of
    W_2) the value it then adds to the residual stream (Geva et al., 2021).
    """
    check_rank("tokens", tokens, 2, "(B, T) of token ids")
    ffn = _ffn_of(model, layer)
    seen: list[Tensor] = []
    handle = _out_linear(ffn).register_forward_pre_hook(lambda mod, args: seen.append(args[0].detach()))
    try:
        was_training = model.training
        model.eval()
        model(tokens)
        model.train(was_training)
    finally:
        handle.remove()
    return seen[0]  # (B, T, d_ff)


@torch.no_grad()
def top_contexts(model: nn.Module, ids: Tensor, layer: int, unit: int, k: int = 5, block_size: int = 128,
                 max_windows: int = 64) -> list[tuple[int, float]]:
    """The k positions of ``ids`` (N,) where FFN unit ``unit`` of ``layer`` fires most: (position, m). Chapter 5.

    The text is cut into consecutive windows of ``block_size`` (at most ``max_windows``); each
    position's activation is read with the context of its own window, as in training.
    """
    check_rank("ids", ids, 1, "(N,) token ids")
    check_positive_int("k", k)
    check_positive_int("block_size", block_size)
    check_positive_int("max_windows", max_windows)
    d_ff = _out_linear(_ffn_of(model, layer)).in_features
    unit = check_int("unit", unit, low=0, high=d_ff - 1)
    n = min(max_windows, len(ids) // block_size)
    if n < 1:
        raise ValueError(f"ids must hold at least one window of block_size={block_size}, got {len(ids)} ids")
    windows = ids[: n * block_size].view(n, block_size)  # (n, block_size)
    m = ffn_memory_coefficients(model, windows, layer)[..., unit].reshape(-1)  # (n * block_size,)
    values, positions = m.topk(min(k, m.numel()))
    return [(int(p), float(v)) for p, v in zip(positions, values, strict=True)]


@torch.no_grad()
def value_logits(model: nn.Module, layer: int, unit: int) -> Tensor:
    """What unit ``unit``'s value vector v_i alone adds to the next-token logits: E v_i (V,). Chapter 5.

    E is the output projection's weight (V, d_model); the final norm is left out (Geva et al.
    read value vectors the same way), so only the ranking of tokens is meaningful.
    """
    out = _out_linear(_ffn_of(model, layer))
    unit = check_int("unit", unit, low=0, high=out.in_features - 1)
    projection = getattr(model, "output_projection", None)
    if not isinstance(projection, nn.Linear):
        raise TypeError(f"model must have a Linear `output_projection`, got {type(projection).__name__}")
    v = out.weight[:, unit]  # (d_model,): column i of W_2
    return projection.weight @ v  # (V, d_model) @ (d_model,) -> (V,)


def ffn_as_memory(ffn: PositionwiseFeedForward, x: Tensor) -> tuple[Tensor, Tensor]:
    """(m (..., d_ff), values (d_ff, d_model)) with m @ values + b_2 = ffn(x): keys, coefficients, values. Chapter 5."""
    if not isinstance(ffn, PositionwiseFeedForward):
        raise TypeError(f"ffn must be a PositionwiseFeedForward, got {type(ffn).__name__}")
    check_float_tensor("x", x)
    hidden = ffn.linear1(x)  # (..., d_ff): x . k_i + b_1[i] for every key k_i (row i of W_1)
    m = F.gelu(hidden) if isinstance(ffn, GELUFeedForward) else torch.relu(hidden)
    return m, ffn.linear2.weight.T  # (..., d_ff), (d_ff, d_model): row i is v_i
