"""Each Chapter 1 checker passes the reference, fails typical mistakes with the right hint, and reports stubs."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import stub
from torch import nn

from course_utils.attention import scaled_dot_product_attention
from course_utils.exercises.ch01_attention import (
    check_mha,
    check_scale_experiment,
    check_scaled_attention,
    check_softmax,
)


def assert_fails_with(result: object, hint: str) -> None:
    assert not result, result.message  # type: ignore[attr-defined]
    assert hint in result.message, result.message  # type: ignore[attr-defined]


# ---------------------------------------------------------------- 1.1 softmax
def softmax_ref(x: torch.Tensor) -> torch.Tensor:
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


def global_max_softmax(x: torch.Tensor) -> torch.Tensor:
    e = (x - x.max()).exp()  # the maximum of the whole tensor, not of each row
    return e / e.sum(dim=-1, keepdim=True)


def test_softmax_passes_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert check_softmax(softmax_ref)
    out = capsys.readouterr().out
    assert "Exercise 1.1" in out and "all checks passed" in out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x: x.exp() / x.exp().sum(-1, keepdim=True), "Subtract each row's maximum before exp"),
        (global_max_softmax, "not the maximum of the whole tensor"),
        (lambda x: softmax_ref(x.transpose(0, -1)).transpose(0, -1), "not over dim=0"),
        (lambda x: softmax_ref(x.transpose(1, -1)).transpose(1, -1) if x.dim() > 2 else softmax_ref(x),
         "dim=1 is the last one only for 2-D inputs"),
        (lambda x: torch.softmax(x, dim=-1), "without torch.softmax"),
        (lambda x: torch.nn.functional.softmax(x, dim=-1), "without torch.softmax"),
        (lambda x: x / x.sum(-1, keepdim=True), "forget the exp"),
    ],
)
def test_softmax_catches_mistakes(wrong, hint: str) -> None:
    assert_fails_with(check_softmax(wrong), hint)


def test_softmax_stub_and_garbage(capsys: pytest.CaptureFixture[str]) -> None:
    result = check_softmax(stub)
    assert not result and result.not_implemented
    assert "not implemented yet" in capsys.readouterr().out
    assert_fails_with(check_softmax(lambda x: None), "should be a torch.Tensor, got NoneType")
    assert_fails_with(check_softmax(lambda x: x[..., :1]), "should have shape")


# ---------------------------------------------------------------- 1.2 scaled attention
def attention_variant(scale=None, dim=-1, invert=False, fill=float("-inf"), fix_empty=False, weights_only=False,
                      bias_mode="add"):
    def attention(q, k, v, mask=None, bias=None):
        s = q @ k.transpose(-2, -1)
        if bias is not None and bias_mode == "before-scale":
            s = s + bias
        s = s / (scale(q.shape[-1]) if scale else math.sqrt(q.shape[-1]))
        if bias is not None and bias_mode == "add":
            s = s + bias
        if bias is not None and bias_mode == "subtract":
            s = s - bias
        if mask is not None:
            keep = ~mask if invert else mask
            s = s.masked_fill(~keep, fill)
            if fix_empty:
                s = s.masked_fill(~keep.any(-1, keepdim=True), 0.0)
        w = torch.softmax(s, dim=dim)
        if mask is not None and fix_empty:
            w = w.masked_fill(~keep, 0.0)
        return w if weights_only else (w @ v, w)

    return attention


def attention_nan_to_num(q, k, v, mask=None, bias=None):
    s = torch.einsum("bqd,bkd->bqk", q, k) * q.shape[-1] ** -0.5 + (0.0 if bias is None else bias)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, dim=-1).nan_to_num(0.0)  # a row of -inf gives NaN: make it zeros
    return w @ v, w


def test_scaled_attention_passes_reference() -> None:
    assert check_scaled_attention(attention_variant(fix_empty=True))
    assert check_scaled_attention(attention_nan_to_num)


def test_scaled_attention_without_bias_is_the_course_reference() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 8, generator=g) for _ in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    mask[0] = False  # a query with no key
    for m in (None, mask):
        got, want = attention_variant(fix_empty=True)(q, k, v, m), scaled_dot_product_attention(q, k, v, m)
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (attention_variant(scale=lambda d: d), "divide by d_k instead of sqrt(d_k)"),
        (attention_variant(scale=lambda d: 1.0), "forget the scaling"),
        (attention_variant(dim=-2), "wrong dimension: normalise over the keys (dim=-1), not the queries"),
        (attention_variant(invert=True, fix_empty=True), "The mask is inverted: True means keep"),
        (attention_variant(invert=True), "inverted"),
        (attention_variant(fill=0.0), "Masked scores must become -inf"),
        (attention_variant(), "not NaN"),
        (attention_variant(weights_only=True), "should return a tuple (output, weights)"),
        (attention_variant(fix_empty=True, bias_mode="before-scale"), "Add the bias after the scaling"),
        (attention_variant(fix_empty=True, bias_mode="ignore"), "The bias was ignored"),
        (attention_variant(fix_empty=True, bias_mode="subtract"), "not subtracted"),
        (lambda q, k, v, mask=None: scaled_dot_product_attention(q, k, v, mask), "takes a score bias too"),
    ],
)
def test_scaled_attention_catches_mistakes(wrong, hint: str) -> None:
    assert_fails_with(check_scaled_attention(wrong), hint)


def test_scaled_attention_stub_and_crash(capsys: pytest.CaptureFixture[str]) -> None:
    assert check_scaled_attention(stub).not_implemented
    assert "not implemented yet" in capsys.readouterr().out
    # a learner function that does not accept a mask: a readable message, no traceback
    result = check_scaled_attention(lambda q, k, v: scaled_dot_product_attention(q, k, v))
    assert_fails_with(result, "my_attention raised TypeError")


# ---------------------------------------------------------------- helpers of the 1.4 checks
def split_ref(x, n_heads):
    B, T, d_model = x.shape
    return x.view(B, T, n_heads, d_model // n_heads).transpose(1, 2)


def merge_ref(x):
    B, h, T, d_k = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d_k)


# ---------------------------------------------------------------- 1.4 MHA module
class TinyMHA(nn.Module):
    mistake = ""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q, self.W_K, self.W_V, self.W_O = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, mask=None):
        B, T, d_model = x.shape
        if self.mistake == "bad-split":
            q, k, v = (W(x).reshape(B, self.n_heads, T, self.d_k) for W in (self.W_Q, self.W_K, self.W_V))
        else:
            q, k, v = (split_ref(W(x), self.n_heads) for W in (self.W_Q, self.W_K, self.W_V))
        scale = math.sqrt(d_model) if self.mistake == "sqrt-d-model" else math.sqrt(self.d_k)
        s = q @ k.transpose(-2, -1) / scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        w = torch.softmax(s, -1)
        out = (w @ v).reshape(B, T, d_model) if self.mistake == "bad-split" else merge_ref(w @ v)
        return (out if self.mistake == "no-W_O" else self.W_O(out)), w


def make(mistake: str) -> type[TinyMHA]:
    return type(f"TinyMHA_{mistake}", (TinyMHA,), {"mistake": mistake})


def test_mha_passes_reference() -> None:
    assert check_mha(TinyMHA)


@pytest.mark.parametrize(
    ("mistake", "hint"),
    [
        ("no-W_O", "forget the output projection W_O"),
        ("sqrt-d-model", "scales by sqrt(d_k) = sqrt(d_model / n_heads), not sqrt(d_model)"),
        ("bad-split", "Split heads with view(B, T, h, d_k).transpose(1, 2)"),
    ],
)
def test_mha_catches_mistakes(mistake: str, hint: str) -> None:
    assert_fails_with(check_mha(make(mistake)), hint)


class NoBias(TinyMHA):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__(d_model, n_heads)
        self.W_O = nn.Linear(d_model, d_model, bias=False)


class Extra(TinyMHA):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__(d_model, n_heads)
        self.extra = nn.Linear(d_model, 1)


def test_mha_structure_problems() -> None:
    assert_fails_with(check_mha(NoBias), "W_O = nn.Linear(d_model, d_model) (with bias), got nn.Linear")
    assert_fails_with(check_mha(Extra), "Extra layers?")
    assert_fails_with(check_mha(lambda d, h: nn.Linear(d, d)), "W_Q = nn.Linear(d_model, d_model) (with bias), got no")
    assert_fails_with(check_mha(lambda d, h: "module"), "should build an nn.Module, got str")


class StubMHA(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        raise NotImplementedError("your code here")


def test_mha_stub(capsys: pytest.CaptureFixture[str]) -> None:
    assert check_mha(StubMHA).not_implemented
    assert "not implemented yet" in capsys.readouterr().out


# ---------------------------------------------------------------- 1.3 the scale, measured (experiment)
def top_weight_ref(d_k, scaled, seed, divide_by=None, reduce="max", scale_when=True):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(256, 1, d_k, generator=g)
    k = torch.randn(256, 16, d_k, generator=g)
    scores = (q @ k.transpose(-2, -1)).squeeze(1)  # (256, 16)
    if scaled == scale_when:
        scores = scores / (divide_by(d_k) if divide_by else math.sqrt(d_k))
    w = torch.softmax(scores, dim=-1)
    return (w.max(-1).values if reduce == "max" else w.mean(-1)).mean().item()


def top_weight_sdpa(d_k, scaled, seed):
    """A second correct style: F.scaled_dot_product_attention with an explicit scale, a 0-d tensor answer."""
    g = torch.Generator().manual_seed(seed + 7)  # another seed: the range does not hang on one draw
    q, k = torch.randn(256, 1, d_k, generator=g), torch.randn(256, 16, d_k, generator=g)
    eye = torch.eye(16).expand(256, 16, 16)  # values = one-hot rows, so the output is the weights
    w = torch.nn.functional.scaled_dot_product_attention(q, k, eye, scale=None if scaled else 1.0)
    return w.squeeze(1).max(-1).values.mean()


def test_scale_experiment_passes_reference_and_alternative(capsys: pytest.CaptureFixture[str]) -> None:
    assert check_scale_experiment("sharper", top_weight_ref).passed
    assert check_scale_experiment(lambda: "sharper", top_weight_sdpa).passed
    out = capsys.readouterr().out
    assert "between 0.18 and 0.35" in out and "matches the measurement" in out


def test_scale_experiment_a_wrong_prediction_still_passes_and_is_explained() -> None:
    result = check_scale_experiment("flatter", top_weight_ref)
    assert result.passed and "more peaked, not flatter" in result.message


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda d, s, seed: top_weight_ref(d, s, seed, divide_by=lambda d: d), "instead of sqrt(d_k)"),
    (lambda d, s, seed: top_weight_ref(d, s, seed, scale_when=False), "swap the two runs"),
    (lambda d, s, seed: top_weight_ref(d, True, seed), "same number"),
    (lambda d, s, seed: top_weight_ref(d, s, seed, reduce="mean"), "1/16, the mean weight"),
    (lambda d, s, seed: 16 * top_weight_ref(d, s, seed), "outside [1/16, 1]"),
    (lambda d, s, seed: top_weight_ref(4, s, seed), "does not grow"),
])
def test_scale_experiment_names_mistakes(fn, hint: str) -> None:
    assert_fails_with(check_scale_experiment("sharper", fn), hint)


def test_scale_experiment_wants_a_prediction_first() -> None:
    def stub(*args):
        raise NotImplementedError

    assert check_scale_experiment(stub, top_weight_ref).not_implemented
    assert check_scale_experiment("", top_weight_ref).not_implemented
    assert check_scale_experiment("sharper", stub).not_implemented
    assert_fails_with(check_scale_experiment("peaky", top_weight_ref), "not one of the choices")


# ---------------------------------------------------------------- 1.6 a Gaussian kernel with one bandwidth per feature
def _kernel_ref(q, k, v, sigma):
    w = 1 / sigma**2  # (d,)
    scores = (q * w) @ k.transpose(-2, -1) - (k.pow(2) * w).sum(-1).unsqueeze(-2) / 2
    return torch.softmax(scores, dim=-1) @ v


def _kernel_with_q_norm(q, k, v, sigma):
    """Scales the features by 1/sigma first and keeps the |q|^2 term: still right, it cancels in the softmax."""
    qs, ks = q / sigma, k / sigma
    sq = qs.pow(2).sum(-1).unsqueeze(-1) - 2 * qs @ ks.transpose(-2, -1) + ks.pow(2).sum(-1).unsqueeze(-2)
    return torch.softmax(-sq / 2, dim=-1) @ v, None


def _kernel_form(q, k, v, w_q, w_k, norm=0.5, outer=1.0, sign=1.0, dim=-1):
    scores = (q * w_q) @ k.transpose(-2, -1) - norm * (k.pow(2) * w_k).sum(-1).unsqueeze(-2)
    return torch.softmax(sign * scores / outer, dim=dim) @ v


def _kernel_pairwise(q, k, v, sigma):
    diff = (q[..., :, None, :] - k[..., None, :, :]) / sigma  # (..., T_q, T_k, d): forbidden
    return torch.softmax(-diff.pow(2).sum(-1) / 2, -1) @ v


def _kernel_scalar(q, k, v, sigma):
    """Treats sigma as one number: the chapter's kernel, copied."""
    return torch.softmax((q @ k.transpose(-2, -1) - k.pow(2).sum(-1).unsqueeze(-2) / 2) / sigma**2, -1) @ v


