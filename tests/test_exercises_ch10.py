"""Tests for the Chapter 10 checkers: pass the reference, fail known mistakes with the right hint, stubs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import stub as _stub

from course_utils.exercises.ch10_why_transformer import (
    CROSSOVER_OPTIONS,
    WORST_ROW_OPTIONS,
    _additive_inputs,
    check_loglog_crossover,
    check_steps_to_threshold,
    check_weights_without_tanh,
    check_worst_row,
    crossover_expected,
    crossover_length,
    reference_loglog_fit,
    reference_steps_to_threshold,
    reference_weights_without_tanh,
    reference_worst_row,
)
from course_utils.exercises.experiment import _fmt
from course_utils.runs.ablations import load_ablations


@pytest.mark.parametrize("call", [
    lambda: check_weights_without_tanh(_stub), lambda: check_steps_to_threshold(_stub),
    lambda: check_loglog_crossover(reference_loglog_fit, _stub), lambda: check_loglog_crossover(_stub, "never"),
    lambda: check_worst_row(reference_worst_row, _stub), lambda: check_worst_row(_stub, "heads_1"),
    lambda: check_loglog_crossover(reference_loglog_fit, ""),
])
def test_stub_is_not_implemented_yet(call):
    result = call()
    assert not result.passed and result.not_implemented and "not implemented yet" in result.message


# ----- 10.1 additive attention without the tanh ------------------------------------------------

def no_tanh_full(s, keys, W_s, W_h, v, keep):
    """The full formula with the tanh removed, decoder state included: the derivation's starting point."""
    scores = (((s @ W_s.T)[:, None] + keys @ W_h.T) @ v).masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=-1)


def no_tanh_loop(keys, W_h, v, keep):
    B, T, _ = keys.shape
    out = torch.zeros(B, T)
    for b in range(B):
        scores = torch.tensor([float(v @ (W_h @ keys[b, j])) for j in range(T)])
        scores[~keep[b]] = float("-inf")
        out[b] = torch.softmax(scores, dim=0)
    return out


def test_weights_without_tanh_do_not_depend_on_the_state():
    s, keys, W_s, W_h, v, keep = _additive_inputs(1)
    want = reference_weights_without_tanh(keys, W_h, v, keep)
    for state in (s, torch.zeros_like(s), 10 * s):
        torch.testing.assert_close(no_tanh_full(state, keys, W_s, W_h, v, keep), want)
    torch.testing.assert_close(no_tanh_loop(keys, W_h, v, keep), want)


def test_weights_without_tanh_accepts_alternatives():
    assert check_weights_without_tanh(reference_weights_without_tanh).passed
    assert check_weights_without_tanh(no_tanh_loop).passed
    assert check_weights_without_tanh(
        lambda k, W, v, keep: torch.softmax(torch.einsum("btd,ad,a->bt", k, W, v).masked_fill(~keep, -1e30), -1)
    ).passed


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda k, W, v, keep: torch.softmax((torch.tanh(k @ W.T) @ v).masked_fill(~keep, float("-inf")), -1),
     "You kept the tanh"),
    (lambda k, W, v, keep: keep.float() / keep.sum(-1, keepdim=True), "not uniform"),
    (lambda k, W, v, keep: torch.softmax((k @ W.T) @ v, -1), "Padding keys get weight"),
    (lambda k, W, v, keep: torch.softmax(((k @ W.T) @ v).masked_fill(~keep, 0.0), -1), "not -inf"),
    (lambda k, W, v, keep: torch.softmax(((k @ W.T) @ v).masked_fill(~keep, float("-inf")), 0).nan_to_num(0.0),
     "wrong dimension"),
])
def test_weights_without_tanh_names_mistake(fn, hint):
    result = check_weights_without_tanh(fn)
    assert not result.passed and hint in result.message


# ----- 10.2 log-log fits and the crossover -----------------------------------------------------

def fit_lstsq(lengths, ms):
    x = torch.tensor(lengths, dtype=torch.float64).log2()
    A = torch.stack([x, torch.ones_like(x)], dim=1)
    solution = torch.linalg.lstsq(A, torch.tensor(ms, dtype=torch.float64).log2()[:, None]).solution[:, 0]
    return float(solution[0]), float(solution[1])


def test_loglog_fit_recovers_a_power_law():
    slope, intercept = reference_loglog_fit([2, 4, 8, 16], [3 * n**1.5 for n in (2, 4, 8, 16)])
    assert math.isclose(slope, 1.5) and math.isclose(intercept, math.log2(3))
    assert math.isclose(crossover_length((1.0, 0.0), (2.0, -3.0)), 8.0)  # n = n^2 / 8 at n = 8
    assert crossover_length((1.0, 0.0), (1.0, 1.0)) == math.inf


