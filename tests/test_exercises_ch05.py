"""Tests for the Chapter 5 checkers: pass the reference, fail known mistakes with the right hint, stubs."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.exercises.ch05_transformer import (
    check_decoder_block,
    check_embed,
    check_ffn,
)


# ----- 5.1 FFN ---------------------------------------------------------------------------------
def make_ffn(act=torch.relu, bias=True, relu_after=False, dropout_on=True, swap=False):
    class FFN(nn.Module):
        def __init__(self, d_model, d_ff, dropout=0.1):
            super().__init__()
            self.linear1 = nn.Linear(d_model, d_model if swap else d_ff, bias=bias)
            self.linear2 = nn.Linear(d_model if swap else d_ff, d_model, bias=bias)
            self.dropout = nn.Dropout(dropout if dropout_on else 0.0)

        def forward(self, x):
            y = self.linear2(self.dropout(act(self.linear1(x))))
            return torch.relu(y) if relu_after else y

    return FFN


def test_ffn_reference_passes(capsys):
    assert check_ffn(make_ffn()).passed
    assert "all checks passed" in capsys.readouterr().out


@pytest.mark.parametrize(("cls", "hint"), [
    (make_ffn(act=lambda x: x), "forget the ReLU"),
    (make_ffn(relu_after=True), "not after the second one"),
    (make_ffn(act=F.gelu), "not GELU"),
    (make_ffn(act=torch.tanh), "not tanh"),
    (make_ffn(bias=False), "no biases"),
    (make_ffn(swap=True), "two nn.Linear layers"),
    (make_ffn(dropout_on=False), "should apply dropout"),
])
def test_ffn_checker_names_mistake(cls, hint):
    result = check_ffn(cls)
    assert not result.passed and hint in result.message, result.message


# ----- 5.3 decoder block ------------------------------------------------------------------------------
def block_ok(block, x, memory, tgt_mask, src_mask):
    x = block.norm1(x + block.self_attn(x, mask=tgt_mask)[0])
    x = block.norm2(x + block.cross_attn(x, memory, memory, mask=src_mask)[0])
    return block.norm3(x + block.ffn(x))


def block_kv_from_decoder(block, x, memory, tgt_mask, src_mask):
    x = block.norm1(x + block.self_attn(x, mask=tgt_mask)[0])
    x = block.norm2(x + block.cross_attn(x, x, x, mask=tgt_mask)[0])
    return block.norm3(x + block.ffn(x))


def block_q_from_memory(block, x, memory, tgt_mask, src_mask):
    x = block.norm1(x + block.self_attn(x, mask=tgt_mask)[0])
    x = block.norm2(memory + block.cross_attn(memory, x, x)[0])
    return block.norm3(x + block.ffn(x))


def block_no_causal(block, x, memory, tgt_mask, src_mask):
    return block_ok(block, x, memory, None, src_mask)


def block_no_src_mask(block, x, memory, tgt_mask, src_mask):
    return block_ok(block, x, memory, tgt_mask, None)


def block_no_residual(block, x, memory, tgt_mask, src_mask):
    x = block.norm1(x + block.self_attn(x, mask=tgt_mask)[0])
    x = block.norm2(block.cross_attn(x, memory, memory, mask=src_mask)[0])
    return block.norm3(x + block.ffn(x))


def block_pre_ln(block, x, memory, tgt_mask, src_mask):
    x = x + block.self_attn(block.norm1(x), mask=tgt_mask)[0]
    x = x + block.cross_attn(block.norm2(x), memory, memory, mask=src_mask)[0]
    return x + block.ffn(block.norm3(x))


def test_decoder_reference_passes():
    assert check_decoder_block(block_ok).passed
    assert check_decoder_block(lambda *a: (block_ok(*a), None)).passed  # a (x, weights) tuple is fine


@pytest.mark.parametrize(("fn", "hint"), [
    (block_kv_from_decoder, "K and V must come from the encoder output"),
    (block_q_from_memory, "queries of cross-attention come from the decoder"),
    (block_no_causal, "causal tgt_mask"),
    (block_no_src_mask, "needs src_mask"),
    (block_no_residual, "residual around cross-attention"),
    (block_pre_ln, "you wrote pre-LN"),
])
def test_decoder_checker_names_mistake(fn, hint):
    result = check_decoder_block(fn)
    assert not result.passed and hint in result.message, result.message


# ----- 5.4 embeddings ------------------------------------------------------------------------------------
def embed_ok(tokens, embedding, pe):
    return embedding(tokens) * math.sqrt(embedding.embedding_dim) + pe[: tokens.shape[1]]


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda t, e, pe: e(t) + pe[: t.shape[1]], "Multiply the embeddings by sqrt(d_model)"),
    (lambda t, e, pe: e(t) * e.embedding_dim + pe[: t.shape[1]], "not by d_model"),
    (lambda t, e, pe: e(t) / math.sqrt(e.embedding_dim) + pe[: t.shape[1]], "multiplied by sqrt"),
    (lambda t, e, pe: (e(t) + pe[: t.shape[1]]) * math.sqrt(e.embedding_dim), "then add PE"),
    (lambda t, e, pe: e(t) * math.sqrt(e.embedding_dim) + pe[:4], "raised RuntimeError"),
])
def test_embed_checker_names_mistake(fn, hint):
    result = check_embed(fn)
    assert not result.passed and hint in result.message, result.message


def test_embed_reference_passes():
    assert check_embed(embed_ok).passed
