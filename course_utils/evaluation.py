"""Evaluation of string reversal: exact match and per-token accuracy by length. Chapter 6.

Every helper takes an encoder-decoder ``Transformer``, a decoder-only ``DecoderOnly`` (Chapter 8)
or any function list[str] -> list[str].
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import nn

from .data import LETTERS, random_strings
from .decoding import reverse_strings, reverse_strings_decoder_only
from .gpt import DecoderOnly
from .validate import check_int, check_positive_int, check_str_list


def exact_match(predictions: Sequence[str], targets: Sequence[str]) -> float:
    """Fraction of predictions equal to their target string. Chapter 6."""
    _check_pairs(predictions, targets)
    return sum(p == t for p, t in zip(predictions, targets, strict=False)) / len(targets)


def token_accuracy(predictions: Sequence[str], targets: Sequence[str]) -> float:
    """Fraction of target characters predicted correctly at the same position. Chapter 6.

    A prediction that is too short gets those missing positions wrong; extra characters
    beyond the target's length are not counted here (exact match catches them).
    """
    _check_pairs(predictions, targets)
    right = sum(sum(a == b for a, b in zip(p, t, strict=False)) for p, t in zip(predictions, targets, strict=False))
    total = sum(len(t) for t in targets)
    if total == 0:
        raise ValueError("targets must contain at least one character in total")
    return right / total


def _check_pairs(predictions: Sequence[str], targets: Sequence[str]) -> None:
    for name, seq in (("predictions", predictions), ("targets", targets)):
        check_str_list(name, seq, allow_empty=True)
    if len(predictions) != len(targets) or not targets:
        raise ValueError(
            f"predictions and targets must be non-empty and equally long, got {len(predictions)} "
            f"and {len(targets)}"
        )


Predictor = Callable[[list[str]], list[str]]


def as_predictor(model_or_fn: nn.Module | Predictor, batch_size: int = 500) -> Predictor:
    """A function list[str] -> list[str]: a model is wrapped with batched greedy decoding. Chapter 6.

    A ``DecoderOnly`` model (Chapter 8) is wrapped with :func:`~course_utils.decoding.reverse_strings_decoder_only`.
    """
    check_positive_int("batch_size", batch_size)
    if isinstance(model_or_fn, DecoderOnly):
        def predict_causal(strings: list[str]) -> list[str]:
            return reverse_strings_decoder_only(model_or_fn, strings)

        return predict_causal
    if isinstance(model_or_fn, nn.Module):

        def predict(strings: list[str]) -> list[str]:
            return reverse_strings(model_or_fn, strings, batch_size=batch_size)

        return predict
    if callable(model_or_fn):
        return model_or_fn
    raise TypeError(
        f"model must be an nn.Module or a function list[str] -> list[str], got {type(model_or_fn).__name__}"
    )


def evaluate_by_length(
    model: nn.Module | Predictor,
    lengths: Iterable[int] = range(3, 16),
    n_per_length: int = 200,
    seed: int = 1234,
) -> dict[int, dict[str, float]]:
    """{length: {"exact_match", "token_accuracy"}} on ``n_per_length`` fresh random strings each. Chapter 6.

    The test strings come from their own seeded generator, so every model is scored on the
    same strings and training data (drawn from another generator) does not leak in.
    """
    n_per_length = check_positive_int("n_per_length", n_per_length)
    seed = check_int("seed", seed, low=0)
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Iterable):
        raise TypeError(f"lengths must be an iterable of ints (e.g. range(3, 16)), got {type(lengths).__name__}")
    predict = as_predictor(model)
    generator = torch.Generator().manual_seed(seed)
    results: dict[int, dict[str, float]] = {}
    lengths = list(lengths)
    if not lengths:
        raise ValueError("lengths must hold at least one length, got an empty iterable")
    for n in lengths:
        n = check_positive_int("length", n)  # NumPy ints -> int
        strings = random_strings(n_per_length, n, n, generator)
        targets = [s[::-1] for s in strings]
        predictions = predict(strings)
        if isinstance(predictions, str) or not isinstance(predictions, Sequence) or len(predictions) != len(strings):
            raise TypeError(
                f"model must return one string per input string ({len(strings)}), got {type(predictions).__name__}"
                + (f" of length {len(predictions)}" if isinstance(predictions, Sequence) else "")
            )
        results[n] = {
            "exact_match": exact_match(predictions, targets),
            "token_accuracy": token_accuracy(predictions, targets),
        }
    return results


def results_table(results: dict[int, dict[str, float]], train_range: tuple[int, int] | None = None) -> str:
    """A plain-text table of :func:`evaluate_by_length` results, in percent. Chapter 6."""
    if not isinstance(results, dict) or not results:
        raise TypeError(f"results must be the non-empty dict evaluate_by_length returns, got {type(results).__name__}")
    for n, r in results.items():
        if not isinstance(r, dict) or not {"exact_match", "token_accuracy"} <= set(r):
            raise ValueError(
                f"results[{n!r}] must be a dict with 'exact_match' and 'token_accuracy', got {r!r:.60}"
            )
    if train_range is not None and (not isinstance(train_range, (tuple, list)) or len(train_range) != 2):
        raise TypeError(f"train_range must be a pair (shortest, longest) or None, got {train_range!r}")
    lines = [f"{'length':>6} {'exact match':>12} {'token acc.':>11}  "]
    for n, r in results.items():
        note = ""
        if train_range is not None:
            note = "in training range" if train_range[0] <= n <= train_range[1] else "longer than any training string"
        lines.append(f"{n:>6} {100 * r['exact_match']:>11.1f}% {100 * r['token_accuracy']:>10.1f}%  {note}")
    return "\n".join(line.rstrip() for line in lines)


def every_string_score(model: nn.Module | Predictor, length: int = 3) -> dict[str, Any]:
    """Exact match over *every* string of ``length`` letters (26**length of them), no sampling. Chapter 9.

    {"length", "strings", "wrong", "exact_match" (percent), "misses": [[string, output], ...]}.
    Length 3 is 17,576 strings and takes a second or two; each extra letter costs 26 times more.
    """
    check_positive_int("length", length)
    if length > 4:
        raise ValueError(f"length must be at most 4 (26**length strings), got {length}")
    strings = ["".join(letters) for letters in itertools.product(LETTERS, repeat=length)]
    outputs = as_predictor(model)(strings)
    misses = [[s, out] for s, out in zip(strings, outputs, strict=True) if out != s[::-1]]
    return {"length": length, "strings": len(strings), "wrong": len(misses),
            "exact_match": round(100 * (1 - len(misses) / len(strings)), 2), "misses": misses}
