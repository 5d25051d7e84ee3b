"""Tests for the non-transcription exercise of chapters 1-5 (design, closed form, prediction, transfer):
each checker passes correct answers, names at least three realistic wrong ones, and reports a stub."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.exercises.ch01_attention import check_lookup_queries
from course_utils.exercises.ch02_positional import check_offset_similarity
from course_utils.exercises.ch03_norm import check_stream_growth, simulate_pre_ln_stream
from course_utils.exercises.ch04_masking import check_fully_masked_rows
from course_utils.exercises.ch05_transformer import check_model_params
from course_utils.masks import causal_mask, combine_masks, padding_mask
from course_utils.model import Transformer, TransformerConfig


def _stub(*args):
    raise NotImplementedError


@pytest.mark.parametrize("checker", [check_lookup_queries, check_offset_similarity, check_stream_growth,
                                     check_fully_masked_rows, check_model_params])
def test_stub_is_not_implemented(checker):
    result = checker(_stub)
    assert not result.passed and result.not_implemented


# ----- 1.5 lookup queries ----------------------------------------------------------------------------

@pytest.mark.parametrize("scale", [200.0, 1e3])
def test_lookup_passes_long_queries(scale):
    assert check_lookup_queries(lambda keys, wanted: scale * keys[wanted]).passed


def test_lookup_passes_a_scale_chosen_from_the_keys():
    def smart(keys, wanted):
        d_k = keys.shape[1]
        sims = keys @ keys.T - 2 * torch.eye(len(keys))  # exclude self
        gap = 1 - sims.max(dim=1).values[wanted]  # score gap to the nearest other key, per query
        scale = math.sqrt(d_k) * math.log(20 * len(keys)) / gap  # enough for >= 95 %
        return scale[:, None] * keys[wanted]
    assert check_lookup_queries(smart).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda keys, wanted: keys[wanted], "too flat"),  # right direction, unit length
    (lambda keys, wanted: 10 * keys[wanted], "too flat"),  # not enough for the nearly parallel pair
    (lambda keys, wanted: 100 * keys[(wanted + 1) % len(keys)], "attends most to key"),
    (lambda keys, wanted: -100 * keys[wanted], "attends most to key"),
    (lambda keys, wanted: keys, "should have shape"),
])
def test_lookup_names_mistakes(fn, hint):
    result = check_lookup_queries(fn)
    assert not result.passed and hint in result.message, result.message


# ----- 2.5 offset similarity ----------------------------------------------------------------------------

def sim_ok(k, d_model):
    i = torch.arange(d_model // 2, dtype=torch.float64)
    return torch.cos(k.double()[:, None] / 10000 ** (2 * i / d_model)).sum(-1)


def test_offset_similarity_passes_reference():
    assert check_offset_similarity(sim_ok).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda k, d: torch.sin(k.double()[:, None] / 10000 ** (2 * torch.arange(d // 2) / d)).sum(-1), "odd in k"),
    (lambda k, d: sim_ok(k, d) / (d / 2), "do not average"),
    (lambda k, d: torch.cos(k.double()[:, None] / 10000 ** (torch.arange(d // 2) / d)).sum(-1), "has 2i"),
    (lambda k, d: 2 * sim_ok(k, d), "not twice"),
    (lambda k, d: torch.full(k.shape, d / 2.0), "differs from the reference"),
])
def test_offset_similarity_names_mistakes(fn, hint):
    result = check_offset_similarity(fn)
    assert not result.passed and hint in result.message, result.message


# ----- 3.5 stream growth ------------------------------------------------------------------------------------

def test_stream_growth_passes_reference():
    assert check_stream_growth(lambda n, v: math.sqrt(1 + n * v)).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda n, v: (1 + v) ** (n / 2), "in proportion"), (lambda n, v: 1 + n * v, "square root"),
    (lambda n, v: math.sqrt(n * v), "starts with variance 1"), (lambda n, v: 1 + n * math.sqrt(v), "variances do"),
    (lambda n, v: "1.0", "return a number"),
])
def test_stream_growth_names_mistakes(fn, hint):
    result = check_stream_growth(fn)
    assert not result.passed and hint in result.message, result.message


@pytest.mark.parametrize(("n", "v"), [(16, 0.5), (64, 0.25), (8, 2.0)])
def test_simulation_measures_sqrt_growth(n, v):
    assert simulate_pre_ln_stream(n, v) == pytest.approx(math.sqrt(1 + n * v), rel=0.05)


# ----- 4.5 fully masked rows --------------------------------------------------------------------------------

def rows_ok(tokens, pad_id):
    mask = combine_masks(padding_mask(tokens, pad_id), causal_mask(tokens.shape[1]))  # (B, 1, T, T)
    return ~mask.any(dim=-1).squeeze(1)


def rows_by_hand(tokens, pad_id):
    """A query t has a key iff some position <= t is real: a running OR over the real tokens."""
    return ~(tokens != pad_id).cummax(dim=1).values


@pytest.mark.parametrize("fn", [rows_ok, rows_by_hand])
def test_fully_masked_rows_passes_correct_versions(fn):
    assert check_fully_masked_rows(fn).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda t, p: t == p, "marked every PAD query"),
    (lambda t, p: torch.zeros(t.shape, dtype=torch.bool), "no empty row"),
    (lambda t, p: (t == p).int(), "torch.bool"),
    (lambda t, p: ~padding_mask(t, p).reshape(t.shape[0], -1).any(-1, keepdim=True).expand(t.shape), "no empty row"),
])
def test_fully_masked_rows_names_mistakes(fn, hint):
    result = check_fully_masked_rows(fn)
    assert not result.passed and hint in result.message, result.message


# ----- 5.5 model parameters ------------------------------------------------------------------------------

def params_ok(c):
    return sum(p.numel() for p in Transformer(c).parameters())


def params_by_formula(c):
    d, f = c.d_model, c.d_ff
    mha, ffn, ln = 4 * d * (d + 1), 2 * d * f + f + d, 2 * d
    total = c.n_encoder_layers * (mha + ffn + 2 * ln) + c.n_decoder_layers * (2 * mha + ffn + 3 * ln)
    if c.tie_embeddings:
        total += c.src_vocab_size * d + c.tgt_vocab_size
    else:
        total += (c.src_vocab_size + c.tgt_vocab_size) * d + d * c.tgt_vocab_size + c.tgt_vocab_size
    return total + (4 * d if c.norm_first else 0)


@pytest.mark.parametrize("fn", [params_ok, params_by_formula])
def test_model_params_passes_correct_versions(fn):
    assert check_model_params(fn).passed


def params_counting_ties(c):
    return sum(p.numel() for _, p in Transformer(c).named_parameters(remove_duplicate=False))


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda c: params_by_formula(c) - c.n_decoder_layers * (4 * c.d_model * (c.d_model + 1) + 2 * c.d_model),
     "two attention sublayers"),
    (params_counting_ties, "count it once"),
    (lambda c: params_by_formula(c) - (4 * c.d_model if c.norm_first else 0), "one more LayerNorm"),
    (lambda c: params_by_formula(c) - c.tgt_vocab_size, "bias"),
    (lambda c: float(params_ok(c)), "return an int"),
])
def test_model_params_names_mistakes(fn, hint):
    result = check_model_params(fn)
    assert not result.passed and hint in result.message, result.message


def test_formula_matches_pytorch_counts():
    c = TransformerConfig(40, 40, d_model=32, n_heads=4, d_ff=64, tie_embeddings=True, norm_first=True)
    assert params_by_formula(c) == params_ok(c)
