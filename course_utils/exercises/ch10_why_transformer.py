"""Checkers for the exercises of Chapter 10 (why the Transformer won, measured)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from ..ablations import table1_counts
from ..runs.ablations import load_ablations
from .core import CheckFailed, call_student, checker, expect_close


def _additive_inputs(seed: int) -> tuple[Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    B, T, d_s, d_h, d_a = 3, 5, 4, 6, 7
    s, keys = torch.randn(B, d_s, generator=g), torch.randn(B, T, d_h, generator=g)
    W_s, W_h, v = torch.randn(d_a, d_s, generator=g), torch.randn(d_a, d_h, generator=g), torch.randn(d_a, generator=g)
    keep = torch.ones(B, T, dtype=torch.bool)
    keep[1, 3:] = False  # a padded source
    keep[2, 1:] = False  # a source of one token: all weight on it
    return s, keys, W_s, W_h, v, keep


def reference_additive_weights(s: Tensor, keys: Tensor, W_s: Tensor, W_h: Tensor, v: Tensor, keep: Tensor) -> Tensor:
    """Bahdanau weights softmax_j(v . tanh(W_s s + W_h h_j)) over kept keys: (B, T). Chapter 10."""
    scores = torch.tanh((s @ W_s.T)[:, None, :] + keys @ W_h.T) @ v  # (B, 1, d_a) + (B, T, d_a) -> (B, T)
    return torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)


@checker("10.1", "Bahdanau's additive attention")
def check_additive_attention(fn: Callable[..., Tensor]) -> None:
    """Check ``fn(s, keys, W_s, W_h, v, keep)`` returns the additive attention weights (B, T_src)."""
    for seed in range(3):
        s, keys, W_s, W_h, v, keep = _additive_inputs(seed)
        got = call_student(fn, s.clone(), keys.clone(), W_s, W_h, v, keep.clone(), what="your additive_weights")
        proj = (s @ W_s.T)[:, None, :] + keys @ W_h.T  # (B, T, d_a)
        mistakes = {
            "Did you forget the tanh? The score is v . tanh(W_s s + W_h h_j), a one-hidden-layer network.":
                torch.softmax((proj @ v).masked_fill(~keep, float("-inf")), dim=-1),
            "Padding keys get weight: set their scores to -inf before the softmax (keep == False).":
                torch.softmax(torch.tanh(proj) @ v, dim=-1),
            "Masked scores were set to 0, not -inf: exp(0) = 1 still gives padding weight.":
                torch.softmax((torch.tanh(proj) @ v).masked_fill(~keep, 0.0), dim=-1),
            "The softmax runs over the wrong dimension: normalise over the source positions (the last one).":
                torch.softmax((torch.tanh(proj) @ v).masked_fill(~keep, float("-inf")), dim=0).nan_to_num(0.0),
        }
        want = reference_additive_weights(s, keys, W_s, W_h, v, keep)
        expect_close(got, want, "additive_weights(...)", mistakes=mistakes)


_TABLE1_KEYS = ("ops_per_layer", "sequential", "path_length")


@checker("10.2", "the paper's Table 1, counted")
def check_table1(fn: Callable[[int, int], Mapping[str, Mapping[str, int]]]) -> None:
    """Check ``fn(T, d)`` gives ops per layer, sequential operations and path length for both layer types."""
    for T, d in ((8, 64), (100, 16), (1, 5), (512, 512)):
        got = call_student(fn, T, d, what="your table1")
        want = table1_counts(T, d)
        if not isinstance(got, Mapping) or set(got) != set(want):
            raise CheckFailed(f"table1(T, d) should return a dict with keys {sorted(want)}, got {got!r:.80}")
        for layer in want:
            row = got[layer]
            if not isinstance(row, Mapping) or set(row) != set(_TABLE1_KEYS):
                raise CheckFailed(
                    f"table1(T, d)[{layer!r}] should be a dict with keys {list(_TABLE1_KEYS)}, got {row!r:.80}"
                )
        sa, rec = got["self_attention"], got["recurrent"]
        if T != d and (sa["ops_per_layer"], rec["ops_per_layer"]) == (T * d * d, T * T * d):
            raise CheckFailed("The operation counts are swapped: self-attention compares every pair of positions "
                              "(T^2 d), a recurrent layer multiplies a d x d matrix at each of T steps (T d^2).")
        if T > 1 and sa["sequential"] == T:
            raise CheckFailed("Self-attention needs only one sequential step: all positions are computed at once.")
        if T > 1 and rec["path_length"] == 1:
            raise CheckFailed("A recurrent layer's longest path is T: information from position 1 reaches position T "
                              "only through every state in between.")
        for layer in want:
            for key in _TABLE1_KEYS:
                if got[layer][key] != want[layer][key]:
                    raise CheckFailed(f"table1({T}, {d})[{layer!r}][{key!r}] should be {want[layer][key]}, "
                                      f"got {got[layer][key]!r}.")


def reference_steps_to_threshold(accs: Sequence[float], threshold: float = 0.99, window: int = 10) -> int | None:
    """First step (counted from 1) at which the mean of the last ``window`` accuracies is >= threshold. Chapter 10."""
    for i in range(window, len(accs) + 1):
        if sum(accs[i - window : i]) / window >= threshold:
            return i
    return None


@checker("10.3", "steps to 99 %")
def check_steps_to_threshold(fn: Callable[..., int | None]) -> None:
    """Check ``fn(accs, threshold, window)`` returns the first step whose running mean reaches the threshold."""
    g = torch.Generator().manual_seed(0)
    ramp = [min(1.0, i / 60) for i in range(1, 101)]
    noisy = [min(1.0, i / 50 + 0.05 * float(torch.rand(1, generator=g))) for i in range(1, 81)]
    spike = [0.2] * 5 + [1.0] + [0.3] * 10 + [1.0] * 30  # one lucky batch early on
    cases = [(ramp, 0.99, 10), (noisy, 0.99, 10), (spike, 0.99, 10), ([0.5] * 30, 0.99, 10),
             ([1.0] * 12, 0.99, 10), ([0.5] * 10, 0.5, 10), (ramp, 0.9, 5)]
    for accs, threshold, window in cases:
        got = call_student(fn, list(accs), threshold, window, what="your steps_to_threshold")
        want = reference_steps_to_threshold(accs, threshold, window)
        if got == want:
            continue
        first_single = next((i + 1 for i, a in enumerate(accs) if a >= threshold), None)
        if want is None and got in (0, -1, len(accs)):
            raise CheckFailed(f"When the threshold is never reached, return None (got {got!r}); "
                              "a number would look like a real step.")
        if want is not None and got == want - 1:
            raise CheckFailed(f"Off by one (got {got}, expected {want}): count steps from 1, "
                              "like the training loop, not list indices from 0.")
        strict = next((i for i in range(window, len(accs) + 1)
                       if sum(accs[i - window : i]) / window > threshold), None)
        if got == strict:
            raise CheckFailed(f"Reaching the threshold counts: compare with >=, not > (got {got!r}, want {want!r}).")
        if got == first_single:
            raise CheckFailed(f"You stopped at the first single batch above the threshold (step {got}); "
                              f"average the last {window} values first: one lucky batch is not learning.")
        if window != 10 and got == reference_steps_to_threshold(accs, threshold, 10):
            raise CheckFailed(f"Use the window argument (here {window}): your answer matches a fixed window of 10.")
        if threshold != 0.99 and got == reference_steps_to_threshold(accs, 0.99, window):
            raise CheckFailed(f"Use the threshold argument (here {threshold}): your answer matches a fixed 0.99.")
        raise CheckFailed(f"steps_to_threshold(...) returned {got!r} where {want!r} was expected "
                          f"(threshold {threshold}, window {window}, {len(accs)} values).")


def reference_worst_row(table: Mapping[str, Mapping[str, Any]]) -> str:
    """Name of the row that hurts most: lowest exact match, then highest final loss (None = diverged). Chapter 10."""
    def badness(name: str) -> tuple[float, float]:
        row = table[name]
        loss = row["final_loss"]
        return (-row["exact_match"], float("inf") if loss is None else loss)

    return max(table, key=badness)


@checker("10.4", "which change hurts most")
def check_worst_row(fn: Callable[[Mapping[str, Mapping[str, Any]]], str]) -> str | None:
    """Check ``fn(table)`` names the row with the lowest exact match (ties: highest final loss; None is worst)."""
    def row(em: float, loss: float | None) -> dict[str, Any]:
        return {"exact_match": em, "final_loss": loss}

    tables = [
        {"base": row(95.0, 0.08), "no_pe": row(2.0, 1.9), "dropout": row(90.0, 0.1)},
        {"a": row(0.0, 2.5), "b": row(0.0, None), "c": row(50.0, 0.5)},  # a diverged row is worse
        {"a": row(10.0, 1.2), "b": row(10.0, 2.2), "c": row(99.0, 0.01)},  # tie: higher loss loses
        {"only": row(100.0, 0.0)},
    ]
    for table in tables:
        got = call_student(fn, {k: dict(v) for k, v in table.items()}, what="your worst_row")
        want = reference_worst_row(table)
        if got == want:
            continue
        if isinstance(got, Mapping):
            raise CheckFailed("Return the row's name (a key of the table), not the row itself.")
        best = max(table, key=lambda k: table[k]["exact_match"])
        if got == best and best != want:
            raise CheckFailed("You returned the best row: the change that hurts most has the lowest exact match.")
        if table is tables[1]:
            raise CheckFailed("A row whose final loss is None diverged (NaN): rank it worst among equal exact matches.")
        if table is tables[2]:
            raise CheckFailed("On equal exact match, break the tie by the final loss: the higher loss hurts more.")
        raise CheckFailed(f"worst_row(...) returned {got!r}, expected {want!r}.")
    try:
        shipped = load_ablations().get("table3")
    except FileNotFoundError:
        shipped = None
    if shipped:
        got = call_student(fn, {k: dict(v) for k, v in shipped.items()}, what="your worst_row")
        if got != reference_worst_row(shipped):
            raise CheckFailed(f"On the shipped Table 3 your function returned {got!r}, "
                              f"expected {reference_worst_row(shipped)!r}.")
        return f"On the shipped table the change that hurts most is {got!r}."
    return None
