"""Tests for the Chapter 6 checkers: pass the reference, fail known mistakes with the right hint, stubs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from course_utils.data import EOS_ID, PAD_ID, SOS_ID
from course_utils.exercises.ch06_training import (
    check_exact_match,
    check_masked_cross_entropy,
    check_shift_right,
    check_temperature_probs,
)


def _msg(result, capsys) -> str:
    return result.message + capsys.readouterr().out


# ----- 6.1 teacher-forcing shift ---------------------------------------------------------------

def shift_ok(tgt_out):
    sos = torch.full((tgt_out.shape[0], 1), SOS_ID)
    tgt_in = torch.cat([sos, tgt_out[:, :-1]], dim=1)
    return tgt_in.masked_fill(tgt_in == EOS_ID, PAD_ID)


def shift_keeps_eos(tgt_out):
    return torch.cat([torch.full((tgt_out.shape[0], 1), SOS_ID), tgt_out[:, :-1]], dim=1)


def shift_left(tgt_out):
    return torch.cat([tgt_out[:, 1:], torch.full((tgt_out.shape[0], 1), PAD_ID)], dim=1)


def shift_pad_first(tgt_out):
    return shift_ok(tgt_out).index_fill(1, torch.tensor([0]), PAD_ID)


def shift_no_drop(tgt_out):
    return torch.cat([torch.full((tgt_out.shape[0], 1), SOS_ID), tgt_out], dim=1)


@pytest.mark.parametrize(("fn", "hint"), [
    (shift_keeps_eos, "EOS token is still"), (shift_left, "Off by one"), (shift_pad_first, "must be SOS"),
    (shift_no_drop, "Drop the last column"), (lambda t: t, "unchanged"),
])
def test_shift_checker_names_mistake(fn, hint, capsys):
    result = check_shift_right(fn)
    assert not result.passed and hint in result.message


def test_shift_checker_passes_reference():
    assert check_shift_right(shift_ok).passed


# ----- 6.2 masked cross-entropy ----------------------------------------------------------------

def ce_ok(logits, targets, pad_id):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=pad_id)


def _per_token(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none").view(
        targets.shape)


def ce_with_pad(logits, targets, pad_id):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def ce_wrong_denominator(logits, targets, pad_id):
    return (_per_token(logits, targets) * (targets != pad_id)).sum() / targets.numel()


def ce_sum(logits, targets, pad_id):
    return (_per_token(logits, targets) * (targets != pad_id)).sum()


def ce_per_sequence(logits, targets, pad_id):
    keep = (targets != pad_id).float()
    return ((_per_token(logits, targets) * keep).sum(1) / keep.sum(1)).mean()


@pytest.mark.parametrize(("fn", "hint"), [
    (ce_with_pad, "averaged over the PAD positions"), (ce_wrong_denominator, "still divided by all"),
    (ce_sum, "returned the sum"), (ce_per_sequence, "per sequence first"),
    (lambda lg, t, p: _per_token(lg, t), "single number"),
])
def test_ce_checker_names_mistake(fn, hint):
    result = check_masked_cross_entropy(fn)
    assert not result.passed and hint in result.message


def test_ce_checker_passes_reference():
    assert check_masked_cross_entropy(ce_ok).passed


# ----- 6.3 temperature ---------------------------------------------------------------------------

@pytest.mark.parametrize(("fn", "hint"), [
    (lambda lg, t: torch.softmax(lg * t, dim=-1), "multiplied the logits"),
    (lambda lg, t: torch.softmax(lg, dim=-1), "temperature is not used"),
    (lambda lg, t: torch.softmax(lg, dim=-1) / t, "divided the probabilities"),
    (lambda lg, t: torch.softmax(lg / t, dim=0), "wrong dimension"),
])
def test_temperature_checker_names_mistake(fn, hint):
    result = check_temperature_probs(fn)
    assert not result.passed and hint in result.message


def test_temperature_checker_passes_reference():
    assert check_temperature_probs(lambda lg, t: torch.softmax(lg / t, dim=-1)).passed


# ----- 6.4 exact match -----------------------------------------------------------------------------

def em_ok(preds, targets):
    return sum(p == t for p, t in zip(preds, targets, strict=True)) / len(targets)


def em_count(preds, targets):
    return sum(p == t for p, t in zip(preds, targets, strict=True))


def em_prefix(preds, targets):
    ok = [all(a == b for a, b in zip(p, t, strict=False)) for p, t in zip(preds, targets, strict=True)]
    return sum(ok) / len(targets)


def em_chars(preds, targets):
    right = sum(sum(a == b for a, b in zip(p, t, strict=False)) for p, t in zip(preds, targets, strict=True))
    return right / sum(len(t) for t in targets)


@pytest.mark.parametrize(("fn", "hint"), [
    (em_count, "number of matches"), (em_prefix, "prefix"), (em_chars, "per-character"),
    (lambda p, t: "1.0", "should return a number"),
])
def test_exact_match_checker_names_mistake(fn, hint):
    result = check_exact_match(fn)
    assert not result.passed and hint in result.message


def test_exact_match_checker_passes_reference():
    assert check_exact_match(em_ok).passed


def test_checker_reports_crash_without_traceback(capsys):
    def broken(tgt_out):
        raise IndexError("oops")
    result = check_shift_right(broken)
    assert not result.passed and "IndexError" in result.message
