"""Sampling the next token from logits: temperature, top-k, top-p and a CPU-independent draw. Chapters 6 and 8.

One path for both model families: the encoder-decoder's ``decoding.sample_decode`` (Chapter 6)
and the decoder-only ``gpt.generate`` (Chapter 8) both call :func:`filter_logits` and
:func:`sample_next`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .validate import check_bool, check_finite, check_number, check_positive_int, check_rank, check_tensor


def check_sampling(
    temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None, greedy_ok: bool = False
) -> tuple[float, int | None, float | None]:
    """The sampling arguments, checked by one rule for every sampler of the course. Chapters 6 and 8.

    ``temperature`` a positive number (with ``greedy_ok`` also 0, :func:`course_utils.gpt.generate`'s
    greedy decoding); ``top_k`` None or a positive int; ``top_p`` None or a number in (0, 1].
    Returns them as (float, int or None, float or None); raises before any decoding starts.
    """
    check_bool("greedy_ok", greedy_ok)
    zero = isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature == 0
    if not (greedy_ok and zero):
        try:
            temperature = check_number("temperature", temperature, low=0.0, low_open=True)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{error}" + (" (or 0 for greedy decoding)" if greedy_ok else "")) from None
    k = None if top_k is None else check_positive_int("top_k", top_k)
    p = None if top_p is None else check_number("top_p", top_p, 0.0, 1.0, low_open=True)
    return float(temperature), k, p


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """Keep the k largest logits of each row (..., V), set the others to -inf. Chapters 6 and 8.

    Ties with the k-th largest value are all kept.
    """
    check_tensor("logits", logits)
    check_finite("logits", logits, "a NaN logit cannot be ranked", allow_neg_inf=True)
    check_positive_int("k", k)
    if k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest value
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """Nucleus filter: keep the smallest set of most likely tokens whose probability sums to >= p. Chapter 8.

    logits (..., V) -> same shape with the others at -inf; the most likely token is always kept.
    """
    check_tensor("logits", logits)
    check_finite("logits", logits, "a NaN logit cannot be ranked", allow_neg_inf=True)
    p = check_number("p", p, 0.0, 1.0, low_open=True)
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)  # (..., V)
    probs = torch.softmax(sorted_logits, dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above each one
    drop_sorted = mass_before >= p  # the set already reached p without this token
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def filter_logits(
    logits: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Tensor:
    """logits / temperature, then top-k, then top-p filtering (each optional). Chapters 6 and 8."""
    check_tensor("logits", logits)
    check_finite("logits", logits, "a NaN logit cannot be ranked or sampled", allow_neg_inf=True)
    temperature, top_k, top_p = check_sampling(temperature, top_k, top_p)
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


def sample_next(logits: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """One id per row of logits (B, V), drawn from softmax(logits) by inverting the CDF. Chapters 6 and 8.

    One uniform number per row from ``generator`` picks the first token whose cumulative
    probability exceeds it, so a seeded generator gives the same tokens on any CPU (up to ties
    at float precision), unlike kernels whose random stream depends on vectorisation.
    """
    check_rank("logits", logits, 2, "(B, V)")
    check_finite("logits", logits, "NaN logits would sample the last token silently", allow_neg_inf=True)
    probs = torch.softmax(logits.double(), dim=-1)  # (B, V), double: a stable cumulative sum
    cdf = probs.cumsum(dim=-1)  # (B, V)
    u = torch.rand(logits.shape[0], 1, generator=generator, dtype=torch.float64) * cdf[:, -1:]  # (B, 1)
    ids = (cdf <= u).sum(dim=-1)  # (B,): number of tokens whose cumulative mass is still <= u
    return ids.clamp(max=logits.shape[-1] - 1)