def _kernel_book(q, k, v, sigma):
    from course_utils.attention import nadaraya_watson

    return nadaraya_watson(q / sigma, k / sigma, v, 1.0)[0]


def test_kernel_attention_passes_right_answers():
    from course_utils.exercises.ch01_kernel import check_kernel_attention

    assert check_kernel_attention(_kernel_ref).passed
    assert check_kernel_attention(_kernel_with_q_norm).passed


_W = lambda s: 1 / s**2  # noqa: E731


@pytest.mark.parametrize(("fn", "words"), [
    (lambda q, k, v, s: _kernel_form(q, k, v, _W(s), _W(s), norm=0.0), "only the q term"),
    (lambda q, k, v, s: _kernel_form(q, k, v, _W(s), _W(s), norm=1.0), "not without the 1/2"),
    (lambda q, k, v, s: _kernel_form(q, k, v, _W(s), _W(s), outer=2.0), "halve once"),
    (lambda q, k, v, s: _kernel_form(q, k, v, 1 / s, 1 / s), "not by sigma_d"),
    (lambda q, k, v, s: _kernel_form(q, k, v, _W(s) ** 2, _W(s) ** 2), "Divide by sigma_d^2 once"),
    (lambda q, k, v, s: _kernel_form(q, k, v, _W(s), torch.ones_like(s)), "used the plain |k|^2"),
    (lambda q, k, v, s: _kernel_scalar(q, k, v, s.mean()), "one sigma for all"),
    (_kernel_scalar, "one bandwidth per feature: it divides the features"),
    (lambda q, k, v, s: _kernel_form(q, k, v, _W(s), _W(s), sign=-1.0), "sign is flipped"),
    (lambda q, k, v, s: _kernel_form(q, k, v, _W(s), _W(s), dim=-2), "over the keys"),
    (lambda q, k, v, s: _kernel_ref(q, k, v, torch.ones_like(s)), "hard-coded"),
    (lambda q, k, v, s: torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, -1) @ v, "scaled dot-product"),
    (lambda q, k, v, s: torch.softmax(-torch.cdist(q / s, k / s) ** 2 / 2, -1) @ v, "cdist"),
    (_kernel_pairwise, "pairwise difference"),
    (_kernel_book, "calls course_utils' nadaraya_watson"),
    (lambda q, k, v, s: _kernel_ref(q.mul_(2), k, v, s), "in place"),
])
def test_kernel_attention_names_mistakes(fn, words):
    from course_utils.exercises.ch01_kernel import check_kernel_attention

    result = check_kernel_attention(fn)
    assert not result.passed and not result.not_implemented and words in result.message, result.message
