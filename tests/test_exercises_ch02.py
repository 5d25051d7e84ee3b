"""Tests for the Chapter 2 checkers: each passes the reference, names the mistake of typical
wrong implementations, and reports the notebook's student stub as not implemented yet."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import fails_with as _fails_with

from course_utils.exercises import ch02_positional as ch02
from course_utils.positional import alibi_slopes, apply_rope, shift_rotation, sinusoidal_encoding


# ---------------------------------------------------------------- 2.1
def _pe(T, d_model, base=10000.0, exp=lambda i, d: 2 * i / d, swap=False, halves=False, column=False, width=None):
    """The table by a loop over columns; any d_model (an odd one ends with a sine)."""
    width = d_model if width is None else width
    pe = torch.zeros(T, d_model)
    n_sin = (d_model + 1) // 2
    for p in range(T):
        for j in range(d_model):
            i = j // 2
            a = p / base ** exp(i, width)
            if column and j % 2:
                a = p / base ** (j / width)
            is_sin = (j % 2 == 0) != swap
            value = math.sin(a) if is_sin else math.cos(a)
            if halves:
                pe[p, i if j % 2 == 0 else n_sin + i] = value
            else:
                pe[p, j] = value
    return pe


def test_reference_is_the_course_table_for_even_widths():
    for T, d in [(50, 64), (7, 10)]:
        torch.testing.assert_close(ch02._pe_variant(T, d), sinusoidal_encoding(T, d), atol=1e-5, rtol=0)
        torch.testing.assert_close(_pe(T, d), sinusoidal_encoding(T, d), atol=1e-5, rtol=0)


def _pe_vector(T, d_model, base):
    p = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    i = torch.arange((d_model + 1) // 2, dtype=torch.float64)
    a = p * torch.exp(-2 * i / d_model * math.log(base))  # (T, ceil(d_model / 2))
    return torch.stack([a.sin(), a.cos()], -1).flatten(-2)[:, :d_model].float()  # interleave, drop a last cos


def test_sinusoidal_passes_reference_and_other_right_answers():
    assert ch02.check_sinusoidal(_pe).passed
    assert ch02.check_sinusoidal(_pe_vector).passed


def _even_only(T, d, base):
    p = torch.arange(T, dtype=torch.float32)[:, None]
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    out = torch.zeros(T, d)
    out[:, 0::2], out[:, 1::2] = torch.sin(p * w), torch.cos(p * w)  # fails for an odd d
    return out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda T, d, b: _pe(T, d, b, swap=True), "yours are swapped"),
        (lambda T, d, b: _pe(T, d, b, exp=lambda i, dd: i / dd), "you used i/d_model"),
        (lambda T, d, b: _pe(T, d), "Use the base argument"),
        (lambda T, d, b: _pe(T, d, b, column=True), "its own exponent (2i+1)/d_model"),
        (lambda T, d, b: _pe(T, d, b, halves=True), "all sines first"),
        (lambda T, d, b: _pe(T, d, b, exp=lambda i, dd: -2 * i / dd), "you multiplied"),
        (_even_only, "one more sine column"),
        (lambda T, d, b: _pe(T, d, b)[:, : d - d % 2], "one more sine column"),
        (lambda T, d, b: _pe(T, d + d % 2, b)[:, :d], "built the table for d_model + 1"),
        (lambda T, d, b: _pe(T, d, b, width=max(d - d % 2, 1)), "not by d_model - 1"),
    ],
)
def test_sinusoidal_names_mistakes(wrong, hint):
    _fails_with(ch02.check_sinusoidal(wrong), hint)


def test_sinusoidal_wrong_shape_and_crash():
    _fails_with(ch02.check_sinusoidal(lambda T, d, b: torch.zeros(d, T)), "should have shape")
    _fails_with(ch02.check_sinusoidal(lambda T, d, b: 1 / 0), "raised ZeroDivisionError")


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


def _rope_halves_vector(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def test_apply_rope_passes_reference():
    assert ch02.check_apply_rope(_rope_halves_vector).passed
    assert ch02.check_apply_rope(lambda x, c, s: _rope_loop(x, c, s, halves=True)).passed


def test_halves_rope_keeps_scores_relative():
    """The halves convention is a valid RoPE: a query-key score depends only on the offset m - n."""
    from course_utils.positional import rope_tables

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(16, generator=g), torch.randn(16, generator=g)
    cos, sin = rope_tables(12, 16)

    def score(m, n):
        return (_rope_halves_vector(q.expand(12, 16), cos, sin)[m] @ _rope_halves_vector(k.expand(12, 16), cos, sin)[n])

    assert torch.allclose(score(5, 2), score(9, 6), atol=1e-5) and torch.allclose(score(3, 3), score(11, 11), atol=1e-5)


def _rope_interleaved_out(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (apply_rope, "You paired adjacent dimensions"),
        (lambda x, c, s: _rope_loop(x, c, s, sign=-1.0, halves=True), "rotated by -m w_i"),
        (_rope_interleaved_out, "rather than interleaving"),
        (lambda x, c, s: _rope_loop(x, s, c, halves=True), "cos and sin are swapped"),
        (lambda x, c, s: x, "Nothing was rotated"),
    ],
)
def test_apply_rope_names_mistakes(wrong, hint):
    _fails_with(ch02.check_apply_rope(wrong), hint)


# ---------------------------------------------------------------- 2.4
def _geometric(n):
    return [2 ** (-8 * (h + 1) / n) for h in range(n)]


def _slopes_loop(n):
    n0 = 1
    while 2 * n0 <= n:
        n0 *= 2
    slopes = _geometric(n0)
    for j in range(n - n0):
        slopes.append(2 ** (-8 * (2 * j + 1) / (2 * n0)))  # the slopes at indices 0, 2, 4, ... of 2 n0
    return torch.tensor(slopes)


def test_alibi_slopes_passes_reference():
    assert ch02.check_alibi_slopes(alibi_slopes).passed
    assert ch02.check_alibi_slopes(_slopes_loop).passed


def test_alibi_slopes_for_six_heads_by_hand():
    """6 heads: the 4-head slopes 1/4, 1/16, 1/64, 1/256, then 2^-1 and 2^-3 from the 8-head sequence."""
    want = torch.tensor([2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3])
    torch.testing.assert_close(alibi_slopes(6), want)


def _n0(n):
    return 1 << (n.bit_length() - 1)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda n: torch.tensor([0.5 ** (h + 1) for h in range(n)]), "Halving per head is right only for n = 8"),
        (lambda n: torch.tensor([2 ** (-8 * h / n) for h in range(n)]), "not 1: count the powers from 1"),
        (lambda n: alibi_slopes(n).flip(0) if n & (n - 1) == 0 else alibi_slopes(n), "Largest slope first"),
        (lambda n: -alibi_slopes(n), "Slopes are positive"),
        (lambda n: [float(s) for s in alibi_slopes(n)], "should be a torch.Tensor"),
        (lambda n: torch.tensor(_geometric(n)), "is not a power of two"),
        (lambda n: torch.tensor(_geometric(_n0(n)) + _geometric(2 * _n0(n))[: n - _n0(n)]), "not its first"),
        (lambda n: torch.tensor(_geometric(_n0(n)) + _geometric(2 * _n0(n))[1::2][: n - _n0(n)]), "repeat the"),
        (lambda n: alibi_slopes(n).sort(descending=True).values, "do not sort them"),
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


# ---------------------------------------------------------------- 2.6
def _position_loop(row):
    """Search the slow hand's candidates turn by turn: another right answer."""
    s0, c0, s1, c1 = (float(v) for v in row)
    fast = math.atan2(s0, c0) % (2 * math.pi)
    return min((fast + 2 * math.pi * n for n in range(96)),
               key=lambda p: (math.sin(p / 100) - s1) ** 2 + (math.cos(p / 100) - c1) ** 2)


