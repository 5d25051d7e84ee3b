"""Tests for the Chapter 10 checkers: pass the reference, fail known mistakes with the right hint, stubs."""

from __future__ import annotations

import pytest
import torch

from course_utils.ablations import table1_counts
from course_utils.exercises.ch10_why_transformer import (
    check_additive_attention,
    check_steps_to_threshold,
    check_table1,
    check_worst_row,
    reference_additive_weights,
    reference_steps_to_threshold,
    reference_worst_row,
)


def _stub(*args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize("check", [check_additive_attention, check_table1, check_steps_to_threshold, check_worst_row])
def test_stub_is_not_implemented_yet(check):
    result = check(_stub)
    assert not result.passed and result.not_implemented and "not implemented yet" in result.message


# ----- 10.1 additive attention -----------------------------------------------------------------

def additive_loop(s, keys, W_s, W_h, v, keep):
    """An independent per-element version of the reference."""
    B, T, _ = keys.shape
    out = torch.zeros(B, T)
    for b in range(B):
        scores = torch.tensor([float(v @ torch.tanh(W_s @ s[b] + W_h @ keys[b, j])) for j in range(T)])
        scores[~keep[b]] = float("-inf")
        out[b] = torch.softmax(scores, dim=0)
    return out


def additive_no_tanh(s, keys, W_s, W_h, v, keep):
    scores = (((s @ W_s.T)[:, None] + keys @ W_h.T) @ v).masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=-1)


def additive_no_mask(s, keys, W_s, W_h, v, keep):
    return torch.softmax(torch.tanh((s @ W_s.T)[:, None] + keys @ W_h.T) @ v, dim=-1)


def additive_zero_mask(s, keys, W_s, W_h, v, keep):
    return torch.softmax((torch.tanh((s @ W_s.T)[:, None] + keys @ W_h.T) @ v).masked_fill(~keep, 0.0), dim=-1)


def additive_wrong_dim(s, keys, W_s, W_h, v, keep):
    scores = (torch.tanh((s @ W_s.T)[:, None] + keys @ W_h.T) @ v).masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=0).nan_to_num(0.0)


def test_additive_reference_matches_loop_and_passes():
    from course_utils.exercises.ch10_why_transformer import _additive_inputs

    args = _additive_inputs(0)
    torch.testing.assert_close(reference_additive_weights(*args), additive_loop(*args))
    assert check_additive_attention(additive_loop).passed
    assert check_additive_attention(reference_additive_weights).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (additive_no_tanh, "forget the tanh"), (additive_no_mask, "Padding keys get weight"),
    (additive_zero_mask, "set to 0, not -inf"), (additive_wrong_dim, "wrong dimension"),
])
def test_additive_checker_names_mistake(fn, hint):
    result = check_additive_attention(fn)
    assert not result.passed and hint in result.message


# ----- 10.2 Table 1 ----------------------------------------------------------------------------

def table1_ok(T, d):
    return {"self_attention": {"ops_per_layer": T * T * d, "sequential": 1, "path_length": 1},
            "recurrent": {"ops_per_layer": T * d * d, "sequential": T, "path_length": T}}


def table1_swapped(T, d):
    out = table1_ok(T, d)
    out["self_attention"]["ops_per_layer"], out["recurrent"]["ops_per_layer"] = T * d * d, T * T * d
    return out


def table1_sequential_attention(T, d):
    out = table1_ok(T, d)
    out["self_attention"]["sequential"] = T
    return out


def table1_short_recurrent_path(T, d):
    out = table1_ok(T, d)
    out["recurrent"]["path_length"] = 1
    return out


def table1_log_path(T, d):
    out = table1_ok(T, d)
    out["self_attention"]["path_length"] = max(1, T.bit_length())
    return out


def test_table1_reference():
    assert table1_counts(10, 64) == table1_ok(10, 64)
    assert check_table1(table1_ok).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (table1_swapped, "swapped"), (table1_sequential_attention, "one sequential step"),
    (table1_short_recurrent_path, "longest path is T"), (table1_log_path, "'path_length'] should be 1"),
    (lambda T, d: [T, d], "should return a dict"),
])
def test_table1_checker_names_mistake(fn, hint):
    result = check_table1(fn)
    assert not result.passed and hint in result.message


# ----- 10.3 steps to 99 % ----------------------------------------------------------------------

def steps_ok(accs, threshold=0.99, window=10):
    for i in range(window, len(accs) + 1):
        if sum(accs[i - window:i]) / window >= threshold:
            return i
    return None


def steps_zero_based(accs, threshold=0.99, window=10):
    step = steps_ok(accs, threshold, window)
    return None if step is None else step - 1


def steps_no_window(accs, threshold=0.99, window=10):
    return next((i + 1 for i, a in enumerate(accs) if a >= threshold), None)


def steps_minus_one(accs, threshold=0.99, window=10):
    step = steps_ok(accs, threshold, window)
    return -1 if step is None else step


def steps_strict(accs, threshold=0.99, window=10):
    for i in range(window, len(accs) + 1):
        if sum(accs[i - window:i]) / window > threshold:
            return i
    return None


def test_steps_reference():
    assert reference_steps_to_threshold([1.0] * 10) == 10
    assert reference_steps_to_threshold([0.0] * 9 + [1.0] * 10, 0.99, 10) == 19
    assert reference_steps_to_threshold([1.0] * 5) is None
    assert check_steps_to_threshold(steps_ok).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (steps_zero_based, "Off by one"), (steps_no_window, "first single batch"), (steps_minus_one, "return None"),
    (steps_strict, "compare with >="),
])
def test_steps_checker_names_mistake(fn, hint):
    result = check_steps_to_threshold(fn)
    assert not result.passed and hint in result.message


# ----- 10.4 worst row --------------------------------------------------------------------------

def worst_ok(table):
    return max(table, key=lambda k: (-table[k]["exact_match"],
                                     float("inf") if table[k]["final_loss"] is None else table[k]["final_loss"]))


def worst_best(table):
    return max(table, key=lambda k: table[k]["exact_match"])


def worst_ignores_none(table):
    return max(table, key=lambda k: (-table[k]["exact_match"], table[k]["final_loss"] or 0.0))


def worst_low_loss_tie(table):
    return min(table, key=lambda k: (table[k]["exact_match"], table[k]["final_loss"] or 0.0))


def worst_returns_row(table):
    return table[worst_ok(table)]


def test_worst_reference():
    table = {"a": {"exact_match": 5.0, "final_loss": 1.0}, "b": {"exact_match": 5.0, "final_loss": None}}
    assert reference_worst_row(table) == "b"
    assert check_worst_row(worst_ok).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (worst_best, "returned the best row"), (worst_ignores_none, "diverged"),
    (worst_low_loss_tie, "break the tie"), (worst_returns_row, "row's name"),
])
def test_worst_checker_names_mistake(fn, hint):
    result = check_worst_row(fn)
    assert not result.passed and hint in result.message
