"""Checker for Chapter 9's exercise on stretching RoPE's context (Exercise 9.6).

The learner derives how much more slowly each rotation pair turns after the context is stretched by
position interpolation (Chen et al., 2023) or by NTK-aware base scaling; the checker compares with
the ratio of the frequencies of :func:`course_utils.positional.rope_tables` and names the usual slips.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..positional import ntk_base, pe_frequencies
from .core import CheckFailed, call_student, checker, expect_close

__all__ = ["check_rope_slowdown"]


def reference_slowdown(d_k: int, method: str, factor: float) -> torch.Tensor:
    """(d_k/2,) float64: trained angle per position / stretched angle per position, pair by pair."""
    trained = pe_frequencies(d_k)
    if method == "interpolation":
        return torch.full_like(trained, float(factor))
    return trained / pe_frequencies(d_k, ntk_base(d_k, factor))


@checker("9.6", "how much each RoPE pair slows down")
def check_rope_slowdown(fn: Callable[[int, str, float], Any]) -> str:
    """Check ``fn(d_k, method, factor)``: (d_k/2,) slowdown of every pair for "interpolation" and "ntk"."""
    for d_k, factor in [(16, 4.0), (8, 2.5), (64, 3.0), (4, 1.0)]:
        for method in ("interpolation", "ntk"):
            got = call_student(fn, d_k, method, factor, what="my_rope_slowdown")
            if isinstance(got, (list, tuple)):
                got = torch.tensor(got, dtype=torch.float64)
            if not isinstance(got, torch.Tensor):
                raise CheckFailed(f"my_rope_slowdown should return a tensor of d_k/2 = {d_k // 2} ratios, "
                                  f"got {type(got).__name__}")
            want = reference_slowdown(d_k, method, factor)
            i = torch.arange(d_k // 2, dtype=torch.float64)
            mistakes = {
                "That is how much faster each pair turns (trained / stretched the other way round): the "
                "slowdown is the trained angle per position divided by the stretched one, >= 1.": 1 / want,
            }
            if factor != 4.0:
                mistakes["The factor s is an argument: your slowdown matches a fixed s = 4 (the chapter's value)."] = (
                    reference_slowdown(d_k, method, 4.0))
            if method == "ntk":
                mistakes.update({
                    "Pairs are counted from i = 0 (the fastest pair, which NTK-aware scaling leaves as trained): "
                    "with i from 1 the first pair already slows and the last one by more than s.":
                        factor ** (2 * (i + 1) / (d_k - 2)),
                    "The exponent 2i/(d_k-2) is a fraction: integer division (//) rounds it down to 0 for every "
                    "pair but the last.": factor ** ((2 * i) // (d_k - 2)),
                    "The stretched frequency is (base s^(d_k/(d_k-2)))^(-2i/d_k): the factor's exponent is "
                    "2i/(d_k-2), not 2i/d_k, so that the last pair (i = d_k/2 - 1) slows by exactly s.":
                        factor ** (2 * i / d_k),
                    "NTK-aware scaling is not a straight line from 1 to s: the slowdown grows geometrically with "
                    "i, s^(2i/(d_k-2)).": 1 + (factor - 1) * i / max(d_k // 2 - 1, 1),
                    "That is position interpolation (every pair s times slower); NTK-aware scaling keeps the "
                    "fastest pair as trained.": torch.full_like(want, float(factor)),
                    "The base is multiplied by s^(d_k/(d_k-2)): the slowest pair slows by s, not by that power "
                    "(did you leave out the -2i/d_k exponent?).": torch.full_like(want, factor ** (d_k / (d_k - 2))),
                })
            else:
                mistakes.update({
                    "Interpolation divides every position by s, so every pair turns s times more slowly, the "
                    "fastest as much as the slowest.": factor ** (2 * i / (d_k - 2)) if d_k > 2 else want,
                })
            mistakes = {h: w for h, w in mistakes.items() if not torch.allclose(w, want)}
            expect_close(got, want, f"my_rope_slowdown({d_k}, {method!r}, {factor})", mistakes, atol=1e-6)
    return ("Interpolation slows every pair by s; NTK-aware scaling slows pair i by s^(2i/(d_k-2)): 1 for the "
            "fastest, s for the slowest.")
