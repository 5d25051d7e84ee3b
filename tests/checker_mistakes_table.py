# ruff: noqa: E501  (a table of one-line learner answers reads better unwrapped)
"""Realistic learner answers for every checker: right ones in different styles and typical mistakes.

One row = (exercise, checker, answer, expected): ``expected`` is None for a right answer (the
checker must pass), else words the failure message must contain. Used by
tests/test_checker_mistakes.py; run ``.venv/bin/python tests/test_checker_mistakes.py`` for the counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from test_exercises_ch01 import top_weight_ref, top_weight_sdpa  # the experiments' answers live with their tests
from test_exercises_ch03 import deep_stack, deep_stack_sequential
from test_exercises_ch04 import next_token, next_token_torch_layer
from test_exercises_ch05 import mqa_by_modules, mqa_ok
from torch import nn

from course_utils.attention import scaled_dot_product_attention
from course_utils.data import EOS_ID, PAD_ID, SOS_ID
from course_utils.exercises import (
    ch01_attention as c1,
)
from course_utils.exercises import (
    ch02_positional as c2,
)
from course_utils.exercises import (
    ch03_norm as c3,
)
from course_utils.exercises import (
    ch04_masking as c4,
)
from course_utils.exercises import (
    ch05_transformer as c5,
)
from course_utils.exercises import (
    ch06_training as c6,
)
from course_utils.exercises import (
    ch07_heatmaps as c7,
)

Row = tuple[str, Callable[..., Any], tuple[Any, ...], str | None]
INPLACE = "in place"
TYPED_IN = "not a number typed in"  # an experiment's numbers written into the code: the checker re-runs it


def row_adders(rows: list[Row]) -> tuple[Callable[..., None], Callable[..., None]]:
    """``right(ex, check, *answer)`` and ``wrong(ex, check, hint, *answer)``, each appending a row to ``rows``.

    This table's ROWS is filled with them; a chapter's table (tests/checker_mistakes_chNN.py) makes its own
    ROWS and its own pair: ``ROWS: list[Row] = []`` then ``right, wrong = row_adders(ROWS)``.
    """

    def right(ex: str, check: Callable[..., Any], *answer: Any) -> None:
        rows.append((ex, check, answer, None))

    def wrong(ex: str, check: Callable[..., Any], hint: str, *answer: Any) -> None:
        rows.append((ex, check, answer, hint))

    return right, wrong


ROWS: list[Row] = []
right, wrong = row_adders(ROWS)


# ================================================================ 1.1 softmax
def sm_max(x):
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


def sm_logsumexp(x):
    return (x - torch.logsumexp(x, dim=-1, keepdim=True)).exp()


def sm_inplace(x):
    x -= x.max(dim=-1, keepdim=True).values
    e = x.exp()
    return e / e.sum(dim=-1, keepdim=True)


def sm_no_keepdim(x):
    e = (x - x.max(dim=-1).values).exp()
    return e / e.sum(dim=-1)


right("1.1", c1.check_softmax, sm_max)
right("1.1", c1.check_softmax, sm_logsumexp)
wrong("1.1", c1.check_softmax, "Subtract each row's maximum before exp", lambda x: x.exp() / x.exp().sum(-1, keepdim=True))
wrong("1.1", c1.check_softmax, "not the maximum of the whole tensor",
      lambda x: (x - x.max()).exp() / (x - x.max()).exp().sum(-1, keepdim=True))
wrong("1.1", c1.check_softmax, "not its minimum",
      lambda x: (x - x.min(-1, keepdim=True).values).exp() / (x - x.min(-1, keepdim=True).values).exp().sum(
          -1, keepdim=True))
wrong("1.1", c1.check_softmax, "without torch.softmax", lambda x: torch.softmax(x, dim=-1))
wrong("1.1", c1.check_softmax, "without torch.softmax", lambda x: F.log_softmax(x, dim=-1).exp())
wrong("1.1", c1.check_softmax, INPLACE, sm_inplace)
wrong("1.1", c1.check_softmax, "keepdim=True", sm_no_keepdim)
wrong("1.1", c1.check_softmax, "not over dim=0", lambda x: sm_max(x.transpose(0, -1)).transpose(0, -1))
wrong("1.1", c1.check_softmax, "forget the exp", lambda x: x / x.sum(-1, keepdim=True))


# ================================================================ 1.2 attention
def att(scale=None, dim=-1, fill=float("-inf"), invert=False, fix_empty=True, after=False, inplace=False, bias_mode="add"):
    def attention(q, k, v, mask=None, bias=None):
        d_k = q.shape[-1]
        if inplace:
            q /= math.sqrt(d_k)
            s = q @ k.transpose(-2, -1)
        elif bias is not None and bias_mode == "before-scale":
            s = (q @ k.transpose(-2, -1) + bias) / math.sqrt(d_k)
        else:
            s = q @ k.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale(d_k))
        if bias is not None and bias_mode in ("add", "transpose"):
            s = s + (bias.transpose(-2, -1) if bias_mode == "transpose" else bias)
        if mask is not None and not after:
            keep = ~mask if invert else mask
            s = s.masked_fill(~keep, fill)
            if fix_empty:
                s = s.masked_fill(~keep.any(-1, keepdim=True), 0.0)
        w = torch.softmax(s, dim=dim)
        if mask is not None and (after or fix_empty):
            w = w.masked_fill(~(~mask if invert else mask), 0.0)
        return w @ v, w

    return attention


def att_einsum(q, k, v, mask=None, bias=None):
    s = torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5
    if bias is not None:
        s = s + bias
    if mask is not None:
        s = torch.where(mask, s, torch.tensor(float("-inf")))
        empty = ~mask.any(-1, keepdim=True)
        s = torch.where(empty, torch.zeros_like(s), s)
    w = s.softmax(-1)
    if mask is not None:
        w = w * mask
    return torch.einsum("...qk,...kd->...qd", w, v), w


right("1.2", c1.check_scaled_attention, att())
right("1.2", c1.check_scaled_attention, att_einsum)
wrong("1.2", c1.check_scaled_attention, "divide by d_k instead of sqrt(d_k)", att(scale=lambda d: d))
wrong("1.2", c1.check_scaled_attention, "forget the scaling", att(scale=lambda d: 1.0))
wrong("1.2", c1.check_scaled_attention, "wrong dimension", att(dim=-2))
wrong("1.2", c1.check_scaled_attention, "inverted", att(invert=True))
wrong("1.2", c1.check_scaled_attention, "before the softmax", att(after=True))
wrong("1.2", c1.check_scaled_attention, "-1e9", att(fill=-1e9, fix_empty=False))
wrong("1.2", c1.check_scaled_attention, "NaN", att(fix_empty=False))
wrong("1.2", c1.check_scaled_attention, INPLACE, att(inplace=True))
wrong("1.2", c1.check_scaled_attention, "tuple (output, weights)", lambda q, k, v, mask=None, bias=None: att()(q, k, v, mask, bias)[0])
right("1.2", c1.check_scaled_attention, lambda q, k, v, mask=None, bias=None: att_einsum(q, k, v, mask, bias))
wrong("1.2", c1.check_scaled_attention, "after the scaling", att(bias_mode="before-scale"))
wrong("1.2", c1.check_scaled_attention, "bias was ignored", att(bias_mode="ignore"))
wrong("1.2", c1.check_scaled_attention, "bias is transposed", att(bias_mode="transpose"))
wrong("1.2", c1.check_scaled_attention, "takes a score bias too", lambda q, k, v, mask=None: att()(q, k, v, mask))


# ================================================================ 1.3 the scale, measured (experiment)
right("1.3", c1.check_scale_experiment, "sharper", top_weight_ref)
right("1.3", c1.check_scale_experiment, lambda: "same", top_weight_sdpa)  # a wrong guess still passes
wrong("1.3", c1.check_scale_experiment, "instead of sqrt(d_k)", "sharper", lambda d, s, seed: top_weight_ref(d, s, seed, divide_by=lambda d: d))
wrong("1.3", c1.check_scale_experiment, "swap the two runs", "sharper", lambda d, s, seed: top_weight_ref(d, s, seed, scale_when=False))
wrong("1.3", c1.check_scale_experiment, "same number", "sharper", lambda d, s, seed: top_weight_ref(d, True, seed))
wrong("1.3", c1.check_scale_experiment, "1/16, the mean weight", "sharper", lambda d, s, seed: top_weight_ref(d, s, seed, reduce="mean"))
wrong("1.3", c1.check_scale_experiment, "outside [1/16, 1]", "sharper", lambda d, s, seed: 16 * top_weight_ref(d, s, seed))
wrong("1.3", c1.check_scale_experiment, "does not grow", "sharper", lambda d, s, seed: top_weight_ref(4, s, seed))
wrong("1.3", c1.check_scale_experiment, "not one of the choices", "peaky", top_weight_ref)
wrong("1.3", c1.check_scale_experiment, TYPED_IN, "sharper",
      lambda d, s, seed: {(4, True): 0.45, (4, False): 0.5, (256, True): 0.26, (256, False): 0.95}[d, s])


# ================================================================ 1.4 multi-head attention
class MHA(nn.Module):
    """A learner's multi-head attention with switches for typical mistakes."""

    def __init__(self, d_model, n_heads, mistake=""):
        super().__init__()
        self.h, self.d_k, self.mistake = n_heads, d_model // n_heads, mistake
        self.W_Q, self.W_K, self.W_V, self.W_O = (nn.Linear(d_model, d_model) for _ in range(4))
        if mistake == "extra":
            self.extra = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, T, d = x.shape
        m = self.mistake

        def split(t):
            return t.reshape(B, self.h, T, self.d_k) if m == "bad-split" else t.view(B, T, self.h, self.d_k).transpose(1, 2)

        q, k, v = split(self.W_Q(x)), split(self.W_K(x)), split(self.W_V(x))
        scale = {"sqrt-d-model": math.sqrt(d), "no-scale": 1.0}.get(m, math.sqrt(self.d_k))
        s = q @ k.transpose(-2, -1) / scale
        if mask is not None and m != "mask-after":
            s = s.masked_fill(mask if m == "invert" else ~mask, float("-inf"))
        w = torch.softmax(s, dim=-2 if m == "dim" else -1)
        if mask is not None and m == "mask-after":
            w = w.masked_fill(~mask, 0.0)
        out = w @ v
        merged = out.reshape(B, T, d) if m == "bad-split" else out.transpose(1, 2).reshape(B, T, d)
        if m == "inplace":
            x.zero_()
        return (merged if m == "no-W_O" else self.W_O(merged)), w


