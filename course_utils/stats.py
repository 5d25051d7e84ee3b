"""Sampling noise of measured rates: binomial intervals and a two-rate comparison. Chapters 9-10.

An exact-match score such as "99.2 % of 1,000 strings" is a count of successes among a fixed
number of independent trials, so it carries binomial sampling noise. ``binomial_interval`` gives
the Wilson score interval (Wilson 1927), which stays inside [0, 1] and behaves well at 0 % and
100 %, where the textbook normal interval collapses to a single point. ``rates_differ`` says
whether two such rates differ by more than that noise (a two-sided two-proportion z-test with the
pooled rate). ``rate_with_interval`` formats one rate for a printed table.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from course_utils.validate import check_int, check_number

__all__ = ["binomial_interval", "rate_with_interval", "rates_differ"]


def _counts(successes: object, trials: object, suffix: str = "") -> tuple[int, int]:
    n = check_int(f"trials{suffix}", trials, low=1)
    k = check_int(f"successes{suffix}", successes, low=0, high=n)
    return k, n


def _z(confidence: object) -> float:
    level = check_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    return NormalDist().inv_cdf(0.5 + level / 2)


def binomial_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval (low, high) for a rate of ``successes`` out of ``trials``, as fractions."""
    k, n = _counts(successes, trials)
    z = _z(confidence)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    if k == 0:
        low = 0.0  # exactly: no success observed cannot rule out a rate of 0
    if k == n:
        high = 1.0
    return low, high


def rates_differ(successes_a: int, trials_a: int, successes_b: int, trials_b: int, confidence: float = 0.95) -> bool:
    """True if the two rates differ by more than binomial sampling noise (two-sided z-test, pooled rate)."""
    ka, na = _counts(successes_a, trials_a, "_a")
    kb, nb = _counts(successes_b, trials_b, "_b")
    z = _z(confidence)
    pooled = (ka + kb) / (na + nb)
    if pooled in (0.0, 1.0):
        return False  # both all failures or both all successes: no difference at all
    se = math.sqrt(pooled * (1 - pooled) * (1 / na + 1 / nb))
    return abs(ka / na - kb / nb) > z * se


def rate_with_interval(successes: int, trials: int, confidence: float = 0.95, digits: int = 1) -> str:
    """'99.7 % [99.6, 99.8] of 17,576': the rate in percent, its Wilson interval and the number of trials."""
    k, n = _counts(successes, trials)
    digits = check_int("digits", digits, low=0, high=4)
    low, high = binomial_interval(k, n, confidence)
    return f"{100 * k / n:.{digits}f} % [{100 * low:.{digits}f}, {100 * high:.{digits}f}] of {n:,}"
