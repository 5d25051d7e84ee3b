"""course_utils.schedules against hand calculations and the shape of each curve."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest

from course_utils.schedules import vaswani_lr, warmup_cosine_lr


@pytest.mark.parametrize(("d_model", "warmup"), [(512, 4000), (64, 10), (16, 1)])
def test_vaswani_peak_at_warmup(d_model, warmup):
    peak = vaswani_lr(warmup, d_model, warmup)
    assert peak == pytest.approx(d_model**-0.5 * warmup**-0.5, rel=1e-12)
    steps = range(1, 5 * warmup + 2)
    assert max(vaswani_lr(s, d_model, warmup) for s in steps) == pytest.approx(peak, rel=1e-12)


def test_vaswani_hand_calculations():
    assert vaswani_lr(1, 512, 4000) == pytest.approx(512**-0.5 * 4000**-1.5, rel=1e-12)
    assert vaswani_lr(16000, 512, 4000) == pytest.approx(512**-0.5 / 126.49110640673517, rel=1e-12)
    assert vaswani_lr(4000, 512, 4000) == pytest.approx(6.987712429686844e-4, rel=1e-12)
    assert vaswani_lr(100, 64, 4) == pytest.approx(0.125 * 0.1, rel=1e-12)  # decay: 64^-0.5 * 100^-0.5


def test_vaswani_monotone_pieces():
    warmup = 50
    rising = [vaswani_lr(s, 128, warmup) for s in range(1, warmup + 1)]
    falling = [vaswani_lr(s, 128, warmup) for s in range(warmup, 20 * warmup)]
    assert all(a < b for a, b in pairwise(rising))
    assert all(a > b for a, b in pairwise(falling))
    # warm-up is linear in the step
    assert rising[9] == pytest.approx(10 * rising[0], rel=1e-12)


def test_warmup_cosine_hand_calculations_and_shape():
    peak, warmup, total = 1e-3, 10, 110
    assert warmup_cosine_lr(5, peak, warmup, total) == pytest.approx(5e-4)
    assert warmup_cosine_lr(warmup, peak, warmup, total) == pytest.approx(peak)
    assert warmup_cosine_lr(60, peak, warmup, total) == pytest.approx(peak / 2)  # half way: cos(pi/2) = 0
    assert warmup_cosine_lr(total, peak, warmup, total, min_lr=1e-5) == pytest.approx(1e-5)
    assert warmup_cosine_lr(10 * total, peak, warmup, total, min_lr=1e-5) == pytest.approx(1e-5)  # stays at min
    lrs = [warmup_cosine_lr(s, peak, warmup, total) for s in range(1, total + 1)]
    assert all(a < b for a, b in pairwise(lrs[:warmup]))
    assert all(a >= b for a, b in pairwise(lrs[warmup - 1:]))
    assert max(lrs) == pytest.approx(peak)
    assert warmup_cosine_lr(1, peak, 0, total) == pytest.approx(min_lr_cos(1, peak, total))


def min_lr_cos(step, peak, total):
    return 0.5 * peak * (1 + math.cos(math.pi * step / total))


def test_schedules_bad_input():
    with pytest.raises(ValueError, match="step must be a positive int, got 0"):
        vaswani_lr(0, 512)
    with pytest.raises(TypeError, match="d_model must be a positive int, got float 512.0"):
        vaswani_lr(1, 512.0)
    with pytest.raises(ValueError, match="warmup must be a positive int, got -5"):
        vaswani_lr(1, 512, -5)
    with pytest.raises(ValueError, match=r"warmup must be an int in \[0, total=100\), got 100"):
        warmup_cosine_lr(1, 1e-3, 100, 100)
    with pytest.raises(ValueError, match="total must be a positive int, got 0"):
        warmup_cosine_lr(1, 1e-3, 0, 0)
