"""Checkers for the exercises of Chapter 2 (positional encoding).

Each checker takes the learner's function, runs it on seeded random and edge-case inputs,
compares with the reference in :mod:`course_utils.positional`, and names the likely mistake
when the answer matches what a typical wrong implementation would return.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..positional import alibi_slopes, apply_rope, rope_tables, shift_rotation, sinusoidal_encoding
from .core import (
    CheckFailed,
    as_number,
    call_student,
    checker,
    expect_close,
    expect_tensor,
    fail_on_mistake,
    fmt_number,
)
from .core import as_int as _as_int
from .experiment import Expected, compare_prediction, judge_range, read_prediction

__all__ = ["check_alibi_slopes", "check_apply_rope", "check_half_offset", "check_position_from_row",
           "check_shift_rotation", "check_sinusoidal"]


# ---------------------------------------------------------------- 2.1 sinusoidal table, any base, odd d_model
def _pe_variant(
    T: int, d_model: int, base: float = 10000.0, swap: bool = False, exponent: str = "2i/d",
    layout: str = "interleaved", start: int = 0, width: int | None = None,
) -> Tensor:
    """The sinusoidal table with one deliberate change (base, sin/cos order, exponent, layout, first position).

    Columns 2i hold sin(p * w_i) and columns 2i+1 hold cos(p * w_i), w_i = base^(-2i/width) with
    width = d_model unless given; an odd d_model ends with the sine column of one more pair.
    """
    width = d_model if width is None else width
    n_sin, n_cos = (d_model + 1) // 2, d_model // 2
    p = torch.arange(start, start + T, dtype=torch.float64).unsqueeze(1)  # (T, 1)
    i = torch.arange(n_sin, dtype=torch.float64)  # (ceil(d_model/2),)
    if exponent == "2i/d":
        angles = p / base ** (2 * i / width)  # (T, ceil(d_model/2))
    elif exponent == "i/d":
        angles = p / base ** (i / width)
    elif exponent == "times":
        angles = p * base ** (2 * i / width)
    elif exponent == "floor":  # 2 * i // d_model in integer arithmetic is 0 for every i
        angles = p * torch.ones_like(i)
    else:
        raise ValueError(exponent)
    first, second = (torch.cos(angles), torch.sin(angles)) if swap else (torch.sin(angles), torch.cos(angles))
    if layout == "halves":
        out = torch.cat([first, second[:, :n_cos]], dim=-1)  # (T, d_model): all sines, then all cosines
    elif layout == "column":  # each column j uses its own index: exponent j/d_model, also for odd j
        j = torch.arange(d_model, dtype=torch.float64)
        ang = p / base ** (j / width)  # (T, d_model)
        out = torch.where(j % 2 == 0, torch.sin(ang), torch.cos(ang))
    else:
        out = torch.zeros(T, d_model, dtype=torch.float64)
        out[:, 0::2], out[:, 1::2] = first, second[:, :n_cos]  # (T, d_model), interleaved
    return out.float()


_ODD_HINT = (
    " For an odd d_model there is one more sine column than cosine columns: columns 0, 2, ..., d_model - 1 "
    "hold sines ((d_model + 1) // 2 of them) and columns 1, 3, ..., d_model - 2 cosines (d_model // 2): take "
    "the frequencies for the cosines from the first d_model // 2 pairs."
)


@checker("2.1", "sinusoidal table for any base and width")
def check_sinusoidal(fn: Callable[[int, int, float], Tensor]) -> str:
    """Check ``fn(T, d_model, base)``: the sinusoidal table with base ``base``, also for odd d_model. Chapter 2."""
    for T, d_model, base in [(50, 64, 10000.0), (12, 9, 10000.0), (20, 16, 500.0), (7, 7, 100.0), (5, 1, 10000.0)]:
        what = f"my_sinusoidal_encoding({T}, {d_model}, base={base:g})"
        try:
            got = call_student(fn, T, d_model, base, what="my_sinusoidal_encoding")
        except CheckFailed as failure:
            if d_model % 2 and ("shape" in str(failure) or "size" in str(failure)):
                raise CheckFailed(f"{failure}{_ODD_HINT}") from None
            raise
        got = expect_tensor(got, what)
        if d_model % 2 and tuple(got.shape) in ((T, d_model - 1), (T, d_model + 1)):
            raise CheckFailed(f"{what} should have shape ({T}, {d_model}), got {tuple(got.shape)}.{_ODD_HINT}")
        want = _pe_variant(T, d_model, base=base)
        mistakes = {
            "Even columns (2i) hold sin and odd columns (2i+1) hold cos; yours are swapped.":
                _pe_variant(T, d_model, base=base, swap=True),
            "The exponent is 2i/d_model where i counts pairs (0, 1, ...); you used i/d_model.":
                _pe_variant(T, d_model, base=base, exponent="i/d"),
            "Both columns of pair i share one frequency 1/base^(2i/d_model); you gave the cos column 2i+1 "
            "its own exponent (2i+1)/d_model.": _pe_variant(T, d_model, base=base, layout="column"),
            "Use the base argument: your table uses the paper's 10000 whatever base is.":
                _pe_variant(T, d_model),
            "Divide the position by base^(2i/d_model) (frequencies shrink with i); you multiplied.":
                _pe_variant(T, d_model, base=base, exponent="times"),
            "Interleave the columns (sin, cos, sin, cos, ...): you put all sines first, then all cosines.":
                _pe_variant(T, d_model, base=base, layout="halves"),
            "Positions start at 0: row p of the table is position p (use torch.arange(T)).":
                _pe_variant(T, d_model, base=base, start=1),
            "Every column has the same frequency: 2 * i // d_model is integer division and always 0. Use "
            "float division (2 * i / d_model, with i a float tensor).":
                _pe_variant(T, d_model, base=base, exponent="floor"),
        }
        if d_model % 2:
            mistakes["The exponent divides by the d_model you were given: you built the table for "
                     "d_model + 1 and cut off the last column, which changes every frequency."] = (
                _pe_variant(T, d_model, base=base, width=d_model + 1)
            )
            mistakes["The exponent divides by the d_model you were given, not by d_model - 1."] = (
                _pe_variant(T, d_model, base=base, width=max(d_model - 1, 1))
            )
        expect_close(got, want, what, mistakes, atol=1e-4)
    return "Your table follows the formula for any base, and an odd d_model ends with one more sine column."


# ---------------------------------------------------------------- 2.2 shift rotation R(k)
def _rotation_variant(k: int, d_model: int, transpose: bool = False, exponent: str = "2i/d") -> Tensor:
    i = torch.arange(d_model // 2, dtype=torch.float64)
    w = 10000.0 ** (-(2 * i if exponent == "2i/d" else i) / d_model) if exponent != "same" else torch.ones_like(i)
    c, s = torch.cos(k * w), torch.sin(k * w)
    blocks = [torch.tensor([[c[n], s[n]], [-s[n], c[n]]], dtype=torch.float64) for n in range(d_model // 2)]
    R = torch.block_diag(*blocks)
    return R.T if transpose else R


@checker("2.2", "the shift rotation R(k)")
def check_shift_rotation(fn: Callable[[int, int], Tensor]) -> str:
    """Check ``fn(k, d_model)``: the (d_model, d_model) matrix with PE[p + k] = R(k) @ PE[p]. Chapter 2."""
    pe = sinusoidal_encoding(120, 16).double()
    for k, d_model in [(3, 16), (10, 16), (37, 64), (0, 4), (1, 2)]:
        got = call_student(fn, k, d_model, what="my_shift_rotation")
        got = expect_tensor(got, f"my_shift_rotation({k}, {d_model})", (d_model, d_model))
        want = shift_rotation(k, d_model)
        mistakes = {
            "Your matrix shifts backwards (it maps PE[p] to PE[p - k]). For the pair (sin, cos), "
            "sin(a+b) = sin a cos b + cos a sin b puts +sin(k w) in the top-right entry and -sin(k w) "
            "bottom-left.": _rotation_variant(k, d_model, transpose=True),
            "Each 2x2 block uses its own frequency w_i = 1/10000^(2i/d_model); you used the exponent i/d_model.":
                _rotation_variant(k, d_model, exponent="i/d"),
            "Each 2x2 block turns by k * w_i, with the pair's own frequency w_i; you turned every block by k.":
                _rotation_variant(k, d_model, exponent="same"),
            "Each block turns by the angle k * w_i: you used w_i alone, as if k were 1.":
                _rotation_variant(1, d_model),
        }
        if k != 0:
            mistakes["That is the identity matrix: a shift by k != 0 must rotate each pair."] = torch.eye(
                d_model, dtype=torch.float64)
        expect_close(got, want, f"my_shift_rotation({k}, {d_model})", mistakes, atol=1e-5)
    R = call_student(fn, 7, 16, what="my_shift_rotation").double()
    err = (pe[:100] @ R.T - pe[7:107]).abs().max().item()
    if err > 1e-4:
        raise CheckFailed(f"R(7) @ PE[p] should equal PE[p + 7] for every p; the largest error is {err:.3g}.")
    return "R(k) @ PE[p] = PE[p + k] for every p tried."


# ---------------------------------------------------------------- 2.3 applying RoPE
def _rotate_pairs(x1: Tensor, x2: Tensor, c: Tensor, s: Tensor, mode: str) -> tuple[Tensor, Tensor]:
    """Rotate each pair (x1, x2) by its angle; "minus" turns the wrong way, "swap" swaps cos and sin."""
    if mode == "minus":
        return x1 * c + x2 * s, -x1 * s + x2 * c
    if mode == "swap":
        return x1 * s - x2 * c, x1 * c + x2 * s
    return x1 * c - x2 * s, x1 * s + x2 * c


def _rope_variant(x: Tensor, cos: Tensor, sin: Tensor, mode: str) -> Tensor:
    T, d_k = x.shape[-2:]
    c, s = cos[:T], sin[:T]
    if mode == "halves":
        x1, x2 = x[..., : d_k // 2], x[..., d_k // 2 :]
        return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    a, b = _rotate_pairs(x1, x2, c, s, mode)
    if mode == "concat":
        return torch.cat([a, b], dim=-1)
    return torch.stack([a, b], dim=-1).flatten(-2)


def _rope_halves_variant(x: Tensor, cos: Tensor, sin: Tensor, mode: str = "right") -> Tensor:
    """RoPE in the halves convention (dimension i paired with i + d_k/2), with one deliberate change."""
    T, d_k = x.shape[-2:]
    c, s = cos[:T], sin[:T]  # (T, d_k/2)
    x1, x2 = x[..., : d_k // 2], x[..., d_k // 2 :]  # (..., T, d_k/2) each
    a, b = _rotate_pairs(x1, x2, c, s, mode)
    if mode == "stack":  # the pairs' results interleaved (2i, 2i+1) instead of put back in the two halves
        return torch.stack([a, b], dim=-1).flatten(-2)
    return torch.cat([a, b], dim=-1)  # (..., T, d_k)


@checker("2.3", "RoPE in the halves convention")
def check_apply_rope(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> str:
    """Check ``fn(x, cos, sin)``: rotate the pairs (i, i + d_k/2) of x (..., T, d_k) by m w_i. Chapter 2."""
    g = torch.Generator().manual_seed(22)
    for shape, base in [((2, 3, 6, 8), 10000.0), ((5, 4), 10000.0), ((1, 9, 16), 500.0), ((1, 2), 10000.0)]:
        x = torch.randn(*shape, generator=g)
        cos, sin = rope_tables(shape[-2], shape[-1], base=base)
        got = call_student(fn, x.clone(), cos.clone(), sin.clone(), what="my_apply_rope_halves")
        want = _rope_halves_variant(x, cos, sin)
        mistakes = {
            "You paired adjacent dimensions (2i, 2i+1), the convention of course_utils.positional.apply_rope. "
            "This exercise pairs dimension i with i + d_k/2: x[..., :d_k // 2] with x[..., d_k // 2:].":
                apply_rope(x, cos, sin),
            "You rotated by -m w_i: the first half becomes x1 cos - x2 sin and the second half x1 sin + x2 cos.":
                _rope_halves_variant(x, cos, sin, "minus"),
            "The rotated pairs must go back to their places (i, i + d_k/2): concatenate the new first half "
            "and the new second half, rather than interleaving them.": _rope_halves_variant(x, cos, sin, "stack"),
            "cos and sin are swapped: the angle's cosine multiplies the member itself.":
                _rope_halves_variant(x, cos, sin, "swap"),
            "Nothing was rotated: the output equals the input.": x,
        }
        if base != 10000.0:  # tables rebuilt inside the function only show when the given ones differ
            mistakes["Use the cos and sin tables passed in: you rebuilt them yourself (these use another base)."] = (
                _rope_halves_variant(x, *rope_tables(shape[-2], shape[-1]))
            )
        expect_close(got, want, f"my_apply_rope_halves on x of shape {shape}", mistakes, atol=1e-5)
    return "Pairs (i, i + d_k/2) rotate by m w_i; the scores of rotated queries and keys depend only on m - n."


# ---------------------------------------------------------------- 2.4 ALiBi slopes
def _alibi_geometric(n: int) -> Tensor:
    """r, r^2, ..., r^n with r = 2^(-8/n): the slopes for n a power of two (and the naive rule for any n)."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n) for h in range(n)])


