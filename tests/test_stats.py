"""Tests for course_utils.stats: Wilson intervals and the two-rate comparison."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.stats import binomial_interval, rate_with_interval, rates_differ


def test_wilson_interval_matches_hand_calculation() -> None:
    # Wilson (1927): centre (p + z^2/2n) / (1 + z^2/n), computed by hand for 8 of 10 at 95 %
    z = 1.959963984540054
    p = 0.8  # 8 of n = 10
    centre = (p + z * z / 20) / (1 + z * z / 10)
    half = z / (1 + z * z / 10) * math.sqrt(p * (1 - p) / 10 + z * z / 400)
    low, high = binomial_interval(8, 10)
    assert low == pytest.approx(centre - half, abs=1e-12)
    assert high == pytest.approx(centre + half, abs=1e-12)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)  # published table value


def test_interval_contains_rate_and_shrinks_with_trials() -> None:
    for k, n in ((0, 5), (3, 7), (99, 100), (100, 100), (17_521, 17_576)):
        low, high = binomial_interval(k, n)
        assert 0.0 <= low <= k / n <= high <= 1.0
    narrow, wide = binomial_interval(990, 1000), binomial_interval(99, 100)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]
    assert binomial_interval(0, 10)[0] == 0.0 and binomial_interval(10, 10)[1] == 1.0
    # a higher confidence gives a wider interval
    a, b = binomial_interval(50, 100, 0.9), binomial_interval(50, 100, 0.99)
    assert b[0] < a[0] and b[1] > a[1]


def test_interval_coverage_by_simulation() -> None:
    # about 95 % of intervals from simulated binomial draws contain the true rate
    g = torch.Generator().manual_seed(0)
    p, n = 0.9, 200
    draws = torch.binomial(torch.full((2000,), float(n)), torch.full((2000,), p), generator=g).long().tolist()
    covered = sum(lo <= p <= hi for lo, hi in (binomial_interval(k, n) for k in draws)) / len(draws)
    assert 0.93 <= covered <= 0.97


def test_rates_differ() -> None:
    assert not rates_differ(992, 1000, 995, 1000)  # 3 strings apart: noise
    assert rates_differ(860, 1000, 995, 1000)
    assert not rates_differ(100, 100, 100, 100) and not rates_differ(0, 50, 0, 80)
    assert rates_differ(0, 100, 100, 100)
    assert rates_differ(96, 100, 97, 100) is False


def test_rate_with_interval_format() -> None:
    assert rate_with_interval(17_521, 17_576) == "99.7 % [99.6, 99.8] of 17,576"
    assert rate_with_interval(1, 2, digits=0).endswith("of 2")


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((5, 0), ValueError, "trials must be a positive int, got 0"),
        ((6, 5), ValueError, r"successes must be an int in \[0, 5\], got 6"),
        ((1.5, 5), TypeError, "successes must be an int"),
        ((1, 5, 1.0), ValueError, "confidence must be a number in"),
    ],
)
def test_bad_inputs(args: tuple, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        binomial_interval(*args)


def test_bad_inputs_name_the_rate() -> None:
    with pytest.raises(ValueError, match="trials_b must be a positive int"):
        rates_differ(1, 2, 0, 0)
