"""Copying our modules' weights into PyTorch's own ``torch.nn`` layers, to check both compute the same. Chapter 5.

Chapter 5 checks the from-scratch Transformer against ``torch.nn.Transformer`` (and Chapter 8
its decoder-only model against ``nn.TransformerEncoder``): copy the weights across, feed both
the same input, compare the outputs. These helpers are that copying; they teach nothing about
the model itself, so they live apart from :mod:`course_utils.model`, which re-exports them.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .attention import MultiHeadAttention
from .norm import LayerNorm

if TYPE_CHECKING:
    from .gpt import DecoderOnly
    from .model import EncoderBlock, PositionwiseFeedForward, Transformer


def copy_mha_weights(mine: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """Copy W_Q, W_K, W_V, W_O into an nn.MultiheadAttention (inside torch.no_grad()). Chapter 5."""
    if not isinstance(theirs, nn.MultiheadAttention) or theirs.embed_dim != mine.d_model:
        raise ValueError(
            f"theirs must be an nn.MultiheadAttention with embed_dim d_model={mine.d_model}, "
            f"got a {type(theirs).__name__} with embed_dim {getattr(theirs, 'embed_dim', None)}"
        )
    # PyTorch stacks W_Q, W_K, W_V into one (3 d_model, d_model) in_proj matrix
    theirs.in_proj_weight.copy_(torch.cat([mine.W_Q.weight, mine.W_K.weight, mine.W_V.weight]))
    theirs.in_proj_bias.copy_(torch.cat([mine.W_Q.bias, mine.W_K.bias, mine.W_V.bias]))
    theirs.out_proj.weight.copy_(mine.W_O.weight)
    theirs.out_proj.bias.copy_(mine.W_O.bias)


def copy_norm_weights(mine: nn.Module, theirs: nn.LayerNorm) -> None:
    """Copy gamma and beta of our LayerNorm into an nn.LayerNorm (inside torch.no_grad()). Chapter 5."""
    if not isinstance(mine, LayerNorm):
        raise TypeError(f"mine must be a course_utils.norm.LayerNorm, got {type(mine).__name__}")
    if not isinstance(theirs, nn.LayerNorm) or tuple(theirs.weight.shape) != tuple(mine.gamma.shape):
        raise ValueError(f"theirs must be an nn.LayerNorm of size d_model={mine.gamma.shape[0]}, "
                         f"got a {type(theirs).__name__} ({' '.join(repr(theirs).split())[:60]})")
    theirs.weight.copy_(mine.gamma)
    theirs.bias.copy_(mine.beta)


def copy_ffn_weights(mine: PositionwiseFeedForward, theirs: nn.Module) -> None:
    """Copy the FFN's two linear layers into a PyTorch layer's linear1/linear2 (inside torch.no_grad()). Chapter 5."""
    if not all(isinstance(getattr(theirs, n, None), nn.Linear) for n in ("linear1", "linear2")):
        raise TypeError(
            f"theirs must have nn.Linear layers linear1 and linear2 (an nn.TransformerEncoderLayer), "
            f"got {type(theirs).__name__}"
        )
    for name in ("linear1", "linear2"):
        if getattr(theirs, name).weight.shape != getattr(mine, name).weight.shape:
            raise ValueError(f"theirs.{name} must have shape {tuple(getattr(mine, name).weight.shape)}, "
                             f"got {tuple(getattr(theirs, name).weight.shape)}")
    for name in ("linear1", "linear2"):
        getattr(theirs, name).weight.copy_(getattr(mine, name).weight)
        getattr(theirs, name).bias.copy_(getattr(mine, name).bias)


def copy_encoder_block_weights(mine: EncoderBlock, theirs: nn.TransformerEncoderLayer) -> None:
    """Copy an EncoderBlock into an nn.TransformerEncoderLayer (inside torch.no_grad()). Chapter 5."""
    copy_mha_weights(mine.self_attn, theirs.self_attn)
    copy_ffn_weights(mine.ffn, theirs)
    copy_norm_weights(mine.norm1, theirs.norm1)
    copy_norm_weights(mine.norm2, theirs.norm2)


def to_torch_transformer(model: Transformer) -> nn.Transformer:
    """A torch.nn.Transformer (batch_first) holding a copy of ``model``'s block weights. Chapter 5.

    Embeddings, positional encoding and the output projection stay outside: feed both the same
    embedded inputs. nn.Transformer always ends each stack with a LayerNorm; for a post-LN
    model (the paper's) those final norms are removed so both compute the same function.
    """
    from .model import Transformer  # here, not at the top: model.py re-exports this module's names

    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a course_utils.model.Transformer, got {type(model).__name__}")
    c = model.config
    with warnings.catch_warnings():  # nn.Transformer warns that pre-LN disables its nested-tensor fast path
        warnings.simplefilter("ignore", UserWarning)
        ref = nn.Transformer(
            c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff, dropout=c.dropout,
            batch_first=True, norm_first=c.norm_first,
        )

    mha, norm, ffn = copy_mha_weights, copy_norm_weights, copy_ffn_weights
    blocks: Any = model  # its layers are our block classes (nn.ModuleList types them as nn.Module)
    with torch.no_grad():
        for a, b in zip(blocks.encoder_layers, ref.encoder.layers, strict=True):
            copy_encoder_block_weights(a, b)
        for a, b in zip(blocks.decoder_layers, ref.decoder.layers, strict=True):
            mha(a.self_attn, b.self_attn)
            mha(a.cross_attn, b.multihead_attn)
            ffn(a.ffn, b)
            norm(a.norm1, b.norm1)
            norm(a.norm2, b.norm2)
            norm(a.norm3, b.norm3)
        if c.norm_first:
            norm(model.encoder_norm, ref.encoder.norm)
            norm(model.decoder_norm, ref.decoder.norm)
        else:
            ref.encoder.norm = None  # the paper's post-LN stack has no final LayerNorm
            ref.decoder.norm = None
    return ref.train(model.training)


def to_torch_encoder(model: DecoderOnly) -> nn.TransformerEncoder:
    """An nn.TransformerEncoder (batch_first) holding a copy of ``model``'s blocks and final norm. Chapter 8.

    Run it on ``model.embed(tokens)`` with a causal mask and apply ``model.output_projection``:
    the logits equal ``model(tokens)``.
    """
    from .gpt import DecoderOnly  # here, not at the top: gpt.py re-exports this function

    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a DecoderOnly, got {type(model).__name__}")
    c = model.config
    if c.ffn != "relu":
        raise ValueError(f"model must have the paper's ReLU FFN (config.ffn='relu'): nn.TransformerEncoderLayer has "
                         f"no gated FFN, got ffn={c.ffn!r}")
    with warnings.catch_warnings():  # pre-LN disables PyTorch's nested-tensor fast path, with a warning
        warnings.simplefilter("ignore", UserWarning)
        layer = nn.TransformerEncoderLayer(
            c.d_model, c.n_heads, c.d_ff, dropout=c.dropout, batch_first=True, norm_first=c.norm_first
        )
        ref = nn.TransformerEncoder(
            layer, c.n_layers, norm=nn.LayerNorm(c.d_model) if c.norm_first else None, enable_nested_tensor=False
        )
    blocks: Any = model  # its layers are EncoderBlocks (nn.ModuleList types them as nn.Module)
    with torch.no_grad():
        for mine, theirs in zip(blocks.layers, ref.layers, strict=True):
            copy_encoder_block_weights(mine, theirs)
        if c.norm_first:
            assert isinstance(ref.norm, nn.LayerNorm)
            copy_norm_weights(model.final_norm, ref.norm)
    return ref.train(model.training)
