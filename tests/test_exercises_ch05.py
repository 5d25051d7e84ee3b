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
    check_mqa_layer_params,
    check_order_experiment,
)
from course_utils.ffn import ffn_as_memory
from course_utils.model import Transformer, TransformerConfig


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


# ----- 5.2 (derive): a multi-query attention layer ---------------------------------------------------
def mqa_ok(d, h, f):
    d_k = d // h
    return 2 * (d * d + d) + 2 * (d * d_k + d_k) + 2 * d * f + f + d + 4 * d


def mqa_by_modules(d, h, f):
    """A second correct style: build the layer's pieces and count, a numpy integer answer."""
    import numpy as np

    d_k = d // h
    parts = [nn.Linear(d, d), nn.Linear(d, d_k), nn.Linear(d, d_k), nn.Linear(d, d), nn.Linear(d, f),
             nn.Linear(f, d), nn.LayerNorm(d), nn.LayerNorm(d)]
    return np.int64(sum(p.numel() for m in parts for p in m.parameters()))


@pytest.mark.parametrize("fn", [mqa_ok, mqa_by_modules])
def test_mqa_reference_passes(fn):
    assert check_mqa_layer_params(fn).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda d, h, f: 4 * (d * d + d) + 2 * d * f + f + d + 4 * d, "That is the table's encoder layer"),
    (lambda d, h, f: mqa_ok(d, h, f) - 2 * (d // h), "biases of the shared K and V"),
    (lambda d, h, f: mqa_ok(d, h, f) - (d * (d // h) + d // h), "two separate projections"),
    (lambda d, h, f: mqa_ok(d, h, f) - (d * d - (d // h) * d), "keeps its d_model x d_model weight"),
    (lambda d, h, f: mqa_ok(d, h, f) - 4 * d, "forget the two LayerNorms"),
    (lambda d, h, f: mqa_ok(d, h, f) - 2 * d, "two LayerNorms, one per sub-layer"),
    (lambda d, h, f: mqa_ok(512, 8, 2048), "differs"),
    (lambda d, h, f: float(mqa_ok(d, h, f)) + 0.5, "should return an int"),
])
def test_mqa_checker_names_mistake(fn, hint):
    result = check_mqa_layer_params(fn)
    assert not result.passed and hint in result.message, result.message


# ----- 5.5 (experiment): is the model blind to source order? -----------------------------------------
def order_ok(positional, seed, *, eval_mode=True, permute="src", dropout=0.0, signed=False):
    torch.manual_seed(seed)
    cfg = TransformerConfig(12, 12, d_model=32, n_heads=4, d_ff=64, dropout=dropout, positional=positional)
    model = Transformer(cfg)
    model.train(not eval_mode)
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, 12, (4, 7), generator=g)
    tgt = torch.randint(1, 12, (4, 5), generator=g)
    perm = torch.randperm(7, generator=g)
    with torch.no_grad():
        a = model(src, tgt)
        b = model(src[:, perm], tgt) if permute == "src" else model(src, tgt[:, perm[perm < 5]])
    return (a - b).max().item() if signed else (a - b).abs().max().item()


def order_by_hand(positional, seed):
    """A second correct style: another seed, the shuffle as a reversed source, a 0-d tensor answer."""
    torch.manual_seed(seed + 11)
    model = Transformer(TransformerConfig(12, 12, d_model=32, n_heads=4, d_ff=64, dropout=0.0,
                                          positional=positional)).eval()
    src = torch.randint(1, 12, (4, 7))
    tgt = torch.randint(1, 12, (4, 5))
    with torch.no_grad():
        return (model(src, tgt) - model(src.flip(1), tgt)).abs().amax()


def test_order_experiment_passes_reference_and_alternative(capsys):
    assert check_order_experiment("unchanged", order_ok).passed
    assert check_order_experiment(lambda: "unchanged", order_by_hand).passed
    assert "between 0 and 0.0001" in capsys.readouterr().out


def test_order_experiment_explains_a_wrong_prediction():
    result = check_order_experiment("changes", order_ok)
    assert result.passed and "bag of tokens" in result.message and "cannot tell" in result.message


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda p, s: order_ok(p, s, eval_mode=False, dropout=0.1), "model.eval()"),
    (lambda p, s: order_ok(p, s, permute="tgt"), "shuffle the source (src), not the target"),
    (lambda p, s: order_ok("sinusoidal", s), "positional='none'"),
    (lambda p, s: order_ok("none", s), "positional='sinusoidal'"),
    (lambda p, s: -order_ok(p, s) - 1, "negative"),
    (lambda p, s: 0.0 if p == "none" else 0.5, "not a number typed in"),
])
def test_order_experiment_names_mistakes(fn, hint):
    result = check_order_experiment("unchanged", fn)
    assert not result.passed and hint in result.message, result.message


def test_order_experiment_stub_and_prediction():
    def stub(*args):
        raise NotImplementedError

    assert check_order_experiment(stub, order_ok).not_implemented
    assert check_order_experiment("unchanged", stub).not_implemented
    result = check_order_experiment("same", order_ok)
    assert not result.passed and "not one of the choices" in result.message


# ---------------------------------------------------------------- 5.6 each FFN unit's vote for a direction (issue 37)
def _votes(f, x, e):
    return torch.relu(f.linear1(x)) * (e @ f.linear2.weight)


def _votes_loop(f, x, e):
    """Unit by unit: key match times the value's projection on e."""
    cols = []
    for i in range(f.linear1.out_features):
        m_i = (x @ f.linear1.weight[i] + f.linear1.bias[i]).clamp(min=0)  # (...,)
        cols.append(m_i * (f.linear2.weight[:, i] @ e))
    return torch.stack(cols, dim=-1)


def test_ffn_as_memory_passes_right_answers():
    from course_utils.exercises.ch05_ffn import check_ffn_as_memory

    assert check_ffn_as_memory(_votes).passed
    assert check_ffn_as_memory(_votes_loop).passed


@pytest.mark.parametrize(("fn", "words"), [
    (lambda f, x, e: f.linear1(x) * (e @ f.linear2.weight), "after the ReLU"),
    (lambda f, x, e: torch.relu(x @ f.linear1.weight.T) * (e @ f.linear2.weight), "b_1"),
    (lambda f, x, e: torch.relu(f.linear1(x)) * (f.linear1.weight @ e), "Those are the keys"),
    (lambda f, x, e: torch.relu(f.linear1(x)) * (f.linear2.weight @ e), "column i of linear2.weight"),
    (lambda f, x, e: torch.nn.functional.gelu(f.linear1(x)) * (e @ f.linear2.weight), "GELU"),
    (lambda f, x, e: _votes(f, x, e) + (f.linear2.bias @ e) / f.linear2.in_features, "leave b_2 out"),
    (lambda f, x, e: e @ f.linear2.weight, "weight it by m_i"),
    (lambda f, x, e: f(x) @ e, "without summing"),
    (lambda f, x, e: ffn_as_memory(f, x)[0], "calls course_utils"),
    (lambda f, x, e: _votes(f, x.mul_(2), e), "in place"),
])
def test_ffn_as_memory_names_mistakes(fn, words):
    from course_utils.exercises.ch05_ffn import check_ffn_as_memory

    result = check_ffn_as_memory(fn)
    assert not result.passed and not result.not_implemented and words in result.message, result.message
