# ruff: noqa: E501  (a table of one-line learner answers reads better unwrapped)
"""Chapter 11's rows of the checker-mistakes table: right answers in two styles and realistic wrong ones,
each with the words its hint must contain (read by tests/test_checker_mistakes.py).

The learner answers live with their tests in tests/test_exercises_ch11.py. The experiments' wrong answers
run on a small untrained character LM (they fail on what the run recorded, before any range is judged);
their right answers on the shipped model, with a fixed seed.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from checker_mistakes_table import INPLACE, Row, row_adders
from test_exercises_ch11 import (
    diagonal_unmasked,
    einsum_every_tile,
    experiment,
    guard_with_nan_to_num,
    in_place,
    linear_cumsum,
    linear_rnn,
    local_triangle,
    no_acc_rescale,
    no_guard,
    no_l_rescale,
    normalised,
    old_max_exps,
    online_loop,
    other_inputs,
    plain_without_mask,
    pool_loop,
    pool_split,
    quadratic,
    swapped_compare,
    sweep_chunks,
    sweep_fresh,
    sweep_over_budget,
    sweep_variant,
    tile_max_only,
    tiled_loop,
    tiny_charlm,
    window_right,
    window_wrong,
)

from course_utils.exercises import ch11_attention_at_scale as c11
from course_utils.flash import linear_attention, online_softmax_update

ROWS: list[Row] = []
right, wrong = row_adders(ROWS)


# ================================================================ 11.1 the online-softmax update
right("11.1", c11.check_online_softmax, online_loop)
right("11.1", c11.check_online_softmax, guard_with_nan_to_num)
wrong("11.1", c11.check_online_softmax, "acc is not rescaled", no_acc_rescale)
wrong("11.1", c11.check_online_softmax, "l is not rescaled", no_l_rescale)
wrong("11.1", c11.check_online_softmax, "normalised output", normalised)
wrong("11.1", c11.check_online_softmax, "max(m_old", tile_max_only)
wrong("11.1", c11.check_online_softmax, INPLACE, in_place)
wrong("11.1", c11.check_online_softmax, "shift by 0", no_guard)
wrong("11.1", c11.check_online_softmax, "relative to m_new", old_max_exps)
wrong("11.1", c11.check_online_softmax, "write the step yourself", online_softmax_update)


# ================================================================ 11.2 the tiled loop, timed
def tiled_in_place(q, k, v, causal, block):
    q /= math.sqrt(q.shape[-1])  # scales the caller's queries
    return tiled_loop(q, k, v, causal, block, scale=False)


FAST = {"repeats": 1}
right("11.2", lambda *a: c11.check_tiling_experiment(*a, **FAST), lambda: "slower", tiled_loop, experiment)
right("11.2", lambda *a: c11.check_tiling_experiment(*a, **FAST), lambda: "faster",
      lambda q, k, v, c, b: tiled_loop(q, k, v, c, b), experiment)
wrong("11.2", c11.check_tiling_experiment, "above the diagonal", lambda: "slower",
    lambda q, k, v, c, b: tiled_loop(q, k, v, c, b, skip=False), experiment)
wrong("11.2", c11.check_tiling_experiment, "above the diagonal", lambda: "slower", einsum_every_tile, experiment)
wrong("11.2", c11.check_tiling_experiment, "sqrt(d_k)", lambda: "slower",
    lambda q, k, v, c, b: tiled_loop(q, k, v, c, b, scale=False), experiment)
wrong("11.2", c11.check_tiling_experiment, "every key", lambda: "slower",
    lambda q, k, v, c, b: tiled_loop(q, k, v, False, b), experiment)
wrong("11.2", c11.check_tiling_experiment, "unmasked", lambda: "slower", diagonal_unmasked, experiment)
wrong("11.2", c11.check_tiling_experiment, "same triangle", lambda: "slower", local_triangle, experiment)
wrong("11.2", c11.check_tiling_experiment, INPLACE, lambda: "slower", tiled_in_place, experiment)
wrong("11.2", lambda *a: c11.check_tiling_experiment(*a, **FAST), "upside down", lambda: "slower", tiled_loop,
    swapped_compare)
wrong("11.2", lambda *a: c11.check_tiling_experiment(*a, **FAST), "without the causal mask", lambda: "slower",
    tiled_loop, plain_without_mask)
wrong("11.2", lambda *a: c11.check_tiling_experiment(*a, **FAST), "q, k, v your tiled loop", lambda: "slower",
    tiled_loop, other_inputs)
wrong("11.2", c11.check_tiling_experiment, "typed in", lambda: "slower", tiled_loop,
    lambda tiled, timer: {(512, 256): (2.0, 1.5), (1024, 256): (12.0, 8.0), (2048, 256): (40.0, 27.0),
                          (2048, 32): (40.0, 90.0)})


# ================================================================ 11.3 mean-pooling K/V heads
def pool_in_place(w, h, n_kv):
    grouped = w.view(n_kv, h // n_kv, w.shape[0] // h, *w.shape[1:])  # a view of the caller's weight
    grouped[:, 0] = grouped.mean(1)
    return grouped[:, 0].reshape(-1, *w.shape[1:])


right("11.3", c11.check_pool_heads, pool_loop)
right("11.3", c11.check_pool_heads, pool_split)
wrong("11.3", c11.check_pool_heads, "consecutive heads",
    lambda w, h, n: w.reshape(h // n, n, w.shape[0] // h, *w.shape[1:]).mean(0).reshape(-1, *w.shape[1:]))
wrong("11.3", c11.check_pool_heads, "summed",
    lambda w, h, n: w.reshape(n, h // n, w.shape[0] // h, *w.shape[1:]).sum(1).reshape(-1, *w.shape[1:]))
wrong("11.3", c11.check_pool_heads, "first head",
    lambda w, h, n: w.reshape(n, h // n, w.shape[0] // h, *w.shape[1:])[:, 0].reshape(-1, *w.shape[1:]))
wrong("11.3", c11.check_pool_heads, "dropped the others", lambda w, h, n: w[: n * (w.shape[0] // h)])
wrong("11.3", c11.check_pool_heads, "shape", lambda w, h, n: w)
wrong("11.3", c11.check_pool_heads, INPLACE, pool_in_place)


# ================================================================ 11.4 how much uptraining MQA needs
TINY, TINY_DATA = tiny_charlm()


def on_tiny(sweep):
    return (lambda: "further", sweep, TINY, TINY_DATA, 0)


right("11.4", lambda *a: c11.check_mqa_uptraining(*a, seed=7), lambda: "further", sweep_chunks)
right("11.4", lambda *a: c11.check_mqa_uptraining(*a, seed=8), lambda: "closer", sweep_fresh)
wrong("11.4", c11.check_mqa_uptraining, "model before uptraining", *on_tiny(sweep_variant("no control")))
wrong("11.4", c11.check_mqa_uptraining, "bits per character, not what it loses", *on_tiny(sweep_variant("absolute")))
wrong("11.4", c11.check_mqa_uptraining, "control minus MQA", *on_tiny(sweep_variant("sign")))
wrong("11.4", c11.check_mqa_uptraining, "different uptrain calls", *on_tiny(sweep_variant("control in one go")))
wrong("11.4", c11.check_mqa_uptraining, "another number of steps", *on_tiny(sweep_variant("scored first")))
wrong("11.4", c11.check_mqa_uptraining, "neither a copy of charlm nor", *on_tiny(sweep_variant("GQA-2")))
wrong("11.4", c11.check_mqa_uptraining, INPLACE, *on_tiny(sweep_variant("in place")))
wrong("11.4", c11.check_mqa_uptraining, "at least three lengths", *on_tiny(sweep_variant("two lengths")))
wrong("11.4", c11.check_mqa_uptraining, "typed in", *on_tiny(lambda *a: {0: 1.36, 10: 0.81, 30: 0.62}))
wrong("11.4", c11.check_mqa_uptraining, "at most", *on_tiny(sweep_over_budget))


# ================================================================ 11.5 linear attention
def _linear_from_features(fq, k, v, causal):
    fk = F.elu(k) + 1
    if not causal:
        return fq @ (fk.transpose(-2, -1) @ v) / (fq @ fk.sum(-2)[..., None])
    S = torch.cumsum(fk[..., :, None] * v[..., None, :], dim=-3)
    z = torch.cumsum(fk, dim=-2)
    return (fq[..., None, :] @ S).squeeze(-2) / (fq * z).sum(-1, keepdim=True)


def _linear_phi_on_queries_only(q, k, v, c):
    a = (F.elu(q) + 1) @ k.transpose(-2, -1)
    a = a.tril() if c else a
    return a @ v / a.sum(-1, keepdim=True)


def linear_cumsum_features(q, k, v, causal):
    """The running sums taken along the feature axis instead of T."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    if not causal:
        return fq @ (fk.transpose(-2, -1) @ v) / (fq @ fk.sum(-2)[..., None])
    S = torch.cumsum(fk[..., :, None] * v[..., None, :], dim=-2)
    z = torch.cumsum(fk, dim=-1)
    return (fq[..., None, :] @ S).squeeze(-2) / (fq * z).sum(-1, keepdim=True)


