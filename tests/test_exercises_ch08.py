"""Tests for the Chapter 8 checkers: pass the reference, fail known mistakes with the right hint, stubs."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.exercises.ch08_decoder_only import (
    check_filter_logits,
    check_generate,
    check_target_only_targets,
    check_trigram_bits,
)
from course_utils.sampling import top_k_filter, top_p_filter


def stub(*args, **kwargs):
    raise NotImplementedError


# ----- 8.1 target-only loss mask ------------------------------------------------------------------

def targets_ok(seq, sep_id, pad_id):
    shifted = seq[:, 1:]
    sep = (seq == sep_id).long().argmax(dim=1, keepdim=True)
    return shifted.masked_fill(torch.arange(shifted.shape[1]) < sep, pad_id)


def targets_all(seq, sep_id, pad_id):
    return seq[:, 1:]


def targets_mask_first_letter(seq, sep_id, pad_id):
    shifted = seq[:, 1:]
    sep = (seq == sep_id).long().argmax(dim=1, keepdim=True)
    return shifted.masked_fill(torch.arange(shifted.shape[1]) <= sep, pad_id)


def targets_keep_sep(seq, sep_id, pad_id):
    shifted = seq[:, 1:]
    sep = (seq == sep_id).long().argmax(dim=1, keepdim=True)
    return shifted.masked_fill(torch.arange(shifted.shape[1]) < sep - 1, pad_id)


def targets_unshifted(seq, sep_id, pad_id):
    sep = (seq == sep_id).long().argmax(dim=1, keepdim=True)
    return seq.masked_fill(torch.arange(seq.shape[1]) <= sep, pad_id)


def targets_inverted(seq, sep_id, pad_id):
    shifted = seq[:, 1:]
    sep = (seq == sep_id).long().argmax(dim=1, keepdim=True)
    return shifted.masked_fill(torch.arange(shifted.shape[1]) >= sep, pad_id)


def test_targets_checker_passes_reference():
    assert check_target_only_targets(targets_ok).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (targets_all, "still covers the source"), (targets_mask_first_letter, "first target letter"),
    (targets_keep_sep, "separator itself"), (targets_unshifted, "one column fewer"),
    (targets_inverted, "other way round"),
])
def test_targets_checker_names_mistake(fn, hint):
    result = check_target_only_targets(fn)
    assert not result.passed and hint in result.message, result.message


def test_targets_checker_stub():
    result = check_target_only_targets(stub)
    assert not result.passed and "not implemented yet" in result.message


# ----- 8.2 generation with a KV cache -------------------------------------------------------------

@torch.no_grad()
def generate_ok(model, prompt, n_new):
    cache = model.new_cache()
    seq, step_in = prompt, prompt
    for _ in range(n_new):
        nxt = model(step_in, cache=cache)[:, -1].argmax(-1, keepdim=True)
        seq, step_in = torch.cat([seq, nxt], dim=1), nxt
    return seq[:, prompt.shape[1]:]


@torch.no_grad()
def generate_no_cache(model, prompt, n_new):
    seq = prompt
    for _ in range(n_new):
        seq = torch.cat([seq, model(seq)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return seq[:, prompt.shape[1]:]


@torch.no_grad()
def generate_whole_seq(model, prompt, n_new):
    cache, seq = model.new_cache(), prompt
    for _ in range(n_new):
        seq = torch.cat([seq, model(seq, cache=cache)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return seq[:, prompt.shape[1]:]


@torch.no_grad()
def generate_first_row(model, prompt, n_new):
    cache, seq, step_in = model.new_cache(), prompt, prompt
    for _ in range(n_new):
        nxt = model(step_in, cache=cache)[:, 0].argmax(-1, keepdim=True)
        seq, step_in = torch.cat([seq, nxt], dim=1), nxt
    return seq[:, prompt.shape[1]:]


@torch.no_grad()
def generate_forgets_cache(model, prompt, n_new):
    seq, step_in = prompt, prompt
    for _ in range(n_new):
        nxt = model(step_in)[:, -1].argmax(-1, keepdim=True)
        seq, step_in = torch.cat([seq, nxt], dim=1), nxt
    return seq[:, prompt.shape[1]:]


def generate_with_prompt(model, prompt, n_new):
    return torch.cat([prompt, generate_ok(model, prompt, n_new)], dim=1)


def test_generate_checker_passes_reference():
    assert check_generate(generate_ok).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (generate_no_cache, "one token per call"), (generate_whole_seq, "only the newest token"),
    (generate_first_row, "[:, -1]"), (generate_forgets_cache, "without the cache"),
    (generate_with_prompt, "without the prompt"),
])
def test_generate_checker_names_mistake(fn, hint):
    result = check_generate(fn)
    assert not result.passed and hint in result.message, result.message


def test_generate_checker_stub():
    assert "not implemented yet" in check_generate(stub).message


# ----- 8.3 top-k / top-p --------------------------------------------------------------------------

def filter_ok(logits, top_k, top_p):
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


def filter_zero_fill(logits, top_k, top_p):
    out = filter_ok(logits, top_k, top_p)
    return out.masked_fill(torch.isinf(out), 0.0)


def filter_strict_p(logits, top_k, top_p):
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        probs, order = torch.softmax(logits, -1).sort(-1, descending=True)
        drop = probs.cumsum(-1) > top_p
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits


def filter_smallest_k(logits, top_k, top_p):
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1, largest=False).values[..., -1:]
        logits = logits.masked_fill(logits > kth, float("-inf"))
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


def filter_unsorted(logits, top_k, top_p):
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        probs = torch.softmax(logits, -1)
        logits = logits.masked_fill(probs.cumsum(-1) - probs >= top_p, float("-inf"))
    return logits


def test_filter_checker_passes_reference():
    assert check_filter_logits(filter_ok).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (filter_zero_fill, "-inf"), (filter_strict_p, "crosses p"), (filter_smallest_k, "k smallest"),
    (filter_unsorted, "sort first"),
])
def test_filter_checker_names_mistake(fn, hint):
    result = check_filter_logits(fn)
    assert not result.passed and hint in result.message, result.message


def test_filter_checker_stub():
    assert "not implemented yet" in check_filter_logits(stub).message


# ----- 8.4 trigram bits per character -------------------------------------------------------------

def _triples(train, V, alpha=1.0):
    idx = (train[:-2] * V + train[1:-1]) * V + train[2:]
    return torch.bincount(idx, minlength=V**3).double().view(V, V, V) + alpha


def trigram_ok(train, val, V):
    counts = _triples(train, V)
    probs = counts / counts.sum(-1, keepdim=True)
    return float(-torch.log2(probs[val[:-2], val[1:-1], val[2:]]).mean())


def trigram_nats(train, val, V):
    return trigram_ok(train, val, V) * math.log(2)


def trigram_joint(train, val, V):
    counts = _triples(train, V)
    return float(-torch.log2((counts / counts.sum())[val[:-2], val[1:-1], val[2:]]).mean())


def trigram_unsmoothed(train, val, V):
    counts = _triples(train, V, alpha=0.0)
    probs = counts / counts.sum(-1, keepdim=True).clamp(min=1)
    return float(-torch.log2(probs[val[:-2], val[1:-1], val[2:]]).mean())


def trigram_on_val(train, val, V):
    return trigram_ok(val, val, V)


def bigram_instead(train, val, V):
    counts = torch.bincount(train[:-1] * V + train[1:], minlength=V * V).double().view(V, V) + 1
    return float(-torch.log2((counts / counts.sum(1, keepdim=True))[val[:-1], val[1:]]).mean())


def test_trigram_checker_passes_reference():
    assert check_trigram_bits(trigram_ok).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (trigram_nats, "nats"), (trigram_joint, "not p(a, b, c)"), (trigram_unsmoothed, "Add one"),
    (trigram_on_val, "training ids only"), (bigram_instead, "bigram baseline"),
])
def test_trigram_checker_names_mistake(fn, hint):
    result = check_trigram_bits(fn)
    assert not result.passed and hint in result.message, result.message


def test_trigram_checker_stub():
    assert "not implemented yet" in check_trigram_bits(stub).message