@checker("2.4", "ALiBi slopes for any number of heads")
def check_alibi_slopes(fn: Callable[[int], Tensor]) -> str:
    """Check ``fn(n_heads)``: ALiBi's per-head slopes, also for n_heads not a power of two. Chapter 2."""
    for n in [8, 4, 6, 12, 3, 16, 5, 2, 1]:  # powers of two first: a mistake there has the plainer hint
        got = call_student(fn, n, what="my_alibi_slopes")
        got = expect_tensor(got, f"my_alibi_slopes({n})", (n,))
        want = alibi_slopes(n)
        n0 = 1 << (n.bit_length() - 1)  # the largest power of two <= n
        r = 2.0 ** (-8.0 / n)
        mistakes: dict[str, Tensor] = {}
        if n0 == n:
            mistakes["Largest slope first: head 0 gets r = 2^(-8/n) and the slopes shrink to 1/256."] = want.flip(0)
        else:
            extra = _alibi_geometric(2 * n0)
            mistakes |= {
                f"{n} is not a power of two, and then the slopes are not 2^(-8/n), 2^(-16/n), ...: take the "
                f"{n0} slopes of n0 = {n0} heads, then add every other slope of the {2 * n0}-head sequence.":
                    _alibi_geometric(n),
                f"Add every other slope of the {2 * n0}-head sequence (indices 0, 2, 4, ...), not its first "
                f"{n - n0}: the slopes in between are the ones you already have.":
                    torch.cat([_alibi_geometric(n0), extra[: n - n0]]),
                f"Take the slopes at indices 0, 2, 4, ... of the {2 * n0}-head sequence: the ones at 1, 3, 5, "
                f"... repeat the {n0} slopes you already have.":
                    torch.cat([_alibi_geometric(n0), extra[1::2][: n - n0]]),
                f"Start from the largest power of two below n ({n0}), not the next one up ({2 * n0}): the "
                f"first {n0} slopes are those of {n0} heads.": extra[:n],
                f"Keep Press et al.'s order: the {n0} slopes of {n0} heads first, then the extra ones; do "
                "not sort them.": want.sort(descending=True).values,
            }
        mistakes |= {
            "The ratio depends on the number of heads: the slopes are r, r^2, ..., r^n with r = 2^(-8/n), so "
            "the last head always gets 1/256. Halving per head is right only for n = 8.":
                torch.tensor([2.0 ** -(h + 1) for h in range(n)]),
            "The first head's slope is r = 2^(-8/n), not 1: count the powers from 1 to n.":
                torch.tensor([r**h for h in range(n)]),
            "Slopes are positive numbers; the minus sign belongs in the bias -m * |i - j|.": -want,
        }
        expect_close(got, want, f"my_alibi_slopes({n})", mistakes, atol=1e-6)
    return "With 8 heads the slopes are 1/2, 1/4, ..., 1/256, and 6 heads take the 4-head slopes plus two more."