@pytest.mark.parametrize("fn", [reference_loglog_fit, fit_lstsq,
                                lambda n, ms: tuple(np.polyfit(np.log2(n), np.log2(ms), 1))])
def test_loglog_checker_accepts_alternatives(fn):
    expected = crossover_expected(load_ablations()["timing"])
    result = check_loglog_crossover(fn, _shipped_outcome())
    assert result.passed and f"between {_fmt(expected.low)} and {_fmt(expected.high)}" in result.message
    assert "matches" in result.message


def _shipped_outcome():
    """The choice the shipped timings make true: the crossover of the full-span fits, by hand."""
    t = load_ablations()["timing"]
    n = crossover_length(reference_loglog_fit(t["lengths"], t["ms_per_step"]["1"]["transformer"]),
                         reference_loglog_fit(t["lengths"], t["ms_per_step"]["1"]["gru"]))
    return "never" if not math.isfinite(n) else "below 32" if n < 32 else "32 to 256" if n <= 256 else "above 256"


def test_crossover_range_follows_the_timings():
    """The range comes from the timings it judges: scaled GRU times move it, and it always holds the full-span fit."""
    lengths = [8, 16, 32, 64, 128]
    transformer = [10.0 * n**0.8 for n in lengths]
    for gru_scale, inside in ((5.0, 2.0 ** (5 / 3)), (0.5, 20.0 ** (5 / 3))):  # 10 n^0.8 = scale n^1.4
        gru = [gru_scale * n**1.4 for n in lengths]
        expected = crossover_expected({"lengths": lengths, "ms_per_step": {"1": {"transformer": transformer,
                                                                                 "gru": gru}}})
        n = crossover_length(reference_loglog_fit(lengths, transformer), reference_loglog_fit(lengths, gru))
        assert math.isclose(n, inside, rel_tol=0.05) and expected.low <= n <= expected.high
        assert ("short strings" in expected.meaning) == (expected.high < 32)


def test_loglog_checker_compares_a_wrong_prediction_without_failing():
    wrong = "above 256" if _shipped_outcome() != "above 256" else "below 32"
    result = check_loglog_crossover(reference_loglog_fit, wrong)
    assert result.passed and f"You predicted '{wrong}'" in result.message
    assert set(CROSSOVER_OPTIONS) == {"below 32", "32 to 256", "above 256", "never"}


@pytest.mark.parametrize(("fn", "prediction", "hint"), [
    (lambda n, ms: tuple(np.polyfit(np.log(n), np.log(ms), 1)), "never", "natural logs"),
    (lambda n, ms: tuple(np.polyfit(n, ms, 1)), "never", "raw times"),
    (lambda n, ms: tuple(np.polyfit(np.log2(ms), np.log2(n), 1)), "never", "axes are swapped"),
    (lambda n, ms: ((math.log2(ms[-1] / ms[0]) / math.log2(n[-1] / n[0])),
                    math.log2(ms[0]) - math.log2(ms[-1] / ms[0]) / math.log2(n[-1] / n[0]) * math.log2(n[0])),
     "never", "first and the last point"),
    (lambda n, ms: (reference_loglog_fit(n, ms)[0], 0.0), "never", "intercept is not"),
    (reference_loglog_fit, "soon", "not one of the choices"),
    (lambda n, ms: reference_loglog_fit(n, ms)[0], "never", "(slope, intercept)"),
])
def test_loglog_checker_names_mistake(fn, prediction, hint):
    result = check_loglog_crossover(fn, prediction)
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
    result = check_worst_row(worst_ok, "no_residual")
    assert result.passed and "300 steps" in result.message and "matches" in result.message
    assert check_worst_row(lambda t: sorted(t, key=lambda k: (t[k]["exact_match"], -(t[k]["final_loss"] or 1e9)))[0],
                           "heads_1").passed


def test_worst_row_answer_comes_only_after_the_prediction():
    result = check_worst_row(worst_ok, "")
    assert result.not_implemented and "no_residual" not in result.message
    assert set(WORST_ROW_OPTIONS) == {"heads_1", "no_positions", "no_residual", "no_layer_norm"}
    result = check_worst_row(worst_ok, "no_positions")
    assert result.passed and "You predicted 'no_positions'" in result.message


@pytest.mark.parametrize(("fn", "hint"), [
    (worst_best, "returned the best row"), (worst_ignores_none, "diverged"),
    (worst_low_loss_tie, "break the tie"), (worst_returns_row, "row's name"),
])
def test_worst_checker_names_mistake(fn, hint):
    result = check_worst_row(fn, "no_residual")
    assert not result.passed and hint in result.message
