"""Tests for the Chapter 11 checkers: pass the reference and right alternatives, fail known mistakes with the
right hint, say "not implemented yet" for stubs."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import fails_with as _fails_with
from conftest import stub as _stub

from course_utils.exercises.ch11_attention_at_scale import (
    check_max_context,
    check_mqa_uptraining,
    check_online_softmax,
    check_pool_heads,
    reference_max_context,
    reference_pool_heads,
)
from course_utils.flash import online_softmax_update


@pytest.mark.parametrize("check,args", [(check_max_context, (_stub,)), (check_online_softmax, (_stub,)),
                                        (check_pool_heads, (_stub,)), (check_mqa_uptraining, (_stub, _stub))])
def test_stub_is_not_implemented_yet(check, args):
    result = check(*args)
    assert not result.passed and result.not_implemented and "not implemented yet" in result.message


# ----- 11.1 -----------------------------------------------------------------------------------
def test_max_context_right_answers():
    assert check_max_context(reference_max_context).passed
    assert check_max_context(lambda mem, L, h, kv, d, B, nb: math.floor(mem / (2 * L * kv * d * B * nb))).passed
    assert check_max_context(lambda mem, L, h, kv, d, B, nb: torch.tensor(mem // (L * kv * d * B * nb * 2))).passed


@pytest.mark.parametrize("wrong,words", [
    (lambda mem, L, h, kv, d, B, nb: mem // (L * kv * d * B * nb), ["factor 2"]),
    (lambda mem, L, h, kv, d, B, nb: mem // (2 * L * h * d * B * nb), ["query heads"]),
    (lambda mem, L, h, kv, d, B, nb: mem // (2 * L * kv * d * nb), ["batch"]),
    (lambda mem, L, h, kv, d, B, nb: mem / (2 * L * kv * d * B * nb), ["round down"]),
    (lambda mem, L, h, kv, d, B, nb: mem // (2 * L * kv * d * B * 2), ["2 bytes"]),
    (lambda mem, L, h, kv, d, B, nb: math.ceil(mem / (2 * L * kv * d * B * nb)), ["rounded up"]),
])
def test_max_context_mistakes(wrong, words):
    _fails_with(check_max_context(wrong), *words)


# ----- 11.2 -----------------------------------------------------------------------------------
def online_loop(m, l, acc, s, v):  # noqa: E741
    """Right, written differently: concatenate the old state as one pseudo-score."""
    new_max = torch.maximum(m, s.max(dim=-1).values)
    keep = torch.exp(m - new_max)
    weights = torch.exp(s - new_max.unsqueeze(-1))
    return new_max, keep * l + weights.sum(-1), keep.unsqueeze(-1) * acc + torch.matmul(weights, v)


def online_logsumexp(m, l, acc, s, v):  # noqa: E741
    """Right, via logsumexp of the tile."""
    m_new = torch.maximum(m, s.amax(-1))
    p = (s - m_new[..., None]).exp()
    return m_new, l * (m - m_new).exp() + torch.logsumexp(s - m_new[..., None], -1).exp(), \
        acc * (m - m_new).exp()[..., None] + p @ v


def no_acc_rescale(m, l, acc, s, v):  # noqa: E741
    m_new = torch.maximum(m, s.amax(-1))
    p = torch.exp(s - m_new[..., None])
    return m_new, l * torch.exp(m - m_new) + p.sum(-1), acc + p @ v


def no_l_rescale(m, l, acc, s, v):  # noqa: E741
    m_new = torch.maximum(m, s.amax(-1))
    p = torch.exp(s - m_new[..., None])
    return m_new, l + p.sum(-1), acc * torch.exp(m - m_new)[..., None] + p @ v


def normalised(m, l, acc, s, v):  # noqa: E741
    m_new, l_new, acc_new = online_softmax_update(m, l, acc, s, v)
    return m_new, l_new, acc_new / l_new[..., None]


def tile_max_only(m, l, acc, s, v):  # noqa: E741
    m_new = s.amax(-1)
    r = torch.exp(m - m_new)
    p = torch.exp(s - m_new[..., None])
    return m_new, l * r + p.sum(-1), acc * r[..., None] + p @ v


def in_place(m, l, acc, s, v):  # noqa: E741
    m_new = torch.maximum(m, s.amax(-1))
    r = torch.exp(m - m_new)
    p = torch.exp(s - m_new[..., None])
    acc.mul_(r[..., None]).add_(p @ v)
    return m_new, l * r + p.sum(-1), acc


def test_online_right_answers():
    assert check_online_softmax(online_softmax_update).passed
    assert check_online_softmax(online_loop).passed
    assert check_online_softmax(online_logsumexp).passed


@pytest.mark.parametrize("wrong,words", [
    (no_acc_rescale, ["acc is not rescaled"]),
    (no_l_rescale, ["l is not rescaled"]),
    (normalised, ["normalised output"]),
    (tile_max_only, ["max(m_old"]),
    (in_place, ["in place"]),
])
def test_online_mistakes(wrong, words):
    _fails_with(check_online_softmax(wrong), *words)


# ----- 11.3 -----------------------------------------------------------------------------------
def pool_loop(w, h, n_kv):
    d_k = w.shape[0] // h
    G = h // n_kv
    groups = [torch.stack([w[(j * G + i) * d_k:(j * G + i + 1) * d_k] for i in range(G)]).mean(0) for j in range(n_kv)]
    return torch.cat(groups)


def pool_split(w, h, n_kv):
    return torch.cat([c.reshape(h // n_kv, -1, *w.shape[1:]).mean(0) for c in w.chunk(n_kv)])


def test_pool_right_answers():
    assert check_pool_heads(reference_pool_heads).passed
    assert check_pool_heads(pool_loop).passed
    assert check_pool_heads(pool_split).passed


@pytest.mark.parametrize("wrong,words", [
    (lambda w, h, n: w.reshape(h // n, n, w.shape[0] // h, *w.shape[1:]).mean(0).reshape(-1, *w.shape[1:]),
     ["consecutive heads"]),
    (lambda w, h, n: w.reshape(n, h // n, w.shape[0] // h, *w.shape[1:]).sum(1).reshape(-1, *w.shape[1:]),
     ["summed"]),
    (lambda w, h, n: w.reshape(n, h // n, w.shape[0] // h, *w.shape[1:])[:, 0].reshape(-1, *w.shape[1:]),
     ["first head"]),
    (lambda w, h, n: w[: n * (w.shape[0] // h)], ["dropped the others"]),
    (lambda w, h, n: w, ["shape"]),
])
def test_pool_mistakes(wrong, words):
    _fails_with(check_pool_heads(wrong), *words)


# ----- 11.4 -----------------------------------------------------------------------------------
def test_mqa_right_answers():
    result = check_mqa_uptraining(lambda: "larger", lambda: (1.36, 0.57))
    assert result.passed and "matches" in result.message
    result = check_mqa_uptraining(lambda: " same ", lambda: (torch.tensor(1.2), 0.6))
    assert result.passed and "You predicted 'same'" in result.message


@pytest.mark.parametrize("prediction,numbers,words", [
    ("bigger", (1.36, 0.57), ["not one of the choices"]),
    ("larger", (1.36, 1.36), ["before uptraining"]),
    ("larger", (1.36, 1.2), ["measure before uptraining"]),
    ("larger", (1.36, 0.05), ["more than 30 steps"]),
    ("larger", (0.3, 0.2), ["before converting"]),
    ("larger", (1.36,), ["(lost_before, lost_after)"]),
])
def test_mqa_mistakes(prediction, numbers, words):
    _fails_with(check_mqa_uptraining(lambda: prediction, lambda: numbers), *words)


def test_mqa_prediction_comes_first():
    measured = []
    result = check_mqa_uptraining(lambda: "", lambda: measured.append(1) or (1.3, 0.4))
    assert result.not_implemented and not measured