# ----- 2.5 how far apart do two positions look alike? (experiment) ----------------------------------
HALF_OFFSET_OPTIONS = {
    "proportional": "the offset doubles when d_model doubles",
    "levels off": "the offset grows at first, then hardly moves",
    "shrinks": "the offset gets smaller as d_model grows",
}
_HALF_OFFSET_WHY = {
    "proportional": "More columns add frequencies between the same two ends, 1 and 1/10000, rather than "
                    "slower ones: the table gets finer, not longer-ranged.",
    "shrinks": "The fastest pair (frequency 1) and the slowest (1/10000) are the same at every d_model; "
               "a wider table adds frequencies in between, which move the half point outwards, not inwards.",
}
HALF_OFFSET_GROWTH = Expected(
    "ratio of the half-similarity offset at d_model = 1024 to the one at 256", 0.95, 1.15,
    "past a few hundred columns the frequencies 10000^(-2i/d_model) fill the same range ever more densely, the "
    "sum of cos(k w_i) tends to a fixed curve, and two positions about 55 apart are already 'half similar' "
    "whatever the width: the paper's table does not see further with more dimensions.",
    below="Is your d_model = 1024 table long enough to reach the half point?",
    above="Did you compare with half of d_model instead of half of PE[p] . PE[p] = d_model / 2?",
)


