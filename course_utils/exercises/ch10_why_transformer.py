"""Checkers for the exercises of Chapter 10 (why the Transformer won, measured)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from ..runs.ablations import load_ablations
from .core import CheckFailed, as_number, call_student, checker, describe, expect_close, fail_on_mistake
from .experiment import Expected, compare_prediction, judge_range, read_prediction


def _additive_inputs(seed: int) -> tuple[Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    B, T, d_s, d_h, d_a = 3, 5, 4, 6, 7
    s, keys = torch.randn(B, d_s, generator=g), torch.randn(B, T, d_h, generator=g)
    W_s, W_h, v = torch.randn(d_a, d_s, generator=g), torch.randn(d_a, d_h, generator=g), torch.randn(d_a, generator=g)
    keep = torch.ones(B, T, dtype=torch.bool)
    keep[1, 3:] = False  # a padded source
    keep[2, 1:] = False  # a source of one token: all weight on it
    return s, keys, W_s, W_h, v, keep


def reference_weights_without_tanh(keys: Tensor, W_h: Tensor, v: Tensor, keep: Tensor) -> Tensor:
    """Additive attention with the tanh removed: softmax_j(v . W_h h_j) over kept keys, (B, T). Chapter 10.

    v . (W_s s + W_h h_j) = v . W_s s + v . W_h h_j, and the first term is the same for every j:
    the softmax ignores it, so the weights do not depend on the decoder state s at all.
    """
    return torch.softmax(((keys @ W_h.T) @ v).masked_fill(~keep, float("-inf")), dim=-1)


@checker("10.1", "additive attention without the tanh")
def check_weights_without_tanh(fn: Callable[..., Tensor]) -> str:
    """Check ``fn(keys, W_h, v, keep)`` returns the weights softmax_j(v . (W_s s + W_h h_j)) for every s."""
    for seed in range(3):
        s, keys, W_s, W_h, v, keep = _additive_inputs(seed)
        got = call_student(fn, keys.clone(), W_h, v, keep.clone(), what="your weights_without_tanh")
        linear = (s @ W_s.T)[:, None, :] + keys @ W_h.T  # (B, T, d_a): the scores' inside, without tanh
        want = torch.softmax((linear @ v).masked_fill(~keep, float("-inf")), dim=-1)
        uniform = keep.float() / keep.sum(-1, keepdim=True)
        mistakes = {
            "You kept the tanh: the exercise removes it, e_j = v . (W_s s + W_h h_j).":
                torch.softmax((torch.tanh(keys @ W_h.T) @ v).masked_fill(~keep, float("-inf")), dim=-1),
            "The weights are not uniform: v . W_h h_j still differs from key to key; only the decoder's term "
            "v . W_s s is the same for every j and cancels in the softmax.": uniform,
            "Padding keys get weight: set their scores to -inf before the softmax (keep == False).":
                torch.softmax((keys @ W_h.T) @ v, dim=-1),
            "Masked scores were set to 0, not -inf: exp(0) = 1 still gives padding weight.":
                torch.softmax(((keys @ W_h.T) @ v).masked_fill(~keep, 0.0), dim=-1),
            "The softmax runs over the wrong dimension: normalise over the source positions (the last one).":
                torch.softmax(((keys @ W_h.T) @ v).masked_fill(~keep, float("-inf")), dim=0).nan_to_num(0.0),
        }
        expect_close(got, want, "weights_without_tanh(keys, W_h, v, keep)", mistakes=mistakes)
    return ("Without the tanh the decoder state only adds v . W_s s, the same number to every score, and a "
            "softmax ignores a constant: the model would read the same source positions at every output step, "
            "so it could never reverse a string. The tanh is what lets the state choose where to look.")


def reference_loglog_fit(lengths: Sequence[float], ms: Sequence[float]) -> tuple[float, float]:
    """Least-squares line log2(ms) = slope * log2(n) + intercept: (slope, intercept). Chapter 10."""
    x = torch.tensor([float(n) for n in lengths], dtype=torch.float64).log2()
    y = torch.tensor([float(t) for t in ms], dtype=torch.float64).log2()
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    return slope, float(y.mean() - slope * x.mean())


def crossover_length(fit_a: tuple[float, float], fit_b: tuple[float, float]) -> float:
    """The length n at which two fitted power laws ms = 2^intercept * n^slope meet (inf if parallel). Chapter 10."""
    (sa, ia), (sb, ib) = fit_a, fit_b
    return math.inf if sa == sb else 2.0 ** ((ib - ia) / (sa - sb))


CROSSOVER_OPTIONS = {
    "below 32": "the Transformer's step is the cheaper one already at short strings",
    "32 to 256": "the lines cross in the range of the benchmark or just beyond it",
    "above 256": "the GRU stays cheaper well beyond the measured lengths",
    "never": "the Transformer's step grows at least as fast as the GRU's",
}
CROSSOVER_QUANTITY = ("crossover length of the Transformer and the plain GRU with one thread (fits over the lengths "
                      "from 8, 16 or 32 up to 128)")


def crossover_expected(timing: Mapping[str, Any]) -> Expected:
    """The reference range of the one-thread crossover with the plain GRU, from the shipped timings. Chapter 10.

    The reference fits the lengths from the first, second or third up to the last (8, 16 or 32 up to
    128): the range spans their crossovers, widened by a quarter on each side for the rounding of other fits,
    and starts at 1 letter at the lowest (nearly parallel lines can cross at a length below one).
    """
    lengths, ms = timing["lengths"], timing["ms_per_step"]["1"]
    cross = [crossover_length(reference_loglog_fit(lengths[i:], ms["transformer"][i:]),
                              reference_loglog_fit(lengths[i:], ms["gru"][i:])) for i in range(3)]
    low, high = max(min(cross) / 1.25, 1.0), max(max(cross) * 1.25, 1.0)
    if high < 32:
        meaning = ("with one thread the Transformer's step is the cheaper one from short strings on: the GRU pays "
                   "the fixed cost of its small operations at each of its 2n + 1 sequential steps.")
    else:
        meaning = "with one thread the Transformer's step overtakes the plain GRU's only at longer strings."
    return Expected(CROSSOVER_QUANTITY, float(f"{low:.2g}"), float(f"{high:.2g}"), meaning)


def _fit_mistakes(lengths: Sequence[float], ms: Sequence[float]) -> dict[str, tuple[float, float]]:
    x = torch.tensor([float(n) for n in lengths], dtype=torch.float64)
    y = torch.tensor([float(t) for t in ms], dtype=torch.float64)
    slope, intercept = reference_loglog_fit(lengths, ms)
    lin = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    swapped = reference_loglog_fit(ms, lengths)
    ends = float((y[-1] / y[0]).log2() / (x[-1] / x[0]).log2())
    return {
        "That intercept is in natural logs: take log2 of both the lengths and the times.":
            (slope, intercept * math.log(2)),
        "You fitted the raw times against the raw lengths: fit log2(ms) against log2(n), a power law is a "
            "straight line only in log-log.": (lin, float(y.mean() - lin * x.mean())),
        "The axes are swapped: regress log2(ms) on log2(n), not the lengths on the times.": swapped,
        "That slope joins the first and the last point only: use a least-squares fit over all the points.":
            (ends, float(y[0].log2() - ends * x[0].log2())),
    }


@checker("10.2", "where the Transformer overtakes the GRUs")
def check_loglog_crossover(fn: Callable[[Sequence[float], Sequence[float]], Any], prediction: Any) -> str:
    """Check the prediction is recorded, then ``fn(lengths, ms)`` -> (slope, intercept) of log2(ms) on log2(n),
    then judge where its fits of the shipped timings say the Transformer's step gets cheaper than each GRU's."""
    guess = read_prediction(prediction, CROSSOVER_OPTIONS)
    g = torch.Generator().manual_seed(0)
    for true_slope, scale in ((2.0, 0.5), (0.7, 12.0), (1.3, 3.0)):
        lengths = [8, 16, 32, 64, 128]
        noise = torch.exp(0.05 * torch.randn(len(lengths), generator=g, dtype=torch.float64))
        ms = [scale * n**true_slope * float(e) for n, e in zip(lengths, noise, strict=True)]
        got = call_student(fn, list(lengths), list(ms), what="your loglog_fit")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailed(f"loglog_fit(lengths, ms) should return (slope, intercept), got {describe(got)}")
        got_pair = (as_number(got[0], "the slope"), as_number(got[1], "the intercept"))
        want = reference_loglog_fit(lengths, ms)
        if all(math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6) for a, b in zip(got_pair, want, strict=True)):
            continue
        fail_on_mistake(got_pair, _fit_mistakes(lengths, ms), lambda g, w: all(
            math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6) for a, b in zip(g, w, strict=True)))
        if math.isclose(got_pair[0], want[0], rel_tol=1e-4):
            raise CheckFailed("The slope is right but the intercept is not: intercept = mean(log2 ms) - "
                              "slope * mean(log2 n).")
        raise CheckFailed(f"on times that grow as n^{true_slope} your fit gives slope {got_pair[0]:.3g}, "
                          f"expected about {want[0]:.3g}.")
    timing = load_ablations()["timing"]
    lengths, cross = timing["lengths"], {}
    for threads in ("1", "2"):
        ms = timing["ms_per_step"][threads]
        fits = {k: tuple(as_number(v, "your fit") for v in call_student(fn, list(lengths), list(ms[k]),
                                                                        what="your loglog_fit"))
                for k in ("transformer", "gru", "gru_bahdanau")}
        cross[threads] = {k: crossover_length(fits["transformer"], fits[k])  # type: ignore[arg-type]  # pairs
                          for k in ("gru", "gru_bahdanau")}
    n1 = cross["1"]["gru"]
    verdict = judge_range(n1, crossover_expected(timing), what="your crossover", show=True)
    outcome = ("never" if not math.isfinite(n1) else "below 32" if n1 < 32 else
               "32 to 256" if n1 <= 256 else "above 256")
    faster_bahdanau = all(cross[t]["gru_bahdanau"] < 32 for t in ("1", "2"))
    earlier_with_two = cross["2"]["gru"] < cross["1"]["gru"]
    return (f"{verdict} {compare_prediction(guess, outcome)} The attention GRU is overtaken below 32 letters with "
            f"either thread count: {faster_bahdanau}; a second thread brings the crossover with the plain GRU "
            f"earlier: {earlier_with_two}. The fitted slopes stay near 1, far from Table 1's n^2 d and n d^2, "
            "because at these sizes the fixed cost of each operation dominates the arithmetic.")


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


WORST_ROW_OPTIONS = {
    "heads_1": "one attention head instead of four",
    "no_positions": "no positional encoding",
    "no_residual": "no residual connections",
    "no_layer_norm": "no LayerNorm",
}
_WORST_ROW_WHY = {
    "heads_1": "Reversal needs one alignment per output step, which a single head can express.",
    "no_positions": "Without positions attention cannot tell the letters' order apart, yet the residual stream "
                    "still carries each letter, so the loss falls further than without residuals.",
    "no_layer_norm": "Two blocks at this width train without LayerNorm; depth is what makes it indispensable.",
}


@checker("10.4", "which change hurts most")
def check_worst_row(fn: Callable[[Mapping[str, Mapping[str, Any]]], str], prediction: Any) -> str:
    """Check the prediction is recorded first, then ``fn(table)`` names the row with the lowest exact match
    (ties: highest final loss; None is worst), then rank the shipped rows that share one budget."""
    guess = read_prediction(prediction, WORST_ROW_OPTIONS)

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
    results = load_ablations()
    budget, data = results["recipe"]["table3_train"], results["recipe"]["table3_data"]
    same_budget = {k: dict(results["table3"][k]) for k in WORST_ROW_OPTIONS}  # like with like: one budget
    got = call_student(fn, same_budget, what="your worst_row")
    if got != reference_worst_row(same_budget):
        raise CheckFailed(f"On the shipped rows your function returned {got!r}, "
                          f"expected {reference_worst_row(same_budget)!r}.")
    return (f"Ranked with one budget for every row ({budget['steps']} steps of batch {data['batch_size']}, "
            f"strings of {data['min_len']}-{data['max_len']} letters): the change that hurts most is {got!r}. "
            + compare_prediction(guess, got, _WORST_ROW_WHY)
            + " The depth rows (post-LN without warm-up) had their own, shorter budget and are not ranked here.")
