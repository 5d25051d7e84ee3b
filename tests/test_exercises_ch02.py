"""Tests for the Chapter 2 checkers: each passes the reference, names the mistake of typical
wrong implementations, and reports the notebook's student stub as not implemented yet."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.exercises import ch02_positional as ch02
from course_utils.positional import alibi_slopes, apply_rope, shift_rotation, sinusoidal_encoding


def _fails_with(result, text: str) -> None:
    assert not result.passed and not result.not_implemented
    assert text in result.message, result.message


# ---------------------------------------------------------------- 2.1
def _pe(T, d_model, base=10000.0, exp=lambda i, d: 2 * i / d, swap=False, halves=False, column=False):
    pe = torch.zeros(T, d_model)
    for p in range(T):
        for i in range(d_model // 2):
            a = p / base ** exp(i, d_model)
            s, c = math.sin(a), math.cos(a)
            if column:
                c = math.cos(p / base ** ((2 * i + 1) / d_model))
            first, second = (c, s) if swap else (s, c)
            if halves:
                pe[p, i], pe[p, d_model // 2 + i] = first, second
            else:
                pe[p, 2 * i], pe[p, 2 * i + 1] = first, second
    return pe


def test_sinusoidal_passes_reference_and_loop():
    assert ch02.check_sinusoidal(sinusoidal_encoding).passed
    assert ch02.check_sinusoidal(_pe).passed


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda T, d: _pe(T, d, swap=True), "yours are swapped"),
        (lambda T, d: _pe(T, d, exp=lambda i, dd: i / dd), "you used i/d_model"),
        (lambda T, d: _pe(T, d, base=1000.0), "base is 10000, not 1000"),
        (lambda T, d: _pe(T, d, column=True), "its own exponent (2i+1)/d_model"),
        (lambda T, d: _pe(T, d, halves=True), "all sines first"),
        (lambda T, d: _pe(T, d, exp=lambda i, dd: -2 * i / dd), "you multiplied"),
    ],
)
def test_sinusoidal_names_mistakes(wrong, hint):
    _fails_with(ch02.check_sinusoidal(wrong), hint)


def test_sinusoidal_wrong_shape_and_crash():
    _fails_with(ch02.check_sinusoidal(lambda T, d: torch.zeros(d, T)), "should have shape")
    _fails_with(ch02.check_sinusoidal(lambda T, d: 1 / 0), "raised ZeroDivisionError")


# ---------------------------------------------------------------- 2.2
def _rot(k, d_model, sign=1.0, exp=lambda i, d: 2 * i / d):
    R = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        w = 10000.0 ** -exp(i, d_model)
        c, s = math.cos(k * w), sign * math.sin(k * w)
        R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    return R


def test_shift_rotation_passes_reference():
    assert ch02.check_shift_rotation(shift_rotation).passed
    assert ch02.check_shift_rotation(_rot).passed


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda k, d: _rot(k, d, sign=-1.0), "shifts backwards"),
        (lambda k, d: _rot(k, d, exp=lambda i, dd: i / dd), "exponent i/d_model"),
        (lambda k, d: _rot(k, d, exp=lambda i, dd: 0.0), "every block by k"),
        (lambda k, d: torch.eye(d), "identity matrix"),
    ],
)
def test_shift_rotation_names_mistakes(wrong, hint):
    _fails_with(ch02.check_shift_rotation(wrong), hint)


# ---------------------------------------------------------------- 2.3
def _rope_loop(x, cos, sin, sign=1.0, halves=False):
    out = x.clone()
    T, d_k = x.shape[-2:]
    for m in range(T):
        for i in range(d_k // 2):
            a, b = (i, i + d_k // 2) if halves else (2 * i, 2 * i + 1)
            c, s = cos[m, i], sign * sin[m, i]
            out[..., m, a] = x[..., m, a] * c - x[..., m, b] * s
            out[..., m, b] = x[..., m, a] * s + x[..., m, b] * c
    return out


def test_apply_rope_passes_reference():
    assert ch02.check_apply_rope(apply_rope).passed
    assert ch02.check_apply_rope(_rope_loop).passed


def _rope_concat(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, c, s: _rope_loop(x, c, s, halves=True), "'halves' convention"),
        (lambda x, c, s: _rope_loop(x, c, s, sign=-1.0), "rotated by -m w_i"),
        (_rope_concat, "rather than concatenating"),
        (lambda x, c, s: _rope_loop(x, s, c), "cos and sin are swapped"),
        (lambda x, c, s: x, "Nothing was rotated"),
    ],
)
def test_apply_rope_names_mistakes(wrong, hint):
    _fails_with(ch02.check_apply_rope(wrong), hint)


# ---------------------------------------------------------------- 2.4
def test_alibi_slopes_passes_reference():
    assert ch02.check_alibi_slopes(alibi_slopes).passed
    assert ch02.check_alibi_slopes(lambda n: torch.tensor([2 ** (-8 * (h + 1) / n) for h in range(n)])).passed


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda n: torch.tensor([0.5 ** (h + 1) for h in range(n)]), "Halving per head is right only for n = 8"),
        (lambda n: torch.tensor([2 ** (-8 * h / n) for h in range(n)]), "not 1: count the powers from 1"),
        (lambda n: torch.tensor([2 ** (-8 * (n - h) / n) for h in range(n)]), "Largest slope first"),
        (lambda n: -torch.tensor([2 ** (-8 * (h + 1) / n) for h in range(n)]), "Slopes are positive"),
        (lambda n: [2 ** (-8 * (h + 1) / n) for h in range(n)], "should be a torch.Tensor"),
    ],
)
def test_alibi_slopes_names_mistakes(wrong, hint):
    _fails_with(ch02.check_alibi_slopes(wrong), hint)


# ---------------------------------------------------------------- 2.5 (experiment)
def half_table(d_model, length=1000, p=0, threshold=0.5, strict=True, start=1):
    pe = sinusoidal_encoding(length + p, d_model).double()
    sim = pe[p:] @ pe[p]  # (length,): PE[p] . PE[p + k]
    below = sim < threshold * sim[0] if strict else sim <= threshold * sim[0]
    hits = below[start:].nonzero()
    return int(hits[0]) + start if len(hits) else None


def half_closed_form(d_model):
    """A second correct style: the closed form sum_i cos(k w_i), a numpy integer answer."""
    i = torch.arange(d_model // 2, dtype=torch.float64)
    k = torch.arange(1, 500, dtype=torch.float64)
    sim = torch.cos(k[:, None] * 10000.0 ** (-2 * i / d_model)).sum(-1)  # (499,)
    return (sim < d_model / 4).nonzero()[0].numpy()[0] + 1


def test_half_offset_passes_reference_and_alternatives(capsys):
    assert ch02.check_half_offset("levels off", half_table).passed
    assert ch02.check_half_offset(lambda: "levels off", half_closed_form).passed
    assert ch02.check_half_offset("levels off", lambda d: half_table(d, p=37)).passed  # another start p
    assert "between 0.95 and 1.15" in capsys.readouterr().out


def test_half_offset_explains_a_wrong_prediction():
    result = ch02.check_half_offset("proportional", half_table)
    assert result.passed and "finer, not longer-ranged" in result.message


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda d: half_table(d) - 1, "last offset still above half"),
    (lambda d: half_table(d, threshold=0.25), "threshold is a quarter"),
    (lambda d: half_table(d, start=0, threshold=1.0, strict=False), "start at k = 1"),
    (lambda d: half_table(d, length=40), "make it longer"),  # a table too short finds nothing
    (lambda d: float(half_table(d)) + 0.5, "should return an int"),
    (lambda d: 55, "not the first offset below half"),
])
def test_half_offset_names_mistakes(fn, hint):
    _fails_with(ch02.check_half_offset("levels off", fn), hint)


def test_half_offset_stub_and_prediction():
    def stub(*args):
        raise NotImplementedError

    assert ch02.check_half_offset(stub, half_table).not_implemented
    assert ch02.check_half_offset("levels off", stub).not_implemented
    _fails_with(ch02.check_half_offset("grows", half_table), "not one of the choices")