def _similarity_curve(d_model: int, n: int, exponent: str = "2i/d") -> Tensor:
    """PE[p] . PE[p + k] for k = 0 .. n - 1 (float64), from the closed form sum_i cos(k w_i)."""
    i = torch.arange(d_model // 2, dtype=torch.float64)  # (d_model / 2,)
    power = 2 * i / d_model if exponent == "2i/d" else i / d_model
    k = torch.arange(n, dtype=torch.float64)  # (n,)
    return torch.cos(k[:, None] * 10000.0 ** (-power)).sum(dim=-1)  # (n,)


def reference_half_offset(d_model: int, threshold: float = 0.5, exponent: str = "2i/d", strict: bool = True) -> int:
    """The smallest k >= 1 with PE[p] . PE[p + k] < threshold * PE[p] . PE[p] (= threshold * d_model / 2)."""
    curve = _similarity_curve(d_model, 4000, exponent)
    below = curve < threshold * curve[0] if strict else curve <= threshold * curve[0]
    return int(below[1:].nonzero()[0]) + 1


@checker("2.5", "how far apart positions look alike")
def check_half_offset(prediction: Any, fn: Callable[[int], int]) -> str:
    """Check ``fn(d_model)``, the first offset k at which PE[p] . PE[p + k] falls below half of PE[p] . PE[p],
    at d_model = 16, 64, 256 and 1024, then judge how it grows with d_model."""
    guess = read_prediction(prediction, HALF_OFFSET_OPTIONS)
    got = {}
    for d_model in (16, 64, 256, 1024):
        raw = call_student(fn, d_model, what="your half_offset")
        if raw is None:
            raise CheckFailed(f"half_offset({d_model}) returned None: if your table never drops below half, "
                              "make it longer (a few hundred positions) and return the first offset that does.")
        value = _as_int(raw, f"half_offset({d_model})")
        want = reference_half_offset(d_model)
        if value != want:
            mistakes = {
                reference_half_offset(d_model) - 1: "That is the last offset still above half: return the first "
                                                    "one below.",
                reference_half_offset(d_model, threshold=0.25): "Your threshold is a quarter: PE[p] . PE[p] is "
                                                                "d_model / 2 (each sin^2 + cos^2 pair gives 1), and "
                                                                "half of it is d_model / 4.",
                reference_half_offset(d_model, exponent="i/d"): "The frequencies are 10000^(-2i/d_model), with 2i "
                                                                "in the exponent.",
                1: "At k = 1 the similarity is still close to its maximum: compare with half of PE[p] . PE[p] "
                   "(d_model / 4), not with half of d_model.",
                0: "k = 0 is the position with itself: start at k = 1.",
            }
            hint = mistakes.get(value, "Compute PE[0] . PE[k] for k = 1, 2, ... (from the table or from the "
                                       "closed form) and return the first k below half of PE[0] . PE[0].")
            raise CheckFailed(f"half_offset({d_model}) is not the first offset below half. {hint}")
        got[d_model] = value
    verdict = judge_range(got[1024] / got[256], HALF_OFFSET_GROWTH, what="your measurement", show=True)
    return f"{verdict} {compare_prediction(guess, 'levels off', _HALF_OFFSET_WHY)}"


# ---------------------------------------------------------------- 2.6 reading a position off a d_model = 4 row
_TWO_PI = 2 * math.pi


def _angle(s: float, c: float) -> float:
    """The angle in [0, 2 pi) whose (sin, cos) is (s, c)."""
    return math.atan2(s, c) % _TWO_PI


def reference_position_from_row(row: Tensor) -> float:
    """p from the rounded row (sin p, cos p, sin p/100, cos p/100): the slow hand gives the turn, the fast one p."""
    s0, c0, s1, c1 = (float(v) for v in row)
    coarse = _angle(s1, c1) / 0.01  # good to a fraction of a position
    fine = _angle(s0, c0)  # exact up to whole turns of 2 pi
    return fine + _TWO_PI * round((coarse - fine) / _TWO_PI)


def _position_mistakes(row: Tensor) -> dict[str, float]:
    s0, c0, s1, c1 = (float(v) for v in row)
    return {
        "The first pair is a fast hand: it turns once every 2 pi (about 6.28) positions, so its angle alone "
        "only gives p up to whole turns. Use the slow pair to find which turn p is in.": _angle(s0, c0),
        "The slow pair alone is right to within a few tenths of a position once the row is rounded to three "
        "decimals; refine it with the fast pair (which turn from the slow hand, where in that turn from the "
        "fast one).": _angle(s1, c1) / 0.01,
        "The row stores (sin, cos): the angle is atan2(sin, cos) = atan2(row[0], row[1]), not "
        "atan2(row[1], row[0]).": (lambda f, c: f + _TWO_PI * round((c - f) / _TWO_PI))(
            math.atan2(c0, s0) % _TWO_PI, (math.atan2(c1, s1) % _TWO_PI) / 0.01),
        "atan2 returns angles in (-pi, pi]: add 2 pi to a negative one before dividing by the frequency, "
        "or positions past half a turn come out negative.": (lambda f, c: f + _TWO_PI * round((c - f) / _TWO_PI))(
            math.atan2(s0, c0), math.atan2(s1, c1) / 0.01),
        "Which turn p is in is the whole number nearest to (slow estimate - fast angle) / 2 pi, rounded: "
        "floor(slow estimate / 2 pi) is one turn off when p sits just below a multiple of 2 pi and the slow "
        "estimate lands a little past it.": _angle(s0, c0) + _TWO_PI * math.floor(_angle(s1, c1) / 0.01 / _TWO_PI),
        "The second pair's frequency is 10000^(-2i/d_model) with i = 1 and d_model = 4, that is 1/100; "
        "you divided by 10000^(-1/4) = 0.1.": (lambda f, c: f + _TWO_PI * round((c - f) / _TWO_PI))(
            _angle(s0, c0), _angle(s1, c1) / 0.1),
    }


# 25.13, 37.73 and 43.96 sit just below a multiple of 2 pi, where the slow hand's estimate may fall in the
# next turn: a turn counted with floor(slow / 2 pi) instead of rounding (slow - fast) / 2 pi fails there
POSITIONS_26 = (0.0, 1.0, 2.0, 4.0, 7.3, 25.13, 37.73, 42.0, 43.96, 100.0, 314.2, 471.9, 599.5)


@checker("2.6", "reading the position off a d_model = 4 row")
def check_position_from_row(fn: Callable[[Tensor], Any]) -> str:
    """Check ``fn(row)``: the position p in [0, 600) whose d_model = 4 row, rounded to 3 decimals, is ``row``."""
    for p in POSITIONS_26:
        row = torch.tensor([math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)],
                           dtype=torch.float64).round(decimals=3)
        answer = call_student(fn, row.clone(), what="my_position_from_row")
        got = as_number(answer, f"my_position_from_row(PE[{p:g}])")
        if abs(got - p) <= 0.01:
            continue
        mistakes = {hint: wrong for hint, wrong in _position_mistakes(row).items() if abs(wrong - p) > 0.01}
        fail_on_mistake(got, mistakes, lambda g, w: abs(g - w) <= 1e-6,
                        f"my_position_from_row(PE[{p:g}]) returned {fmt_number(got)}. ")
        raise CheckFailed(f"my_position_from_row(PE[{p:g}]) returned {fmt_number(got)}, expected {p:g} "
                          "(within 0.01). Read each pair as a clock hand: its angle is atan2(sin, cos) in [0, 2 pi), "
                          "divided by the pair's frequency.")
    return f"{len(POSITIONS_26)} positions from 0 to {POSITIONS_26[-1]:g} read back within 0.01."
