"""Tests for the non-transcription exercise of chapters 1-5 (design, closed form, prediction, transfer):
each checker passes correct answers, names at least three realistic wrong ones, and reports a stub."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import stub as _stub

from course_utils.exercises.ch01_attention import check_lookup_queries
from course_utils.exercises.ch03_norm import check_stream_growth, simulate_pre_ln_stream
from course_utils.exercises.ch04_masking import check_fully_masked_rows
from course_utils.masks import causal_mask, combine_masks, padding_mask


@pytest.mark.parametrize("checker", [check_lookup_queries, check_stream_growth, check_fully_masked_rows])
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
