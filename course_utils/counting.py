"""Counting a Transformer: parameters (closed form), FLOPs per layer, attention memory. Chapter 5.

Every count here is derived from the shapes of the modules in :mod:`course_utils.model`
and is tested against ``sum(p.numel() for p in model.parameters())``.
"""

from __future__ import annotations

import math

from .model import TransformerConfig
from .validate import check_positive_int


def mha_params(d_model: int) -> int:
    """W_Q, W_K, W_V, W_O, each a d_model x d_model matrix plus a d_model bias. Chapter 5."""
    check_positive_int("d_model", d_model)
    return 4 * (d_model * d_model + d_model)


def ffn_params(d_model: int, d_ff: int) -> int:
    """W_1 (d_model x d_ff) + b_1 (d_ff) + W_2 (d_ff x d_model) + b_2 (d_model). Chapter 5."""
    check_positive_int("d_model", d_model)
    check_positive_int("d_ff", d_ff)
    return 2 * d_model * d_ff + d_ff + d_model


def layernorm_params(d_model: int) -> int:
    """gamma and beta, d_model each. Chapter 5."""
    check_positive_int("d_model", d_model)
    return 2 * d_model


def encoder_layer_params(d_model: int, d_ff: int) -> int:
    """One encoder block: self-attention + FFN + 2 LayerNorms. Chapter 5."""
    return mha_params(d_model) + ffn_params(d_model, d_ff) + 2 * layernorm_params(d_model)


def decoder_layer_params(d_model: int, d_ff: int) -> int:
    """One decoder block: self-attention + cross-attention + FFN + 3 LayerNorms. Chapter 5."""
    return 2 * mha_params(d_model) + ffn_params(d_model, d_ff) + 3 * layernorm_params(d_model)


def parameter_breakdown(config: TransformerConfig) -> dict[str, int]:
    """Parameters of ``Transformer(config)`` by component; the values sum to the total. Chapter 5.

    final_norms is 0 for post-LN (only pre-LN stacks end with a LayerNorm); output_projection
    is the bias alone when the embeddings are tied.
    """
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
    c = config
    d = c.d_model
    if c.tie_embeddings:  # one (V, d_model) matrix serves source, target and output projection
        embeddings = c.src_vocab_size * d
        output_weight = 0
    else:
        embeddings = (c.src_vocab_size + c.tgt_vocab_size) * d
        output_weight = c.tgt_vocab_size * d
    return {
        "embeddings": embeddings,
        "encoder_layers": c.n_encoder_layers * encoder_layer_params(d, c.d_ff),
        "decoder_layers": c.n_decoder_layers * decoder_layer_params(d, c.d_ff),
        "final_norms": 2 * layernorm_params(d) if c.norm_first else 0,
        "output_projection": output_weight + c.tgt_vocab_size,  # weight (unless tied) + bias
    }


def count_parameters(config: TransformerConfig) -> int:
    """Closed-form number of parameters of ``Transformer(config)``; equals sum(p.numel()). Chapter 5."""
    return sum(parameter_breakdown(config).values())


def paper_config(size: str = "base", vocab_size: int = 37000) -> TransformerConfig:
    """The base or big configuration of Table 3 of the paper, shared vocabulary, tied embeddings. Chapter 5."""
    sizes = {"base": (512, 8, 2048), "big": (1024, 16, 4096)}
    if size not in sizes:
        raise ValueError(f"size must be 'base' or 'big', got {size!r}")
    d_model, n_heads, d_ff = sizes[size]
    check_positive_int("vocab_size", vocab_size)
    return TransformerConfig(
        src_vocab_size=vocab_size, tgt_vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, d_ff=d_ff,
        n_encoder_layers=6, n_decoder_layers=6, dropout=0.1, max_len=512, tie_embeddings=True,
    )


def flops_per_layer(T: int, d_model: int, d_ff: int) -> dict[str, int]:
    """Matmul FLOPs (2 per multiply-add) of one encoder layer on T tokens, by part. Chapter 5.

    "projections": Q, K, V, O, 4 x (T x d_model) @ (d_model x d_model) -> 8 T d_model^2;
    "attention": Q K^T and weights @ V over all heads, 2 x 2 T^2 d_model -> 4 T^2 d_model;
    "ffn": two (T x d_model) @ (d_model x d_ff) products -> 4 T d_model d_ff.
    Softmax, LayerNorm, biases and residual additions (O(T^2 h) and O(T d_model)) are left out.
    """
    for name, value in (("T", T), ("d_model", d_model), ("d_ff", d_ff)):
        check_positive_int(name, value)
    return {
        "projections": 8 * T * d_model * d_model,
        "attention": 4 * T * T * d_model,
        "ffn": 4 * T * d_model * d_ff,
    }


def attention_crossover_T(d_model: int, d_ff: int, against: str = "ffn") -> int:
    """Smallest T where the O(T^2) attention FLOPs exceed the FFN's (or FFN + projections). Chapter 5.

    4 T^2 d > 4 T d d_ff  <=>  T > d_ff;   4 T^2 d > 4 T d d_ff + 8 T d^2  <=>  T > d_ff + 2 d.
    """
    check_positive_int("d_model", d_model)
    check_positive_int("d_ff", d_ff)
    if against not in ("ffn", "ffn+projections"):
        raise ValueError(f"against must be 'ffn' or 'ffn+projections', got {against!r}")
    bound = d_ff if against == "ffn" else d_ff + 2 * d_model
    return math.floor(bound) + 1


def attention_memory_bytes(T: int, n_heads: int, batch_size: int = 1, bytes_per_element: int = 4) -> int:
    """Bytes of one layer's attention weights (B, h, T, T), float32 by default. Chapter 5."""
    for name, value in (("T", T), ("n_heads", n_heads), ("batch_size", batch_size),
                        ("bytes_per_element", bytes_per_element)):
        check_positive_int(name, value)
    return batch_size * n_heads * T * T * bytes_per_element