right("11.5", c11.check_linear_attention, linear_cumsum)
right("11.5", c11.check_linear_attention, linear_rnn)
wrong("11.5", c11.check_linear_attention, "softmax attention", lambda q, k, v, c: F.scaled_dot_product_attention(q, k, v, is_causal=c))
wrong("11.5", c11.check_linear_attention, "not relu", lambda q, k, v, c: quadratic(q, k, v, c, phi=F.relu))
wrong("11.5", c11.check_linear_attention, "not normalised", lambda q, k, v, c: quadratic(q, k, v, c, norm=False))
wrong("11.5", c11.check_linear_attention, "j <= i", lambda q, k, v, c: linear_cumsum(q, k, v, False))
wrong("11.5", c11.check_linear_attention, "own key", lambda q, k, v, c: quadratic(q, k, v, c, strict=True))
wrong("11.5", c11.check_linear_attention, "as they are", lambda q, k, v, c: linear_cumsum(q / math.sqrt(q.shape[-1]), k, v, c))
wrong("11.5", c11.check_linear_attention, "on the queries or on the keys",
    lambda q, k, v, c: linear_cumsum(q / math.sqrt(q.shape[-1]), k / math.sqrt(q.shape[-1]), v, c))
wrong("11.5", c11.check_linear_attention, "feature axis", linear_cumsum_features)
wrong("11.5", c11.check_linear_attention, "T x T", quadratic)
wrong("11.5", c11.check_linear_attention, "yourself", linear_attention)
wrong("11.5", c11.check_linear_attention, INPLACE, lambda q, k, v, c: _linear_from_features(F.elu_(q).add_(1), k, v, c))
wrong("11.5", c11.check_linear_attention, "elu(x) + 1", lambda q, k, v, c: quadratic(q, k, v, c, phi=F.elu))
wrong("11.5", c11.check_linear_attention, "phi goes on the keys too", _linear_phi_on_queries_only)


# ================================================================ 11.6 a rolling cache for a sliding window
for answer in window_right:
    right("11.6", c11.check_window_cache, answer)
for answer, hint in window_wrong:
    wrong("11.6", c11.check_window_cache, hint, answer)