class MHAUsingReference(nn.Module):
    """Right answer in another style: one fused projection call per weight, scaled_dot_product_attention."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, T, d = x.shape
        heads = [t.unflatten(-1, (self.n_heads, -1)).transpose(1, 2) for t in (self.W_Q(x), self.W_K(x), self.W_V(x))]
        out, w = scaled_dot_product_attention(*heads, mask)
        return self.W_O(out.transpose(1, 2).flatten(-2)), w


def mha(mistake=""):
    return lambda d, h: MHA(d, h, mistake)


right("1.4", c1.check_mha, mha())
right("1.4", c1.check_mha, MHAUsingReference)
wrong("1.4", c1.check_mha, "output projection W_O", mha("no-W_O"))
wrong("1.4", c1.check_mha, "not sqrt(d_model)", mha("sqrt-d-model"))
wrong("1.4", c1.check_mha, "Split heads with view(B, T, h, d_k)", mha("bad-split"))
wrong("1.4", c1.check_mha, "divide the scores by sqrt(d_k)", mha("no-scale"))
wrong("1.4", c1.check_mha, "wrong dimension", mha("dim"))
wrong("1.4", c1.check_mha, "inverted", mha("invert"))
wrong("1.4", c1.check_mha, "before the softmax", mha("mask-after"))
wrong("1.4", c1.check_mha, "Extra layers", mha("extra"))
wrong("1.4", c1.check_mha, INPLACE, mha("inplace"))
wrong("1.4", c1.check_mha, "n_heads", lambda d, h: MHA(d, 1))


# ================================================================ 2.1 sinusoidal, any base, odd d_model
def pe_loop(T, d_model, base):
    pe = torch.zeros(T, d_model)
    for p in range(T):
        for j in range(d_model):
            angle = p / base ** (2 * (j // 2) / d_model)
            pe[p, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


def pe_vector(T, d_model, base, start=0, exp_num=2, swap=False, halves=False, integer=False, width=None, odd_cut=True):
    width = d_model if width is None else width
    p = torch.arange(start, start + T, dtype=torch.float32)[:, None]
    i = torch.arange((d_model + 1) // 2)
    expo = (exp_num * i // width) if integer else exp_num * i.float() / width
    ang = p / base**expo
    a, b = (ang.cos(), ang.sin()) if swap else (ang.sin(), ang.cos())
    if halves:
        return torch.cat([a, b[:, : d_model // 2]], -1)
    out = torch.stack([a, b], -1).flatten(-2)  # (T, 2 * ceil(d_model / 2))
    return out[:, :d_model] if odd_cut else out


right("2.1", c2.check_sinusoidal, pe_loop)
right("2.1", c2.check_sinusoidal, pe_vector)
right("2.1", c2.check_sinusoidal, lambda T, d, base: torch.from_numpy(np.array([[
    math.sin(p * base ** (-(j - j % 2) / d)) if j % 2 == 0 else math.cos(p * base ** (-(j - j % 2) / d))
    for j in range(d)] for p in range(T)], dtype=np.float32)))
wrong("2.1", c2.check_sinusoidal, "swapped", lambda T, d, base: pe_vector(T, d, base, swap=True))
wrong("2.1", c2.check_sinusoidal, "you used i/d_model", lambda T, d, base: pe_vector(T, d, base, exp_num=1))
wrong("2.1", c2.check_sinusoidal, "Use the base argument", lambda T, d, base: pe_vector(T, d, 10000.0))
wrong("2.1", c2.check_sinusoidal, "Interleave", lambda T, d, base: pe_vector(T, d, base, halves=True))
wrong("2.1", c2.check_sinusoidal, "Positions start at 0", lambda T, d, base: pe_vector(T, d, base, start=1))
wrong("2.1", c2.check_sinusoidal, "integer division", lambda T, d, base: pe_vector(T, d, base, integer=True))
wrong("2.1", c2.check_sinusoidal, "one more sine column", lambda T, d, base: pe_vector(T, d, base, odd_cut=False))
wrong("2.1", c2.check_sinusoidal, "one more sine column", lambda T, d, base: pe_vector(T, d - d % 2, base))
wrong("2.1", c2.check_sinusoidal, "built the table for d_model + 1", lambda T, d, base: pe_vector(T, d + d % 2, base)[:, :d])
wrong("2.1", c2.check_sinusoidal, "not by d_model - 1", lambda T, d, base: pe_vector(T, d, base, width=max(d - d % 2, 1)))
wrong("2.1", c2.check_sinusoidal, "should have shape", lambda T, d, base: pe_vector(50, 64, base))  # sizes hard-coded


# ================================================================ 2.2 shift rotation
def rot(k, d, sign=1.0, exp=lambda i, dd: 2 * i / dd, kk=None):
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = (k if kk is None else kk) / 10000 ** exp(i, d)
        c, s = math.cos(a), math.sin(a)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1], R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = c, sign * s, -sign * s, c
    return R


def rot_blocks(k, d):
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    c, s = torch.cos(k * w), torch.sin(k * w)
    return torch.block_diag(*[torch.stack([torch.stack([ci, si]), torch.stack([-si, ci])]) for ci, si in zip(c, s, strict=True)])


right("2.2", c2.check_shift_rotation, rot)
right("2.2", c2.check_shift_rotation, rot_blocks)
wrong("2.2", c2.check_shift_rotation, "shifts backwards", lambda k, d: rot(k, d, sign=-1.0))
wrong("2.2", c2.check_shift_rotation, "exponent i/d_model", lambda k, d: rot(k, d, exp=lambda i, dd: i / dd))
wrong("2.2", c2.check_shift_rotation, "every block by k", lambda k, d: rot(k, d, exp=lambda i, dd: 0.0))
wrong("2.2", c2.check_shift_rotation, "identity matrix", lambda k, d: torch.eye(d))
wrong("2.2", c2.check_shift_rotation, "as if k were 1", lambda k, d: rot(k, d, kk=1))
wrong("2.2", c2.check_shift_rotation, "should have shape", lambda k, d: rot(k, 16))  # d_model hard-coded


# ================================================================ 2.3 RoPE, halves convention
def rope_halves(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]  # (..., T, d_k/2) each
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def rope_rotate_half(x, cos, sin):
    h = x.shape[-1] // 2
    rotated = torch.cat([-x[..., h:], x[..., :h]], -1)  # (-x2, x1)
    return x * torch.cat([cos, cos], -1) + rotated * torch.cat([sin, sin], -1)


def rope_by_permutation(x, cos, sin):
    d = x.shape[-1]
    order = torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], -1).flatten()  # i, i + d/2, ...
    from course_utils.positional import apply_rope

    return apply_rope(x[..., order], cos, sin)[..., torch.argsort(order)]  # adjacent RoPE on regrouped dims


def rope_adjacent(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)


def rope_inplace(x, cos, sin):
    out = rope_halves(x, cos, sin)
    x.copy_(out)
    return x


def rope_rebuilt(x, cos, sin):
    from course_utils.positional import rope_tables

    c, s = rope_tables(x.shape[-2], x.shape[-1])
    return rope_halves(x, c, s)


right("2.3", c2.check_apply_rope, rope_halves)
right("2.3", c2.check_apply_rope, rope_rotate_half)
right("2.3", c2.check_apply_rope, rope_by_permutation)
wrong("2.3", c2.check_apply_rope, "You paired adjacent dimensions", rope_adjacent)
wrong("2.3", c2.check_apply_rope, "rotated by -m w_i", lambda x, c, s: rope_halves(x, c, -s))
wrong("2.3", c2.check_apply_rope, "rotated by -m w_i", lambda x, c, s: x * torch.cat([c, c], -1)
      + torch.cat([x[..., x.shape[-1] // 2 :], -x[..., : x.shape[-1] // 2]], -1) * torch.cat([s, s], -1))
wrong("2.3", c2.check_apply_rope, "rather than interleaving", lambda x, c, s: torch.stack(
    [rope_halves(x, c, s)[..., : x.shape[-1] // 2], rope_halves(x, c, s)[..., x.shape[-1] // 2 :]], -1).flatten(-2))
wrong("2.3", c2.check_apply_rope, "swapped", lambda x, c, s: rope_halves(x, s, c))
wrong("2.3", c2.check_apply_rope, "Nothing was rotated", lambda x, c, s: x.clone())
wrong("2.3", c2.check_apply_rope, INPLACE, rope_inplace)
wrong("2.3", c2.check_apply_rope, "tables passed in", rope_rebuilt)


# ================================================================ 2.4 ALiBi, any number of heads
def slopes_pow2(n):
    return (2.0 ** (-8.0 / n)) ** torch.arange(1, n + 1, dtype=torch.float32)


def slopes_ref(n, extra_start=0, extra_first=False, next_up=False):
    n0 = 2 ** int(math.log2(n))
    if next_up and n0 < n:
        return slopes_pow2(2 * n0)[:n]
    extra = slopes_pow2(2 * n0)
    extra = extra[: n - n0] if extra_first else extra[extra_start::2][: n - n0]
    return torch.cat([slopes_pow2(n0), extra])


def slopes_halving_ratio(n):
    n0 = 1 << (n.bit_length() - 1)
    r0 = 2.0 ** (-8.0 / n0)
    return torch.tensor([r0 ** (h + 1) for h in range(n0)] + [r0 ** (h + 0.5) for h in range(n - n0)])


right("2.4", c2.check_alibi_slopes, slopes_ref)
right("2.4", c2.check_alibi_slopes, slopes_halving_ratio)
wrong("2.4", c2.check_alibi_slopes, "Halving per head", lambda n: torch.tensor([2.0 ** -(h + 1) for h in range(n)]))
wrong("2.4", c2.check_alibi_slopes, "not 1", lambda n: (2.0 ** (-8.0 / n)) ** torch.arange(0, n, dtype=torch.float32))
wrong("2.4", c2.check_alibi_slopes, "Largest slope first", lambda n: slopes_ref(n).flip(0))
wrong("2.4", c2.check_alibi_slopes, "positive numbers", lambda n: -slopes_ref(n))
wrong("2.4", c2.check_alibi_slopes, "is not a power of two", slopes_pow2)
wrong("2.4", c2.check_alibi_slopes, "not its first", lambda n: slopes_ref(n, extra_first=True))
wrong("2.4", c2.check_alibi_slopes, "repeat the", lambda n: slopes_ref(n, extra_start=1))
wrong("2.4", c2.check_alibi_slopes, "not the next one up", lambda n: slopes_ref(n, next_up=True))
wrong("2.4", c2.check_alibi_slopes, "do not sort them", lambda n: slopes_ref(n).sort(descending=True).values)
wrong("2.4", c2.check_alibi_slopes, "should have shape", lambda n: torch.tensor([2.0 ** -(h + 1) for h in range(8)]))
wrong("2.4", c2.check_alibi_slopes, "should be a torch.Tensor", lambda n: slopes_ref(n).tolist())


# ================================================================ 3.1 RMS norm
def rms(dim=-1, centre=False, eps_out=False, affine=True, fixed_eps=None, no_sqrt=False, use_sum=False, inplace=False):
    def rms_norm(x, gamma, eps):
        e = eps if fixed_eps is None else fixed_eps
        if centre:
            x = x - x.mean(dim, keepdim=True)
        sq = x.pow(2).sum(dim, keepdim=True) if use_sum else x.pow(2).mean(dim, keepdim=True)
        if inplace:
            x /= (sq + e).sqrt()
            y = x
        elif no_sqrt:
            y = x / (sq + e)
        else:
            y = x / (sq.sqrt() + e if eps_out else (sq + e).sqrt())
        return gamma * y if affine else y

    return rms_norm


right("3.1", c3.check_rms_norm, rms())
right("3.1", c3.check_rms_norm, lambda x, g, eps: F.rms_norm(x, x.shape[-1:], g, eps))
right("3.1", c3.check_rms_norm, lambda x, g, eps: g * x * torch.rsqrt(torch.linalg.vector_norm(x, dim=-1, keepdim=True) ** 2 / x.shape[-1] + eps))
wrong("3.1", c3.check_rms_norm, "does not subtract the mean", rms(centre=True))
wrong("3.1", c3.check_rms_norm, "does not subtract the mean", lambda x, g, eps: F.layer_norm(x, x.shape[-1:], g, None, eps))
wrong("3.1", c3.check_rms_norm, "eps inside the sqrt", rms(eps_out=True))
wrong("3.1", c3.check_rms_norm, "forget gamma", rms(affine=False))
wrong("3.1", c3.check_rms_norm, "not over the batch", rms(dim=0))
wrong("3.1", c3.check_rms_norm, "not their sum", rms(use_sum=True))
wrong("3.1", c3.check_rms_norm, "Use the eps argument", rms(fixed_eps=1e-5))
wrong("3.1", c3.check_rms_norm, "forget eps", rms(fixed_eps=0.0))
wrong("3.1", c3.check_rms_norm, "not by the mean square itself", rms(no_sqrt=True))
wrong("3.1", c3.check_rms_norm, "not by its standard deviation", lambda x, g, eps: g * x / (x.var(-1, keepdim=True, unbiased=False) + eps).sqrt())
wrong("3.1", c3.check_rms_norm, INPLACE, rms(inplace=True))


# ================================================================ 3.2 residual sublayer
def sub_ref(x, sublayer, norm, placement):
    return norm(x + sublayer(x)) if placement == "post" else x + sublayer(norm(x))


def sub_dict(x, sublayer, norm, placement):
    return {"post": lambda: norm(x + sublayer(x)), "pre": lambda: x + sublayer(norm(x))}[placement]()


def sub_fresh_norm(x, sublayer, norm, placement):
    fresh = nn.LayerNorm(x.shape[-1])
    return fresh(x + sublayer(x)) if placement == "post" else x + sublayer(fresh(x))


def sub_inplace(x, sublayer, norm, placement):
    if placement == "post":
        x += sublayer(x)
        return norm(x)
    return x + sublayer(norm(x))


right("3.2", c3.check_residual_sublayer, sub_ref)
right("3.2", c3.check_residual_sublayer, sub_dict)
wrong("3.2", c3.check_residual_sublayer, "pre-LN result for placement='post'",
      lambda x, s, n, p: x + s(n(x)))
wrong("3.2", c3.check_residual_sublayer, "forget the residual",
      lambda x, s, n, p: n(s(x)) if p == "post" else s(n(x)))
wrong("3.2", c3.check_residual_sublayer, "normalises the sum", lambda x, s, n, p: x + n(s(x)) if p == "post" else
      x + s(n(x)))
wrong("3.2", c3.check_residual_sublayer, "adds the raw x back", lambda x, s, n, p: n(x + s(x)) if p == "post" else
      n(x) + s(n(x)))
wrong("3.2", c3.check_residual_sublayer, "no norm after the sum", lambda x, s, n, p: n(x + s(x)) if p == "post" else
      n(x + s(n(x))))
wrong("3.2", c3.check_residual_sublayer, "Use the norm passed in", sub_fresh_norm)
wrong("3.2", c3.check_residual_sublayer, INPLACE, sub_inplace)


# ================================================================ 3.3 residuals, trained (experiment)
right("3.3", c3.check_residual_experiment, "residual only", deep_stack)
right("3.3", c3.check_residual_experiment, lambda: "both", deep_stack_sequential)  # a wrong guess still passes
wrong("3.3", c3.check_residual_experiment, "division by the targets' variance", "both", lambda r, s: deep_stack(r, s, normalise=False))
wrong("3.3", c3.check_residual_experiment, "rather than the first", "both", lambda r, s: deep_stack(r, s, last=False))
wrong("3.3", c3.check_residual_experiment, "keep a residual connection", "both", lambda r, s: deep_stack(not r, s))
wrong("3.3", c3.check_residual_experiment, "same number", "both", lambda r, s: deep_stack(True, s))
wrong("3.3", c3.check_residual_experiment, "NaN", "both", lambda r, s: deep_stack(r, s, lr=0.05))
wrong("3.3", c3.check_residual_experiment, "not one of the choices", "all", deep_stack)
wrong("3.3", c3.check_residual_experiment, TYPED_IN, "residual only", lambda r, s: 0.2 if r else 0.97)


# ================================================================ 3.4 masked statistics
def stats_ref(x, keep):
    t = x[keep]
    return t.mean(0), t.var(0, unbiased=False)


def stats_weighted(x, keep):
    w = keep.unsqueeze(-1).to(x.dtype)
    n = w.sum()
    mean = (x * w).sum((0, 1)) / n
    var = (((x - mean) ** 2) * w).sum((0, 1)) / n
    return mean, var


def stats_inplace(x, keep):
    x[~keep] = 0.0
    n = keep.sum()
    mean = x.sum((0, 1)) / n
    return mean, ((x - mean) ** 2 * keep[..., None]).sum((0, 1)) / n


right("3.4", c3.check_masked_stats, stats_ref)
right("3.4", c3.check_masked_stats, stats_weighted)
wrong("3.4", c3.check_masked_stats, "includes the pad positions", lambda x, k: (x.flatten(0, 1).mean(0),
                                                                                 x.flatten(0, 1).var(0, unbiased=False)))
wrong("3.4", c3.check_masked_stats, "not by B * T", lambda x, k: ((x * k[..., None]).sum((0, 1)) / (x.shape[0] * x.shape[1]),
                                                                  stats_ref(x, k)[1]))
wrong("3.4", c3.check_masked_stats, "biased variance", lambda x, k: (x[k].mean(0), x[k].var(0)))
wrong("3.4", c3.check_masked_stats, "inverted", lambda x, k: (x[~k].mean(0), x[~k].var(0, unbiased=False)))
wrong("3.4", c3.check_masked_stats, "not per sequence first",
      lambda x, k: (torch.stack([x[b][k[b]].mean(0) for b in range(x.shape[0])]).mean(0), stats_ref(x, k)[1]))
wrong("3.4", c3.check_masked_stats, "per feature", lambda x, k: (x[k].mean().expand(x.shape[-1]), stats_ref(x, k)[1]))
wrong("3.4", c3.check_masked_stats, INPLACE, stats_inplace)


# ================================================================ 4.1 sliding-window causal mask
def window_loop(T, w):
    m = torch.zeros(1, 1, T, T, dtype=torch.bool)
    for i in range(T):
        m[0, 0, i, max(0, i - w + 1) : i + 1] = True
    return m


def window_tri(T, w):
    full = torch.ones(T, T, dtype=torch.bool)
    return (full.tril() & ~full.tril(-w)).view(1, 1, T, T)


def window_dist(T, w):
    return torch.arange(T)[:, None] - torch.arange(T)[None, :]  # (T, T): query minus key position


right("4.1", c4.check_window_mask, window_tri)
right("4.1", c4.check_window_mask, window_loop)
right("4.1", c4.check_window_mask, lambda T, w: ((window_dist(T, w) >= 0) & (window_dist(T, w) < w))[None, None])
right("4.1", c4.check_window_mask, lambda T, w: torch.ones(T, T, dtype=torch.bool).tril().triu(-(w - 1)).view(1, 1, T, T))
wrong("4.1", c4.check_window_mask, "plain causal mask", lambda T, w: torch.ones(T, T, dtype=torch.bool).tril().view(1, 1, T, T))
wrong("4.1", c4.check_window_mask, "sees w + 1 keys", lambda T, w: ((window_dist(T, w) >= 0) & (window_dist(T, w) <= w))[None, None])
wrong("4.1", c4.check_window_mask, "only w - 1 keys", lambda T, w: ((window_dist(T, w) >= 0) & (window_dist(T, w) < w - 1))[None, None])
wrong("4.1", c4.check_window_mask, "looks into the future", lambda T, w: window_tri(T, w).transpose(-2, -1))
wrong("4.1", c4.check_window_mask, "centred on the query", lambda T, w: (window_dist(T, w).abs() <= w // 2)[None, None])
wrong("4.1", c4.check_window_mask, "diagonal is masked", lambda T, w: ((window_dist(T, w) > 0) & (window_dist(T, w) <= w))[None, None])
wrong("4.1", c4.check_window_mask, "inverted", lambda T, w: ~window_tri(T, w))
wrong("4.1", c4.check_window_mask, "Add batch and head dimensions", lambda T, w: window_tri(T, w)[0, 0])
wrong("4.1", c4.check_window_mask, "not torch.bool", lambda T, w: window_tri(T, w).float())
wrong("4.1", c4.check_window_mask, "should have shape", lambda T, w: window_tri(8, w))


# ================================================================ 4.2 padding mask from lengths
def length_inplace(lengths, T):
    lengths.unsqueeze_(1)  # (B, 1), changes the caller's tensor
    return (torch.arange(T) < lengths).view(lengths.shape[0], 1, 1, T)


def length_loop(lengths, T):
    m = torch.zeros(lengths.shape[0], 1, 1, T, dtype=torch.bool)
    for b, n in enumerate(lengths.tolist()):
        m[b, ..., :n] = True
    return m


right("4.2", c4.check_length_mask, lambda L, T: (torch.arange(T) < L[:, None]).view(L.shape[0], 1, 1, T))
right("4.2", c4.check_length_mask, length_loop)
right("4.2", c4.check_length_mask, lambda L, T: (torch.ones(L.shape[0], T).cumsum(-1) <= L[:, None])[:, None, None, :])
wrong("4.2", c4.check_length_mask, "one position too many", lambda L, T: (torch.arange(T) <= L[:, None])[:, None, None, :])
wrong("4.2", c4.check_length_mask, "one position too few", lambda L, T: (torch.arange(T) < L[:, None] - 1)[:, None, None, :])
wrong("4.2", c4.check_length_mask, "inverted", lambda L, T: (torch.arange(T) >= L[:, None])[:, None, None, :])
wrong("4.2", c4.check_length_mask, "right padding", lambda L, T: (torch.arange(T) >= T - L[:, None])[:, None, None, :])
wrong("4.2", c4.check_length_mask, "its own length", lambda L, T: (torch.arange(T) < L.max()).expand(L.shape[0], T)[:, None, None, :])
wrong("4.2", c4.check_length_mask, "Reshape with .view(B, 1, 1, T)", lambda L, T: torch.arange(T) < L[:, None])
wrong("4.2", c4.check_length_mask, "The padding is on the keys", lambda L, T: (torch.arange(T) < L[:, None])[:, None, :, None])
wrong("4.2", c4.check_length_mask, "not lengths.max()", lambda L, T: (torch.arange(int(L.max())) < L[:, None])[:, None, None, :])
wrong("4.2", c4.check_length_mask, "lengths[:, None]", lambda L, T: (torch.arange(T) < L).view(-1, 1, 1, T))
wrong("4.2", c4.check_length_mask, "not torch.bool", lambda L, T: (torch.arange(T) < L[:, None]).float()[:, None, None, :])
wrong("4.2", c4.check_length_mask, INPLACE, length_inplace)


# ================================================================ 4.3 no causal mask, trained (experiment)
right("4.3", c4.check_mask_experiment, "lower", next_token)
right("4.3", c4.check_mask_experiment, lambda: "higher", next_token_torch_layer)  # a wrong guess still passes
wrong("4.3", c4.check_mask_experiment, "targets the inputs shifted by one", "lower", lambda c, s: next_token(c, s, shift=False))
wrong("4.3", c4.check_mask_experiment, "the last steps (not the first)", "lower", lambda c, s: next_token(c, s, last=False))
wrong("4.3", c4.check_mask_experiment, "Below ln 8 on random tokens", "lower", lambda c, s: next_token(c, s, inverted=True))
wrong("4.3", c4.check_mask_experiment, "same loss", "lower", lambda c, s: next_token(True, s))
wrong("4.3", c4.check_mask_experiment, "really drop the mask", "lower", lambda c, s: next_token(c, s, steps=20))
wrong("4.3", c4.check_mask_experiment, "not one of the choices", "smaller", next_token)
wrong("4.3", c4.check_mask_experiment, TYPED_IN, "lower", lambda c, s: 2.08 if c else 0.26)


# ================================================================ 4.4 softmax with an additive mask
def add_ref(s, b):
    z = s + b
    empty = torch.isneginf(z).all(-1, keepdim=True)
    return torch.softmax(z.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)


def add_manual(s, b):
    z = s + b
    m = z.amax(-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # an all -inf row: subtract 0, not -inf
    e = (z - m).exp()
    return e / e.sum(-1, keepdim=True).clamp_min(1e-30)


right("4.4", c4.check_additive_softmax, add_ref)
right("4.4", c4.check_additive_softmax, lambda s, b: torch.softmax(s + b, -1).nan_to_num(0.0))
right("4.4", c4.check_additive_softmax, add_manual)
wrong("4.4", c4.check_additive_softmax, "returns NaN", lambda s, b: torch.softmax(s + b, -1))
wrong("4.4", c4.check_additive_softmax, "not uniform", lambda s, b: torch.softmax((s + b).clamp_min(-1e9), -1))
wrong("4.4", c4.check_additive_softmax, "not a keep-mask", lambda s, b: add_ref(s.masked_fill(b != 0, float("-inf")), 0.0))
wrong("4.4", c4.check_additive_softmax, "Add the bias to the scores", lambda s, b: add_ref(s.masked_fill(b.isinf(), float("-inf")), 0.0))
wrong("4.4", c4.check_additive_softmax, "not renormalised", lambda s, b: torch.softmax(s, -1) * b.exp())
wrong("4.4", c4.check_additive_softmax, "wrong dimension", lambda s, b: torch.softmax(s + b, -2).nan_to_num(0.0))
wrong("4.4", c4.check_additive_softmax, "bias was ignored", lambda s, b: torch.softmax(s, -1))
wrong("4.4", c4.check_additive_softmax, INPLACE, lambda s, b: add_ref(s.add_(b), 0.0))


# ================================================================ 5.1 FFN
class FFN(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1, mistake=""):
        super().__init__()
        self.linear1, self.linear2, self.m = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), mistake
        self.dropout = nn.Dropout(0.1 if mistake == "fixed-p" else dropout)
        if mistake == "no-bias":
            self.linear1, self.linear2 = nn.Linear(d_model, d_ff, bias=False), nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        m = self.m
        h = self.linear1(self.dropout(x) if m == "drop-in" else x)
        h = {"no-relu": h, "gelu": F.gelu(h)}.get(m, torch.relu(h))
        if m not in ("drop-out", "drop-in"):
            h = self.dropout(h)
        out = self.linear2(h)
        if m == "relu-out":
            out = torch.relu(out)
        if m == "drop-out":
            out = self.dropout(out)
        if m == "f-dropout-always":
            out = self.linear2(F.dropout(torch.relu(self.linear1(x)), self.dropout.p))
        return out


class FFNSequential(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))

    def forward(self, x):
        return self.net(x)


class FFNFunctional(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w1, self.w2, self.p = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), dropout

    def forward(self, x):
        return self.w2(F.dropout(F.relu(self.w1(x)), self.p, self.training))


def ffn(mistake):
    return lambda d, f, p=0.1: FFN(d, f, p, mistake)


right("5.1", c5.check_ffn, ffn(""))
right("5.1", c5.check_ffn, FFNSequential)
right("5.1", c5.check_ffn, FFNFunctional)
wrong("5.1", c5.check_ffn, "forget the ReLU", ffn("no-relu"))
wrong("5.1", c5.check_ffn, "not GELU", ffn("gelu"))
wrong("5.1", c5.check_ffn, "not after the second one", ffn("relu-out"))
wrong("5.1", c5.check_ffn, "no biases", ffn("no-bias"))
wrong("5.1", c5.check_ffn, "not on the output", ffn("drop-out"))
wrong("5.1", c5.check_ffn, "not on the input", ffn("drop-in"))
wrong("5.1", c5.check_ffn, "Use the dropout argument", ffn("fixed-p"))
wrong("5.1", c5.check_ffn, "In eval mode dropout must be off", ffn("f-dropout-always"))
wrong("5.1", c5.check_ffn, "should hold two nn.Linear", lambda d, f, p=0.1: FFNSequential(d, 2 * d, p))


# ================================================================ 5.2 a multi-query layer (derive)
right("5.2", c5.check_mqa_layer_params, mqa_ok)
right("5.2", c5.check_mqa_layer_params, mqa_by_modules)
wrong("5.2", c5.check_mqa_layer_params, "That is the table's encoder layer", lambda d, h, f: 4 * (d * d + d) + 2 * d * f + f + d + 4 * d)
wrong("5.2", c5.check_mqa_layer_params, "biases of the shared K and V", lambda d, h, f: mqa_ok(d, h, f) - 2 * (d // h))
wrong("5.2", c5.check_mqa_layer_params, "two separate projections", lambda d, h, f: mqa_ok(d, h, f) - (d * (d // h) + d // h))
wrong("5.2", c5.check_mqa_layer_params, "keeps its d_model x d_model weight", lambda d, h, f: mqa_ok(d, h, f) - (d * d - (d // h) * d))
wrong("5.2", c5.check_mqa_layer_params, "forget the two LayerNorms", lambda d, h, f: mqa_ok(d, h, f) - 4 * d)
wrong("5.2", c5.check_mqa_layer_params, "two LayerNorms, one per sub-layer", lambda d, h, f: mqa_ok(d, h, f) - 2 * d)
wrong("5.2", c5.check_mqa_layer_params, "should return an int", lambda d, h, f: float(mqa_ok(d, h, f)) + 0.5)


# ================================================================ 5.3 decoder block
def dec(kv_self=False, no_tgt=False, no_src=False, no_res=False, pre=False, inplace=False, no_self_res=False):
    def block_fn(block, x, memory, tgt_mask, src_mask):
        if pre:
            x = x + block.self_attn(block.norm1(x), mask=tgt_mask)[0]
            x = x + block.cross_attn(block.norm2(x), memory, memory, mask=src_mask)[0]
            return x + block.ffn(block.norm3(x))
        a = block.self_attn(x, mask=None if no_tgt else tgt_mask)[0]
        x = block.norm1(a if no_self_res else x + a)
        kv = x if kv_self else memory
        c = block.cross_attn(x, kv, kv, mask=tgt_mask if kv_self else (None if no_src else src_mask))[0]
        x = block.norm2(c if no_res else x + c)
        if inplace:
            memory.zero_()
        return block.norm3(x + block.ffn(x))

    return block_fn


right("5.3", c5.check_decoder_block, dec())
right("5.3", c5.check_decoder_block, lambda block, x, memory, t, s: block(x, memory, t, s)[0])
wrong("5.3", c5.check_decoder_block, "K and V must come from the encoder", dec(kv_self=True))
wrong("5.3", c5.check_decoder_block, "causal tgt_mask", dec(no_tgt=True))
wrong("5.3", c5.check_decoder_block, "needs src_mask", dec(no_src=True))
wrong("5.3", c5.check_decoder_block, "residual around cross-attention", dec(no_res=True))
wrong("5.3", c5.check_decoder_block, "you wrote pre-LN", dec(pre=True))
wrong("5.3", c5.check_decoder_block, "residual around self-attention", dec(no_self_res=True))
wrong("5.3", c5.check_decoder_block, INPLACE, dec(inplace=True))


# ================================================================ 5.4 embedding
def emb(scale=lambda d: math.sqrt(d), start=0, outer=False, fixed=None):
    def embed(tokens, embedding, pe):
        d = embedding.embedding_dim if fixed is None else fixed
        T = tokens.shape[1]
        e = embedding(tokens)
        if outer:
            return (e + pe[:T]) * math.sqrt(d)
        return e * scale(d) + pe[start : start + T]

    return embed


right("5.4", c5.check_embed, emb())
right("5.4", c5.check_embed, lambda t, e, pe: F.embedding(t, e.weight) * e.weight.shape[1] ** 0.5 + pe[None, : t.shape[1]])
wrong("5.4", c5.check_embed, "Multiply the embeddings by sqrt(d_model)", emb(scale=lambda d: 1.0))
wrong("5.4", c5.check_embed, "not by d_model", emb(scale=lambda d: d))
wrong("5.4", c5.check_embed, "Divide? No", emb(scale=lambda d: 1 / math.sqrt(d)))
wrong("5.4", c5.check_embed, "Scale only the embeddings", emb(outer=True))
wrong("5.4", c5.check_embed, "Positions start at 0", emb(start=1))
wrong("5.4", c5.check_embed, "embedding.embedding_dim", emb(fixed=16))
wrong("5.4", c5.check_embed, INPLACE, lambda t, e, pe: e(t.clamp_(max=5)) * math.sqrt(e.embedding_dim) + pe[: t.shape[1]])
wrong("5.4", c5.check_embed, "pe[:tokens.shape[1]]", lambda t, e, pe: e(t) * math.sqrt(e.embedding_dim) + pe)


# ================================================================ 6.1 shift right
def shift_ref(t):
    tin = torch.cat([torch.full((t.shape[0], 1), SOS_ID, dtype=t.dtype), t[:, :-1]], 1)
    return tin.masked_fill(tin == EOS_ID, PAD_ID)


def shift_roll(t):
    out = t.roll(1, dims=1)
    out[:, 0] = SOS_ID
    return torch.where(out == EOS_ID, torch.zeros_like(out), out)


def shift_inplace(t):
    t[t == EOS_ID] = PAD_ID
    return torch.cat([torch.full((t.shape[0], 1), SOS_ID), t[:, :-1]], 1)


right("6.1", c6.check_shift_right, shift_ref)
right("6.1", c6.check_shift_right, shift_roll)
wrong("6.1", c6.check_shift_right, "EOS token is still", lambda t: torch.cat([torch.full((t.shape[0], 1), SOS_ID), t[:, :-1]], 1))
wrong("6.1", c6.check_shift_right, "shifted left", lambda t: torch.cat([t[:, 1:], torch.zeros(t.shape[0], 1, dtype=t.dtype)], 1))
wrong("6.1", c6.check_shift_right, "must be SOS", lambda t: shift_ref(t).masked_fill(
    torch.arange(t.shape[1]) == 0, PAD_ID))
wrong("6.1", c6.check_shift_right, "unchanged", lambda t: t.clone())
wrong("6.1", c6.check_shift_right, "Drop the last column", lambda t: (lambda x: x.masked_fill(x == EOS_ID, PAD_ID))(
    torch.cat([torch.full((t.shape[0], 1), SOS_ID), t[:, 1:]], 1)))
wrong("6.1", c6.check_shift_right, "Drop the last column after putting SOS in front",
      lambda t: torch.cat([torch.full((t.shape[0], 1), SOS_ID), t], 1))
wrong("6.1", c6.check_shift_right, INPLACE, shift_inplace)


# ================================================================ 7.1 alignment score
def align_ref(w, lengths):
    total, count = torch.zeros(w.shape[1]), 0
    for b, L in enumerate(lengths.tolist()):
        t = torch.arange(L)
        total += w[b, :, t, L - 1 - t].sum(-1)
        count += L
    return total / count


def align_vector(w, lengths):
    from course_utils.analysis import alignment_score, reversal_targets

    return alignment_score(w, reversal_targets(lengths, w.shape[2]))


def align_variant(target):
    def score(w, lengths):
        total, count = torch.zeros(w.shape[1]), 0
        T_k = w.shape[-1]
        for b, L in enumerate(lengths.tolist()):
            for t in range(w.shape[2]):
                j = target(t, L, T_k)
                if j is None:
                    continue
                total += w[b, :, t, j] if 0 <= j < T_k else 0.0
                count += 1
        return total / count

    return score


right("7.1", c7.check_alignment_score, align_ref)
right("7.1", c7.check_alignment_score, align_vector)
wrong("7.1", c7.check_alignment_score, "main diagonal", align_variant(lambda t, L, Tk: t if t < L else None))
wrong("7.1", c7.check_alignment_score, "not the padded width", align_variant(lambda t, L, Tk: Tk - 1 - t if t < L else None))
wrong("7.1", c7.check_alignment_score, "not L-t", align_variant(lambda t, L, Tk: L - t if t < L else None))
wrong("7.1", c7.check_alignment_score, "Leave out the EOS step",
      align_variant(lambda t, L, Tk: (L - 1 - t) % Tk if t <= L else None))
wrong("7.1", c7.check_alignment_score, "not per example first", lambda w, lengths: torch.stack(
    [align_ref(w[b : b + 1], lengths[b : b + 1]) for b in range(w.shape[0])]).mean(0))
wrong("7.1", c7.check_alignment_score, INPLACE, lambda w, lengths: align_ref(w.clamp_(min=0.0).mul_(1.0000001), lengths))


# ================================================================ 7.2 entropy
def ent_ref(w, qm):
    rows = w.permute(0, 2, 1, 3)[qm]
    return -torch.special.xlogy(rows, rows).sum(-1).mean(0)


def ent_loop(w, qm):
    h = torch.zeros(w.shape[1], dtype=torch.float64)
    n = 0
    for b in range(w.shape[0]):
        for t in range(w.shape[2]):
            if qm[b, t]:
                p = w[b, :, t].double()
                h += -(p * torch.where(p > 0, p.log(), torch.zeros_like(p))).sum(-1)
                n += 1
    return (h / n).float()


right("7.2", c7.check_entropy, ent_ref)
right("7.2", c7.check_entropy, ent_loop)
wrong("7.2", c7.check_entropy, "returned NaN", lambda w, qm: -(w * w.log()).sum(-1).permute(0, 2, 1)[qm].mean(0))
wrong("7.2", c7.check_entropy, "not log2", lambda w, qm: ent_ref(w, qm) / math.log(2))
wrong("7.2", c7.check_entropy, "padding rows are not real queries",
      lambda w, qm: -torch.special.xlogy(w, w).sum(-1).mean(dim=(0, 2)))
wrong("7.2", c7.check_entropy, "do not sum them",
      lambda w, qm: -torch.special.xlogy(w, w).sum(-1).permute(0, 2, 1)[qm].sum(0))
wrong("7.2", c7.check_entropy, "sign is flipped", lambda w, qm: -ent_ref(w, qm))
wrong("7.2", c7.check_entropy, "not log10", lambda w, qm: ent_ref(w, qm) / math.log(10))
wrong("7.2", c7.check_entropy, "not the mean over keys", lambda w, qm: ent_ref(w, qm) / w.shape[-1])
wrong("7.2", c7.check_entropy, INPLACE, lambda w, qm: ent_ref(w.clamp_(min=1e-12), qm))


# ================================================================ 7.3 strongest head
right("7.3", c7.check_strongest_head, lambda s: divmod(int(s.argmax()), s.shape[1]))
right("7.3", c7.check_strongest_head, lambda s: tuple(np.unravel_index(int(s.argmax()), tuple(s.shape))))
right("7.3", c7.check_strongest_head, lambda s: tuple(torch.nonzero(s == s.max())[0]))
wrong("7.3", c7.check_strongest_head, "pair is swapped", lambda s: divmod(int(s.argmax()), s.shape[1])[::-1])
wrong("7.3", c7.check_strongest_head, "weakest head", lambda s: divmod(int(s.argmin()), s.shape[1]))
wrong("7.3", c7.check_strongest_head, "not of layers", lambda s: divmod(int(s.argmax()), s.shape[0]))
wrong("7.3", c7.check_strongest_head, "added 1 to the head", lambda s: (lambda l, h: (l, h + 1))(*divmod(int(s.argmax()), s.shape[1])))
wrong("7.3", c7.check_strongest_head, "added 1 to both",
      lambda s: (lambda l, h: (l + 1, h + 1))(*divmod(int(s.argmax()), s.shape[1])))
wrong("7.3", c7.check_strongest_head, "divmod(index, n_heads)", lambda s: int(s.argmax()))
wrong("7.3", c7.check_strongest_head, "not the overall largest", lambda s: (0, int(s[0].argmax())))
wrong("7.3", c7.check_strongest_head, INPLACE, lambda s: divmod(int(s.sub_(s.min()).argmax()), s.shape[1]))


# ================================================================ 7.4 copy targets
def copy_ref(lengths, T_q):
    t = torch.arange(T_q).unsqueeze(0).expand(len(lengths), T_q)
    return torch.where(t < lengths.unsqueeze(1), t, -1)


def copy_loop(lengths, T_q):
    return torch.tensor([[t if t < L else -1 for t in range(T_q)] for L in lengths.tolist()])


right("7.4", c7.check_copy_targets, copy_ref)
right("7.4", c7.check_copy_targets, copy_loop)
wrong("7.4", c7.check_copy_targets, "reversal pattern", lambda lengths, T_q: torch.where(
    torch.arange(T_q) < lengths[:, None], lengths[:, None] - 1 - torch.arange(T_q), -1))
wrong("7.4", c7.check_copy_targets, "mark them -1", lambda lengths, T_q: torch.arange(T_q).expand(len(lengths), T_q))
wrong("7.4", c7.check_copy_targets, "not t+1", lambda lengths, T_q: torch.where(
    torch.arange(T_q) < lengths[:, None], torch.arange(T_q) + 1, -1))
wrong("7.4", c7.check_copy_targets, "Use < L, not <= L", lambda lengths, T_q: torch.where(
    torch.arange(T_q) <= lengths[:, None], torch.arange(T_q), -1))
wrong("7.4", c7.check_copy_targets, "Use -1 (not 0)", lambda lengths, T_q: torch.where(
    torch.arange(T_q) < lengths[:, None], torch.arange(T_q), 0))
wrong("7.4", c7.check_copy_targets, "integer positions", lambda lengths, T_q: copy_ref(lengths, T_q).float())
wrong("7.4", c7.check_copy_targets, "should have shape", lambda lengths, T_q: copy_ref(lengths, 6))
wrong("7.4", c7.check_copy_targets, INPLACE, lambda lengths, T_q: (lambda L: torch.where(
    torch.arange(T_q) < L, torch.arange(T_q), -1))(lengths.unsqueeze_(1)))


# ================================================================ issue 23: the mistake kinds a careful reviewer tries
# swapped return order, an ignored mask, a sum over the wrong axis or the whole tensor, a sign error
# in an exponent, a missing epsilon, a causal mask shifted by one, a positional table indexed by token
# id, an alignment score normalised by the wrong count, an inverted query mask
def att_swapped(q, k, v, mask=None, bias=None):
    out, w = att_einsum(q, k, v, mask, bias)
    return w, out


class MHASwapped(MHA):
    def forward(self, x, mask=None):
        out, w = super().forward(x, mask)
        return w, out


class MHANoMask(MHA):
    def forward(self, x, mask=None):
        return super().forward(x, None)


def sm_whole(x):
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum()


wrong("1.1", c1.check_softmax, "not by the sum over the whole tensor", sm_whole)
wrong("1.2", c1.check_scaled_attention, "order (output, weights)", att_swapped)
wrong("1.2", c1.check_scaled_attention, "mask was ignored", lambda q, k, v, mask=None, bias=None: att_einsum(q, k, v, None, bias))
wrong("1.4", c1.check_mha, "order (output, weights)", lambda d, h: MHASwapped(d, h))
wrong("1.4", c1.check_mha, "mask was ignored", lambda d, h: MHANoMask(d, h))
wrong("3.1", c3.check_rms_norm, "not over the whole tensor", lambda x, g, eps: g * x / (x.pow(2).mean() + eps).sqrt())
wrong("3.4", c3.check_masked_stats, "order (mean, var)", lambda x, k: stats_ref(x, k)[::-1])
wrong("4.4", c4.check_additive_softmax, "not by the sum over the whole tensor", lambda s, b: (lambda e: e / e.sum())((s + b).exp()))
wrong("5.4", c5.check_embed, "indexed by token id", lambda t, e, pe: e(t) * math.sqrt(e.embedding_dim) + pe[t])
wrong("7.1", c7.check_alignment_score, "not by B * T_q", lambda w, lengths: align_ref(w, lengths) * lengths.sum() / (w.shape[0] * w.shape[2]))
wrong("7.1", c7.check_alignment_score, "not by the batch size", lambda w, lengths: align_ref(w, lengths) * lengths.sum() / w.shape[0])
wrong("7.1", c7.check_alignment_score, "do not sum it", lambda w, lengths: align_ref(w, lengths) * lengths.sum())
wrong("7.2", c7.check_entropy, "query mask is inverted", lambda w, qm: ent_ref(w, ~qm))
wrong("7.2", c7.check_entropy, "not over the heads too", lambda w, qm: ent_ref(w, qm).mean().expand(w.shape[1]))


# ================================================================ 6.2-6.4, 8.1, 8.3, 8.4, 9.3, 10.3
# The answers of tests/test_exercises_ch06.py and ch08.py, plus right answers in other styles and the
# mistakes issues 20 and 23 name (Adam's betas, steps from 0, an ignored generator, in-place edits).
import test_exercises_ch06 as t6  # noqa: E402  (tests/ is on sys.path)
import test_exercises_ch08 as t8  # noqa: E402

from course_utils.exercises import ch08_decoder_only as c8  # noqa: E402
from course_utils.exercises import ch09_length as c9  # noqa: E402
from course_utils.exercises import ch10_why_transformer as c10  # noqa: E402
from course_utils.positional import random_positions  # noqa: E402
from course_utils.sampling import top_p_filter  # noqa: E402
from course_utils.training import warmup_cosine_scheduler  # noqa: E402

right("6.2", c6.check_train_step, t6.step_ok)
right("6.2", c6.check_train_step, t6.step_by_hand_loss)
wrong("6.2", c6.check_train_step, "counts the PAD", t6.step_pad)
wrong("6.2", c6.check_train_step, "not clipped before", t6.step_clip_after)
wrong("6.2", c6.check_train_step, "zero_grad", t6.step_no_zero_grad)
wrong("6.2", c6.check_train_step, "scheduler.step()", t6.step_no_schedule)
wrong("6.2", c6.check_train_step, "one step ahead", t6.step_schedule_first)
wrong("6.2", c6.check_train_step, "tgt_in", t6.step_target_in)
wrong("6.2", c6.check_train_step, "return the loss", t6.step_returns_nothing)
wrong("6.2", c6.check_train_step, "did not change", t6.step_no_update)


def loop_while(model, batch_fn, steps, lr, warmup, clip, train_step):
    optimizer = torch.optim.Adam(params=list(model.parameters()), lr=lr, betas=[0.9, 0.98])
    scheduler = warmup_cosine_scheduler(optimizer, warmup, steps)
    losses, step = [], 0
    while step < steps:
        step += 1
        losses.append(train_step(model, optimizer, scheduler, batch_fn(step), clip))
    return losses


def loop_variant(betas=(0.9, 0.98), start=1, opt=torch.optim.Adam):
    def train(model, batch_fn, steps, lr, warmup, clip, train_step):
        kwargs = {"betas": betas} if opt is torch.optim.Adam else {}
        optimizer = opt(model.parameters(), lr=lr, **kwargs)
        scheduler = warmup_cosine_scheduler(optimizer, warmup, steps)
        return [train_step(model, optimizer, scheduler, batch_fn(s), clip) for s in range(start, start + steps)]

    return train


right("6.3", c6.check_train_loop, t6.loop_ok)
right("6.3", c6.check_train_loop, loop_while)
wrong("6.3", c6.check_train_loop, "called 39 times", t6.loop_off_by_one)
wrong("6.3", c6.check_train_loop, "new optimizer", t6.loop_new_optimizer)
wrong("6.3", c6.check_train_loop, "stayed at", t6.loop_constant_lr)
wrong("6.3", c6.check_train_loop, "two schedule steps", t6.loop_double_schedule)
wrong("6.3", c6.check_train_loop, "tensors", t6.loop_tensor_losses)
wrong("6.3", c6.check_train_loop, "all of the model's parameters", t6.loop_some_params)
wrong("6.3", c6.check_train_loop, "betas=(0.9, 0.98)", loop_variant(betas=(0.9, 0.999)))
wrong("6.3", c6.check_train_loop, "count from 0", loop_variant(start=0))
wrong("6.3", c6.check_train_loop, "asks for torch.optim.Adam", loop_variant(opt=torch.optim.SGD))


def greedy_inplace(model, src, max_len):
    src[src == 0] = 0  # harmless so far ...
    src[:, 0] = src[:, 0]
    out = t6.greedy_ok(model, src, max_len)
    src.fill_(PAD_ID)  # ... then the source is wiped
    return out


right("6.4", c6.check_greedy_decode, t6.greedy_ok)
right("6.4", c6.check_greedy_decode, t6.greedy_full_length)
right("6.4", c6.check_greedy_decode, t6.greedy_forward)
wrong("6.4", c6.check_greedy_decode, "starts with SOS", t6.greedy_with_sos)
wrong("6.4", c6.check_greedy_decode, "put PAD", t6.greedy_no_pad)
wrong("6.4", c6.check_greedy_decode, "first row finished", t6.greedy_stop_any)
wrong("6.4", c6.check_greedy_decode, "first position", t6.greedy_first_position)
wrong("6.4", c6.check_greedy_decode, "padding", t6.greedy_no_src_mask)
wrong("6.4", c6.check_greedy_decode, "torch.long", lambda m, s, n: t6.greedy_ok(m, s, n).float())
wrong("6.4", c6.check_greedy_decode, INPLACE, greedy_inplace)


def targets_loop(seq, sep_id, pad_id):
    out = seq[:, 1:].clone()
    for b in range(seq.shape[0]):
        sep = int((seq[b] == sep_id).nonzero()[0])
        out[b, :sep] = pad_id
    return out


def targets_inplace(seq, sep_id, pad_id):
    sep = (seq == sep_id).long().argmax(dim=1, keepdim=True)
    shifted = seq[:, 1:]
    return shifted.masked_fill_(torch.arange(shifted.shape[1]) < sep, pad_id)


right("8.1", c8.check_target_only_targets, t8.targets_ok)
right("8.1", c8.check_target_only_targets, targets_loop)
wrong("8.1", c8.check_target_only_targets, "still covers the source", t8.targets_all)
wrong("8.1", c8.check_target_only_targets, "first target letter", t8.targets_mask_first_letter)
wrong("8.1", c8.check_target_only_targets, "separator itself", t8.targets_keep_sep)
wrong("8.1", c8.check_target_only_targets, "one column fewer", t8.targets_unshifted)
wrong("8.1", c8.check_target_only_targets, "other way round", t8.targets_inverted)
wrong("8.1", c8.check_target_only_targets, "separator position of the first row", t8.targets_first_row_sep)
wrong("8.1", c8.check_target_only_targets, INPLACE, targets_inplace)


def filter_sorted_by_hand(logits, top_k, top_p):
    out = logits.clone()
    if top_k is not None:
        kth = out.sort(dim=-1, descending=True).values[..., top_k - 1 : top_k]
        out[out < kth] = float("-inf")
    if top_p is not None:
        probs, order = torch.softmax(out, -1).sort(-1, descending=True)
        drop = probs.cumsum(-1) - probs >= top_p  # drop once the mass before a token reaches p
        out = out.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return out


def filter_inplace(logits, top_k, top_p):
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits.masked_fill_(logits < kth, float("-inf"))
    return top_p_filter(logits, top_p) if top_p is not None else logits


right("8.3", c8.check_filter_logits, t8.filter_ok)
right("8.3", c8.check_filter_logits, filter_sorted_by_hand)
wrong("8.3", c8.check_filter_logits, "-inf", t8.filter_zero_fill)
wrong("8.3", c8.check_filter_logits, "crosses p", t8.filter_strict_p)
wrong("8.3", c8.check_filter_logits, "k smallest", t8.filter_smallest_k)
wrong("8.3", c8.check_filter_logits, "sort first", t8.filter_unsorted)
wrong("8.3", c8.check_filter_logits, "map it back", t8.filter_mask_not_mapped_back)
wrong("8.3", c8.check_filter_logits, "top", lambda logits, top_k, top_p: t8.filter_ok(logits, None, top_p))
wrong("8.3", c8.check_filter_logits, INPLACE, filter_inplace)


def trigram_loop(train, val, V):
    counts = torch.ones(V, V, V, dtype=torch.float64)
    for a, b, c in zip(train[:-2].tolist(), train[1:-1].tolist(), train[2:].tolist(), strict=True):
        counts[a, b, c] += 1
    probs = counts / counts.sum(-1, keepdim=True)
    return -sum(math.log2(probs[a, b, c]) for a, b, c in zip(val[:-2].tolist(), val[1:-1].tolist(), val[2:].tolist(), strict=True)) / (len(val) - 2)


def trigram_inplace(train, val, V):
    result = t8.trigram_ok(train, val, V)
    train.zero_()
    return result


right("8.4", c8.check_trigram_bits, t8.trigram_ok)
right("8.4", c8.check_trigram_bits, trigram_loop)
wrong("8.4", c8.check_trigram_bits, "nats", t8.trigram_nats)
wrong("8.4", c8.check_trigram_bits, "not p(a, b, c)", t8.trigram_joint)
wrong("8.4", c8.check_trigram_bits, "Add one", t8.trigram_unsmoothed)
wrong("8.4", c8.check_trigram_bits, "training ids only", t8.trigram_on_val)
wrong("8.4", c8.check_trigram_bits, "bigram baseline", t8.bigram_instead)
wrong("8.4", c8.check_trigram_bits, "bigram p(c | b), scored on the same characters", t8.bigram_same_chars)
wrong("8.4", c8.check_trigram_bits, "bigram p(c | b), in nats", t8.bigram_same_chars_nats)
wrong("8.4", c8.check_trigram_bits, "bigram p(c | b) without smoothing", t8.bigram_same_chars_unsmoothed)
wrong("8.4", c8.check_trigram_bits, "add V (not 1)", t8.trigram_plus_one)
wrong("8.4", c8.check_trigram_bits, "middle character", t8.trigram_middle)
right("8.4", c8.check_trigram_bits, t8.trigram_textbook)
right("8.4", c8.check_trigram_bits, t8.trigram_across_split)
wrong("8.4", c8.check_trigram_bits, "mean probability", t8.trigram_log_of_mean)
wrong("8.4", c8.check_trigram_bits, "total in bits", t8.trigram_total)
wrong("8.4", c8.check_trigram_bits, "len(val_ids) - 2 predictions", t8.trigram_per_val_char)
wrong("8.4", c8.check_trigram_bits, "first character a", t8.trigram_first_axis)
wrong("8.4", c8.check_trigram_bits, "look up (b, a)", t8.trigram_swapped_lookup)
wrong("8.4", c8.check_trigram_bits, "count of b alone", t8.trigram_b_count)
wrong("8.4", c8.check_trigram_bits, "to the pair's count", t8.trigram_pairs_plus_one)
wrong("8.4", c8.check_trigram_bits, "validation ids as well", t8.trigram_counts_val_too)
wrong("8.4", c8.check_trigram_bits, "perplexity", t8.trigram_perplexity)
wrong("8.4", c8.check_trigram_bits, "add-0.5", t8.trigram_half)
wrong("8.4", c8.check_trigram_bits, "uniform guesses", t8.trigram_first_two_uniform)
wrong("8.4", c8.check_trigram_bits, "which is the answer", t8.trigram_library)
wrong("8.4", c8.check_trigram_bits, "for three different test corpora", lambda t, v, V: 2.984)  # the number printed below
right("8.6", t8.check_on_stand_ins, t8.gain_by_per_position, "two layers needed")
wrong("8.6", t8.check_on_stand_ins, "uses course_utils' copy_losses", t8.gain_by_copy_losses, "two layers needed")
wrong("8.6", t8.check_on_stand_ins, "uses course_utils' copy_losses", t8.gain_by_getattr, "two layers needed")
wrong("8.6", t8.check_on_stand_ins, "uses course_utils' reference_copy_gain",
      __import__("course_utils.exercises.ch08_decoder_only").exercises.ch08_decoder_only.reference_copy_gain,
      "two layers needed")
right("8.6", t8.check_on_stand_ins, t8.gain_own_cross_entropy, lambda: "two layers needed")
for gain, hint in t8.GAIN_WRONG:
    wrong("8.6", t8.check_on_stand_ins, hint, gain, "two layers needed")
wrong("8.6", t8.check_on_stand_ins, "indexed the losses by token",
      lambda m, t: t8.gain_by_positions(m, t, 1, 0, 1), "two layers needed")
wrong("8.6", t8.check_on_stand_ins, "second copy's first token was counted",
      lambda m, t: t8.gain_by_positions(m, t, 0, 0, -1), "two layers needed")
wrong("8.6", t8.check_on_stand_ins, "difference of the losses",
      lambda m, t: t8.gain_two_losses(m, t)[0] - t8.gain_two_losses(m, t)[1], "two layers needed")
wrong("8.6", t8.check_on_stand_ins, "not the other way round",
      lambda m, t: 1 - 1 / (1 - t8.gain_by_per_position(m, t)), "two layers needed")
wrong("8.6", t8.check_on_stand_ins, "same number for two different models", lambda m, t: 0.75, "two layers needed")
wrong("8.4", c8.check_trigram_bits, INPLACE, trigram_inplace)


def positions_argsort(batch_size, n, max_position, generator=None):
    keys = torch.rand(batch_size, max_position, generator=generator)
    return keys.argsort(dim=-1)[:, :n].sort(dim=-1).values


def positions_global_rng(batch_size, n, max_position, generator=None):
    return random_positions(batch_size, n, max_position)  # generator ignored


right("9.3", c9.check_random_positions, random_positions)
right("9.3", c9.check_random_positions, positions_argsort)
wrong("9.3", c9.check_random_positions, "not in order",
      lambda b, n, m, generator=None: torch.rand(b, m, generator=generator).argsort(-1)[:, :n])
wrong("9.3", c9.check_random_positions, "repeats a position",
      lambda b, n, m, generator=None: torch.randint(0, m, (b, n), generator=generator).sort(-1).values)
wrong("9.3", c9.check_random_positions, "random shift",
      lambda b, n, m, generator=None: torch.randint(0, m - n + 1, (b, 1), generator=generator) + torch.arange(n))
wrong("9.3", c9.check_random_positions, "never drawn",
      lambda b, n, m, generator=None: random_positions(b, n, m // 2 + n // 2, generator))
wrong("9.3", c9.check_random_positions, "generator",  positions_global_rng)
wrong("9.3", c9.check_random_positions, "0..max_position-1",
      lambda b, n, m, generator=None: random_positions(b, n, m, generator) + 1)
wrong("9.3", c9.check_random_positions, "integer", lambda b, n, m, generator=None: random_positions(b, n, m, generator).float())


def steps_ref(accs, threshold=0.99, window=10):
    for step in range(window, len(accs) + 1):
        if sum(accs[step - window : step]) / window >= threshold:
            return step
    return None


def steps_numpy(accs, threshold=0.99, window=10):
    means = np.convolve(np.asarray(accs, dtype=float), np.ones(window) / window, mode="valid")
    hits = np.nonzero(means >= threshold - 1e-12)[0]
    return int(hits[0]) + window if len(hits) else None


right("10.3", c10.check_steps_to_threshold, steps_ref)
right("10.3", c10.check_steps_to_threshold, steps_numpy)
wrong("10.3", c10.check_steps_to_threshold, "Off by one", lambda a, t=0.99, w=10: (lambda s: None if s is None else s - 1)(steps_ref(a, t, w)))
wrong("10.3", c10.check_steps_to_threshold, "first single batch",
      lambda a, t=0.99, w=10: next((i + 1 for i, x in enumerate(a) if x >= t), None))
wrong("10.3", c10.check_steps_to_threshold, "return None", lambda a, t=0.99, w=10: (lambda s: -1 if s is None else s)(steps_ref(a, t, w)))
wrong("10.3", c10.check_steps_to_threshold, "compare with >=",
      lambda a, t=0.99, w=10: next((i for i in range(w, len(a) + 1) if sum(a[i - w : i]) / w > t), None))
wrong("10.3", c10.check_steps_to_threshold, "return None", lambda a, t=0.99, w=10: (lambda s: len(a) if s is None else s)(steps_ref(a, t, w)))
wrong("10.3", c10.check_steps_to_threshold, "Use the window argument",
      lambda a, t=0.99, w=10: steps_ref(a, t, 10))


# ================================================================ mistakes no checker foresees
# Wrong in an unusual way: the checker can only say where the result differs. These keep the
# "specific hint" share honest (it is not 100 % by construction).
GENERIC = "differs from the reference"
wrong("1.1", c1.check_softmax, GENERIC, lambda x: sm_max(x * 1.01))
wrong("2.4", c2.check_alibi_slopes, GENERIC, lambda n: slopes_ref(n) ** 1.05)
wrong("4.1", c4.check_window_mask, GENERIC, lambda T, w: window_tri(T, w) & (torch.arange(T) < max(T - 1, 1)).view(1, 1, T, 1))
wrong("5.2", c5.check_mqa_layer_params, GENERIC, lambda d, h, f: mqa_ok(d, h, f) + 1)
wrong("7.2", c7.check_entropy, GENERIC, lambda w, qm: ent_ref(w, qm) + 0.01)


# ================================================================ issue 37 (skips helper): 1.6, 2.6, 3.6, 5.6, 9.6, 10.5
import test_exercises_ch01 as t1  # noqa: E402
import test_exercises_ch02 as t2  # noqa: E402
import test_exercises_ch03 as t3  # noqa: E402
import test_exercises_ch05 as t5  # noqa: E402
import test_exercises_ch09 as t9  # noqa: E402

from course_utils.exercises import ch01_kernel as c1k  # noqa: E402
from course_utils.exercises import ch05_ffn as c5f  # noqa: E402
from course_utils.exercises import ch09_stretch as c9s  # noqa: E402
from course_utils.exercises import ch10_debug as c10d  # noqa: E402
from course_utils.ffn import ffn_as_memory  # noqa: E402

right("1.6", c1k.check_kernel_attention, t1._kernel_ref)
right("1.6", c1k.check_kernel_attention, t1._kernel_with_q_norm)
wrong("1.6", c1k.check_kernel_attention, "only the q term", lambda q, k, v, s: t1._kernel_form(q, k, v, 1 / s**2, 1 / s**2, norm=0.0))
wrong("1.6", c1k.check_kernel_attention, "not without the 1/2", lambda q, k, v, s: t1._kernel_form(q, k, v, 1 / s**2, 1 / s**2, norm=1.0))
wrong("1.6", c1k.check_kernel_attention, "halve once", lambda q, k, v, s: t1._kernel_form(q, k, v, 1 / s**2, 1 / s**2, outer=2.0))
wrong("1.6", c1k.check_kernel_attention, "not by sigma_d", lambda q, k, v, s: t1._kernel_form(q, k, v, 1 / s, 1 / s))
wrong("1.6", c1k.check_kernel_attention, "used the plain |k|^2", lambda q, k, v, s: t1._kernel_form(q, k, v, 1 / s**2, torch.ones_like(s)))
wrong("1.6", c1k.check_kernel_attention, "one sigma for all", lambda q, k, v, s: t1._kernel_scalar(q, k, v, s.mean()))
wrong("1.6", c1k.check_kernel_attention, "one bandwidth per feature: it divides", t1._kernel_scalar)
wrong("1.6", c1k.check_kernel_attention, "sign is flipped", lambda q, k, v, s: t1._kernel_form(q, k, v, 1 / s**2, 1 / s**2, sign=-1.0))
wrong("1.6", c1k.check_kernel_attention, "pairwise difference", t1._kernel_pairwise)
wrong("1.6", c1k.check_kernel_attention, "nadaraya_watson", t1._kernel_book)
wrong("1.6", c1k.check_kernel_attention, "cdist", lambda q, k, v, s: torch.softmax(-torch.cdist(q / s, k / s) ** 2 / 2, -1) @ v)
wrong("1.6", c1k.check_kernel_attention, "in place", lambda q, k, v, s: t1._kernel_ref(q.mul_(2), k, v, s))

right("2.6", c2.check_position_from_row, t2._position_loop)
right("2.6", c2.check_position_from_row, t2._position_numpy)
wrong("2.6", c2.check_position_from_row, "which turn", lambda r: math.atan2(r[0], r[1]) % (2 * math.pi))
wrong("2.6", c2.check_position_from_row, "refine it with the fast pair", lambda r: 100 * (math.atan2(r[2], r[3]) % (2 * math.pi)))
wrong("2.6", c2.check_position_from_row, "atan2(row[0], row[1])", lambda r: t2._position_numpy(torch.stack([r[1], r[0], r[3], r[2]])))
wrong("2.6", c2.check_position_from_row, "add 2 pi", lambda r: (lambda f, s: f + 2 * math.pi * round((s - f) / (2 * math.pi)))(
    math.atan2(r[0], r[1]), 100 * math.atan2(r[2], r[3])))
wrong("2.6", c2.check_position_from_row, "1/100", lambda r: (lambda f, s: f + 2 * math.pi * round((s - f) / (2 * math.pi)))(
    math.atan2(r[0], r[1]) % (2 * math.pi), 10 * (math.atan2(r[2], r[3]) % (2 * math.pi))))
wrong("2.6", c2.check_position_from_row, "one turn off", lambda r: (math.atan2(r[0], r[1]) % (2 * math.pi)) + 2 * math.pi * math.floor(
    100 * (math.atan2(r[2], r[3]) % (2 * math.pi)) / (2 * math.pi)))
wrong("2.6", c2.check_position_from_row, "in place", lambda r: r.mul_(2).sum().item())

right("3.6", c3.check_identity_init, t3._zero_last)
right("3.6", c3.check_identity_init, t3._zero_last_init)
wrong("3.6", c3.check_identity_init, "bias", t3._zero_weight_only)
wrong("3.6", c3.check_identity_init, "ReLU(0) = 0", t3._zero_all)
wrong("3.6", c3.check_identity_init, "close to the identity but not equal", t3._shrink)
wrong("3.6", c3.check_identity_init, "requires_grad=False", t3._freeze_first)
wrong("3.6", c3.check_identity_init, "keep every branch", t3._new_modules)
wrong("3.6", c3.check_identity_init, "no new modules", t3._new_last_layer)
wrong("3.6", c3.check_identity_init, "no new modules", t3._new_parameters)
wrong("3.6", c3.check_identity_init, "not its input", lambda stack: None)

right("5.6", c5f.check_ffn_as_memory, t5._votes)
right("5.6", c5f.check_ffn_as_memory, t5._votes_loop)
wrong("5.6", c5f.check_ffn_as_memory, "after the ReLU", lambda f, x, e: f.linear1(x) * (e @ f.linear2.weight))
wrong("5.6", c5f.check_ffn_as_memory, "b_1", lambda f, x, e: torch.relu(x @ f.linear1.weight.T) * (e @ f.linear2.weight))
wrong("5.6", c5f.check_ffn_as_memory, "Those are the keys", lambda f, x, e: torch.relu(f.linear1(x)) * (f.linear1.weight @ e))
wrong("5.6", c5f.check_ffn_as_memory, "column i of linear2.weight", lambda f, x, e: torch.relu(f.linear1(x)) * (f.linear2.weight @ e))
wrong("5.6", c5f.check_ffn_as_memory, "GELU", lambda f, x, e: F.gelu(f.linear1(x)) * (e @ f.linear2.weight))
wrong("5.6", c5f.check_ffn_as_memory, "leave b_2 out", lambda f, x, e: t5._votes(f, x, e) + (f.linear2.bias @ e) / f.linear2.in_features)
wrong("5.6", c5f.check_ffn_as_memory, "weight it by m_i", lambda f, x, e: e @ f.linear2.weight)
wrong("5.6", c5f.check_ffn_as_memory, "without summing", lambda f, x, e: f(x) @ e)
wrong("5.6", c5f.check_ffn_as_memory, "calls course_utils", lambda f, x, e: ffn_as_memory(f, x)[0])
wrong("5.6", c5f.check_ffn_as_memory, "in place", lambda f, x, e: t5._votes(f, x.mul_(2), e))

right("9.6", c9s.check_rope_slowdown, t9._slowdown)
right("9.6", c9s.check_rope_slowdown, t9._slowdown_measured)
wrong("9.6", c9s.check_rope_slowdown, "how much faster", lambda d, m, f: 1 / t9._slowdown(d, m, f))
wrong("9.6", c9s.check_rope_slowdown, "2i/(d_k-2)", lambda d, m, f: t9._slowdown(d, m, f) if m == "interpolation" else f ** (2 * torch.arange(d // 2) / d))
wrong("9.6", c9s.check_rope_slowdown, "straight line", lambda d, m, f: t9._slowdown(d, m, f) if m == "interpolation" else 1 + (f - 1) * torch.arange(d // 2) / (d // 2 - 1))
wrong("9.6", c9s.check_rope_slowdown, "keeps the fastest pair", lambda d, m, f: t9._slowdown(d, "interpolation", f))
wrong("9.6", c9s.check_rope_slowdown, "fastest as much as the slowest", lambda d, m, f: t9._slowdown(d, "ntk", f))
wrong("9.6", c9s.check_rope_slowdown, "should return a tensor", lambda d, m, f: "slower")
wrong("9.6", c9s.check_rope_slowdown, "counted from i = 0", lambda d, m, f: t9._slowdown(d, m, f) if m == "interpolation" else f ** (2 * torch.arange(1, d // 2 + 1) / (d - 2)))
wrong("9.6", c9s.check_rope_slowdown, "fixed s = 4", lambda d, m, f: t9._slowdown(d, m, 4.0))
wrong("9.6", c9s.check_rope_slowdown, "integer division", lambda d, m, f: t9._slowdown(d, m, f) if m == "interpolation" else f ** ((2 * torch.arange(d // 2)) // (d - 2)))


def _diagnose(model, V, nan_first=True, leak=True, swap=True, exact=False):
    tokens = torch.randint(0, V, (4, 8), generator=torch.Generator().manual_seed(0))
    same = (lambda a, b: torch.equal(a, b)) if exact else (lambda a, b: torch.allclose(a, b, atol=1e-6))
    with torch.no_grad():
        out = model(tokens)
        if nan_first and torch.isnan(out).any():
            return "float16 overflow"
        later = tokens.clone()
        later[:, -1] = (later[:, -1] + 1) % V
        if leak and not same(model(later)[:, :-1], out[:, :-1]):
            return "leaking mask"
        swapped = tokens.clone()
        swapped[:, [0, 1]] = tokens[:, [1, 0]]
        if swap and same(model(swapped)[:, 2:], out[:, 2:]):
            return "missing positions"
    return "healthy"


def _diagnose_loop(model, V):
    """One probe per position instead of one batch: another right answer."""
    tokens = torch.arange(6) % V
    with torch.no_grad():
        out = model(tokens[None])[0]
        if out.isnan().any():
            return "float16 overflow"
        for t in range(5):
            changed = tokens.clone()
            changed[t + 1] = (changed[t + 1] + 3) % V
            if (model(changed[None])[0][: t + 1] - out[: t + 1]).abs().max() > 1e-5:
                return "leaking mask"
        swapped = tokens[[1, 0, 2, 3, 4, 5]]
        if (model(swapped[None])[0][2:] - out[2:]).abs().max() < 1e-5:
            return "missing positions"
    return "healthy"


def _diagnose_in_place(model, V):
    with torch.no_grad():
        model.W.mul_(1.0001)
    return _diagnose(model, V)


right("10.5", c10d.check_diagnose, _diagnose)
right("10.5", c10d.check_diagnose, _diagnose_loop)
wrong("10.5", c10d.check_diagnose, "Look for NaN in the output first", lambda m, V: _diagnose(m, V, nan_first=False))
wrong("10.5", c10d.check_diagnose, "leakage test", lambda m, V: _diagnose(m, V, leak=False))
wrong("10.5", c10d.check_diagnose, "Swap two early tokens", lambda m, V: _diagnose(m, V, swap=False))
wrong("10.5", c10d.check_diagnose, "should return one of", lambda m, V: "nan")
wrong("10.5", c10d.check_diagnose, "diagnosed as 'healthy'", lambda m, V: "healthy")
wrong("10.5", c10d.check_diagnose, "diagnosed as 'leaking mask'", lambda m, V: "leaking mask")
wrong("10.5", c10d.check_diagnose, "in place", _diagnose_in_place)


def _diagnose_probe(mutate, compare: slice, verdict: str, then=None):
    """One probe: ``mutate`` the tokens, compare outputs ``compare``, answer ``verdict`` if they moved."""
    def diagnose(model, V):
        tokens = torch.randint(0, V, (4, 8), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            out = model(tokens)
            if torch.isnan(out).any():
                return "float16 overflow"
            if not torch.allclose(model(mutate(tokens, V))[:, compare], out[:, compare], atol=1e-6):
                return verdict
        return then(model, V) if then else "healthy"
    return diagnose


def _change(position: int):
    """The tokens with the one at ``position`` changed."""
    def mutate(tokens, V):
        changed = tokens.clone()
        changed[:, position] = (changed[:, position] + 1) % V
        return changed
    return mutate


# a leakage probe that changes the first token, or compares every position; an order probe that
# compares the swapped positions' own outputs
_diagnose_first_token = _diagnose_probe(_change(0), slice(1, None), "leaking mask", _diagnose)
_diagnose_all_positions = _diagnose_probe(_change(-1), slice(None), "leaking mask", _diagnose)
_diagnose_swap_own = _diagnose_probe(lambda t, V: t[:, [1, 0, *range(2, t.shape[1])]], slice(None, 2),
                                     "missing positions")


def _diagnose_nan_threshold(model, V):
    """A NaN probe that looks for large outputs instead of NaN."""
    with torch.no_grad():
        out = model(torch.arange(6)[None] % V)
    return "float16 overflow" if out.abs().max() > 0.5 else _diagnose(model, V)


wrong("10.5", c10d.check_diagnose, "Change only a later token", _diagnose_first_token)
wrong("10.5", c10d.check_diagnose, "compare only the outputs at the positions before it", _diagnose_all_positions)
wrong("10.5", c10d.check_diagnose, "order probe fires on a model that has its positional encoding", _diagnose_swap_own)
wrong("10.5", c10d.check_diagnose, "NaN probe fires on a model without NaN", _diagnose_nan_threshold)
wrong("10.5", c10d.check_diagnose, "has no attribute 'bug'", lambda m, V: m.bug)