def _position_numpy(row):
    import numpy as np

    r = np.asarray(row)
    fast = np.arctan2(r[0], r[1]) % (2 * np.pi)
    slow = 100 * (np.arctan2(r[2], r[3]) % (2 * np.pi))
    return np.float64(fast + 2 * np.pi * np.round((slow - fast) / (2 * np.pi)))


def test_position_from_row_passes_right_answers():
    assert ch02.check_position_from_row(_position_loop).passed
    assert ch02.check_position_from_row(_position_numpy).passed


@pytest.mark.parametrize(("fn", "words"), [
    (lambda r: math.atan2(r[0], r[1]) % (2 * math.pi), "which turn"),
    (lambda r: 100 * (math.atan2(r[2], r[3]) % (2 * math.pi)), "refine it with the fast pair"),
    (lambda r: _position_numpy(torch.stack([r[1], r[0], r[3], r[2]])), "atan2(row[0], row[1])"),
    (lambda r: (lambda f, s: f + 2 * math.pi * round((s - f) / (2 * math.pi)))(
        math.atan2(r[0], r[1]), 100 * math.atan2(r[2], r[3])), "add 2 pi"),
    (lambda r: (lambda f, s: f + 2 * math.pi * round((s - f) / (2 * math.pi)))(
        math.atan2(r[0], r[1]) % (2 * math.pi), 10 * (math.atan2(r[2], r[3]) % (2 * math.pi))), "1/100"),
    (lambda r: (math.atan2(r[0], r[1]) % (2 * math.pi)) + 2 * math.pi * math.floor(
        100 * (math.atan2(r[2], r[3]) % (2 * math.pi)) / (2 * math.pi)), "one turn off"),
    (lambda r: 2.0, "expected 0"),
    (lambda r: "p", "should return a number"),
    (lambda r: r.mul_(2).sum().item(), "in place"),
])
def test_position_from_row_names_mistakes(fn, words):
    _fails_with(ch02.check_position_from_row(fn), words)
