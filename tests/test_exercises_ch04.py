"""Tests for the Chapter 4 checkers: pass the reference, fail known mistakes with the right hint, stubs."""

from __future__ import annotations

import pytest
import torch

from course_utils.exercises.ch04_masking import (
    check_causal_mask,
    check_masked_softmax,
    check_padding_mask,
)

# ----- reference solutions and realistic mistakes ---------------------------------------------

def causal_ok(T):
    return torch.ones(T, T, dtype=torch.bool).tril().view(1, 1, T, T)


def causal_upper(T):
    return torch.ones(T, T, dtype=torch.bool).triu().view(1, 1, T, T)


def causal_no_diag(T):
    return torch.ones(T, T, dtype=torch.bool).tril(-1).view(1, 1, T, T)


def causal_inverted(T):
    return torch.ones(T, T, dtype=torch.bool).triu(1).view(1, 1, T, T)


def causal_2d(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def causal_float(T):
    return torch.ones(1, 1, T, T).tril()


@pytest.mark.parametrize("fn,hint", [
    (causal_upper, "upper-triangular"),
    (causal_no_diag, "diagonal is masked"),
    (causal_inverted, "inverted"),
    (causal_2d, "Add batch and head dimensions"),
    (causal_float, "float 0/1"),
])
def test_causal_checker_names_mistake(fn, hint: str, capsys) -> None:
    result = check_causal_mask(fn)
    assert not result.passed and hint in result.message
    assert hint in capsys.readouterr().out


def test_causal_checker_passes_reference() -> None:
    assert check_causal_mask(causal_ok).passed


def pad_ok(tokens, pad_id):
    B, T = tokens.shape
    return (tokens != pad_id).view(B, 1, 1, T)


def pad_inverted(tokens, pad_id):
    B, T = tokens.shape
    return (tokens == pad_id).view(B, 1, 1, T)


def pad_2d(tokens, pad_id):
    return tokens != pad_id


def pad_query_side(tokens, pad_id):
    B, T = tokens.shape
    return (tokens != pad_id).view(B, 1, T, 1)


def pad_fixed_zero(tokens, pad_id):
    B, T = tokens.shape
    return (tokens != 0).view(B, 1, 1, T)


def pad_float(tokens, pad_id):
    B, T = tokens.shape
    return (tokens != pad_id).float().view(B, 1, 1, T)


@pytest.mark.parametrize("fn,hint", [
    (pad_inverted, "inverted: True marks the padding"),
    (pad_2d, "Reshape with .view(B, 1, 1, T)"),
    (pad_query_side, "not (B, 1, T, 1)"),
    (pad_fixed_zero, "does not depend on pad_id"),
    (pad_float, "float 0/1"),
])
def test_padding_checker_names_mistake(fn, hint: str) -> None:
    result = check_padding_mask(fn)
    assert not result.passed and hint in result.message


def test_padding_checker_passes_reference() -> None:
    assert check_padding_mask(pad_ok).passed


def softmax_ok(scores, mask):
    any_kept = mask.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~any_kept, 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


def softmax_nan(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


def softmax_big_negative(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)


def softmax_inverted(scores, mask):
    return softmax_ok(scores, ~mask)


def softmax_zero_fill(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, 0.0), dim=-1)


def softmax_post_zero(scores, mask):
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


@pytest.mark.parametrize("fn,hint", [
    (softmax_nan, "returns NaN"),
    (softmax_big_negative, "not uniform"),
    (softmax_inverted, "inverted"),
    (softmax_zero_fill, "set to 0, not -inf"),
    (softmax_post_zero, "not renormalised"),
])
def test_masked_softmax_checker_names_mistake(fn, hint: str) -> None:
    result = check_masked_softmax(fn)
    assert not result.passed and hint in result.message


def test_masked_softmax_checker_passes_reference() -> None:
    assert check_masked_softmax(softmax_ok).passed


def test_checker_reports_crash_without_traceback() -> None:
    result = check_causal_mask(lambda T: torch.ones(T, T)[T])
    assert not result.passed and "raised IndexError" in result.message
