"""Tests for course_utils.attention against PyTorch, a hand calculation and invariants."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.attention import MultiHeadAttention, scaled_dot_product_attention

Z = torch.zeros


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _copy_to_torch(m: MultiHeadAttention) -> nn.MultiheadAttention:
    t = nn.MultiheadAttention(m.d_model, m.n_heads, batch_first=True).eval()
    with torch.no_grad():
        t.in_proj_weight.copy_(torch.cat([m.W_Q.weight, m.W_K.weight, m.W_V.weight]))
        t.in_proj_bias.copy_(torch.cat([m.W_Q.bias, m.W_K.bias, m.W_V.bias]))
        t.out_proj.weight.copy_(m.W_O.weight)
        t.out_proj.bias.copy_(m.W_O.bias)
    return t


# ---------------------------------------------------------------- scaled dot-product attention
def test_hand_calculation() -> None:
    q = torch.tensor([[2.0, 0, 2, 0], [0, 2, 0, 2], [0, 0, 0, 0]])
    k = torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
    v = torch.tensor([[1.0, 0], [0, 1], [1, 1]])
    out, w = scaled_dot_product_attention(q, k, v)
    e = [math.exp(2), 1.0, math.exp(1)]  # scores (2, 0, 1) after dividing by sqrt(4)
    w0 = torch.tensor([x / sum(e) for x in e])
    torch.testing.assert_close(w[0], w0)
    torch.testing.assert_close(w[1], w0[[1, 0, 2]])
    torch.testing.assert_close(w[2], torch.full((3,), 1 / 3))
    torch.testing.assert_close(out[0], torch.tensor([w0[0] + w0[2], w0[1] + w0[2]]))
    torch.testing.assert_close(out[2], torch.tensor([2 / 3, 2 / 3]))


@pytest.mark.parametrize("shape", [(5, 8), (2, 5, 8), (2, 3, 5, 8), (1, 2, 3, 1, 8)])
def test_matches_torch_sdpa_without_mask(gen: torch.Generator, shape: tuple[int, ...]) -> None:
    q, k, v = (torch.randn(*shape, generator=gen) for _ in range(3))
    out, w = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    torch.testing.assert_close(w.sum(-1), torch.ones(shape[:-1]))


def test_matches_torch_sdpa_with_masks(gen: torch.Generator) -> None:
    q = torch.randn(2, 3, 4, 8, generator=gen)
    k, v = torch.randn(2, 3, 6, 8, generator=gen), torch.randn(2, 3, 6, 5, generator=gen)
    causal = torch.ones(4, 6, dtype=torch.bool).tril().view(1, 1, 4, 6)
    padding = torch.tensor([[True] * 6, [True] * 4 + [False] * 2]).view(2, 1, 1, 6)
    for mask in (causal, padding, causal & padding):
        out, w = scaled_dot_product_attention(q, k, v, mask)
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
        assert out.shape == (2, 3, 4, 5) and w.shape == (2, 3, 4, 6)


def test_different_lengths_and_value_width(gen: torch.Generator) -> None:
    q, k = torch.randn(2, 3, 4, generator=gen), torch.randn(2, 7, 4, generator=gen)
    v = torch.randn(2, 7, 9, generator=gen)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 9) and w.shape == (2, 3, 7)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))


def test_rows_sum_to_one_and_masked_keys_get_exactly_zero(gen: torch.Generator) -> None:
    q, k, v = (torch.randn(3, 5, 4, generator=gen) for _ in range(3))
    mask = torch.rand(3, 5, 5, generator=gen) > 0.5
    mask[..., 2] = True  # every row keeps at least one key
    _, w = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 5))
    assert (w[~mask] == 0).all()
    assert (w[mask] > 0).all()


def test_fully_masked_row_gives_zeros_not_nan(gen: torch.Generator) -> None:
    q, k, v = (torch.randn(1, 3, 4, generator=gen) for _ in range(3))
    mask = torch.tensor([[True, True, False], [False, False, False], [True, False, True]]).unsqueeze(0)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(out).any() and not torch.isnan(w).any()
    assert (w[0, 1] == 0).all() and (out[0, 1] == 0).all()
    torch.testing.assert_close(w[0, [0, 2]].sum(-1), torch.ones(2))


def test_mask_all_true_equals_no_mask(gen: torch.Generator) -> None:
    q, k, v = (torch.randn(2, 4, 4, generator=gen) for _ in range(3))
    out, w = scaled_dot_product_attention(q, k, v, torch.ones(4, 4, dtype=torch.bool))
    out0, w0 = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, out0)
    torch.testing.assert_close(w, w0)


def test_gradients_flow_and_are_finite_with_empty_rows(gen: torch.Generator) -> None:
    q, k, v = (torch.randn(1, 3, 4, generator=gen, requires_grad=True) for _ in range(3))
    mask = torch.tensor([[True, False, False], [False, False, False], [True, True, True]])
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    out.sum().backward()
    for t in (q, k, v):
        assert t.grad is not None and torch.isfinite(t.grad).all()


@pytest.mark.parametrize(
    ("q", "k", "v", "message"),
    [
        (Z(4), Z(3, 4), Z(3, 4), r"q must have 2 or 3 or 4 or 5 dimensions .*got shape \(4,\)"),
        (Z(3, 4), Z(1, 1, 1, 1, 3, 4), Z(3, 4), r"k must have .*got shape \(1, 1, 1, 1, 3, 4\)"),
        (Z(3, 4), Z(3, 4), Z(3), r"v must have .*dimensions \(\.\.\., T_k, d_v\)"),
        (Z(3, 4), Z(3, 5), Z(3, 4), r"q and k must share d_k .*\(3, 4\) and k \(3, 5\)"),
        (Z(3, 4), Z(3, 4), Z(2, 4), r"same number of keys T_k.*k \(3, 4\) and v \(2, 4\)"),
    ],
)
def test_validation_errors(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(q, k, v)


def test_non_tensor_input_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="q must be a torch.Tensor, got list"):
        scaled_dot_product_attention([[1.0]], torch.zeros(1, 1), torch.zeros(1, 1))  # type: ignore[arg-type]


def test_non_bool_mask_is_rejected() -> None:
    x = torch.zeros(2, 3, 4)
    with pytest.raises(TypeError, match=r"mask must be a boolean keep-mask .*got dtype torch.float32"):
        scaled_dot_product_attention(x, x, x, torch.ones(3, 3))
    with pytest.raises(TypeError, match="mask must be a torch.Tensor, got list"):
        scaled_dot_product_attention(x, x, x, [[True]])  # type: ignore[arg-type]


def test_mask_that_does_not_broadcast_is_rejected() -> None:
    x = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast to the scores .* \(2, 3, 3\)"):
        scaled_dot_product_attention(x, x, x, torch.ones(4, 4, dtype=torch.bool))
    # a mask with more leading dimensions than the scores would silently grow the output: rejected
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(x, x, x, torch.ones(5, 2, 3, 3, dtype=torch.bool))


# ---------------------------------------------------------------- multi-head attention
@pytest.mark.parametrize(("d_model", "n_heads"), [(16, 1), (16, 4), (12, 3), (8, 8)])
def test_mha_matches_torch_multihead_attention(gen: torch.Generator, d_model: int, n_heads: int) -> None:
    torch.manual_seed(0)
    m = MultiHeadAttention(d_model, n_heads).eval()
    t = _copy_to_torch(m)
    x = torch.randn(2, 5, d_model, generator=gen)
    with torch.no_grad():
        out, w = m(x)
        t_out, t_w = t(x, x, x)
        _, t_w_heads = t(x, x, x, average_attn_weights=False)
    assert w is not None and w.shape == (2, n_heads, 5, 5)
    torch.testing.assert_close(out, t_out)
    torch.testing.assert_close(w.mean(1), t_w)
    torch.testing.assert_close(w, t_w_heads)


def test_mha_cross_attention_and_mask_match_torch(gen: torch.Generator) -> None:
    torch.manual_seed(1)
    m = MultiHeadAttention(16, 4).eval()
    t = _copy_to_torch(m)
    query, memory = torch.randn(2, 3, 16, generator=gen), torch.randn(2, 6, 16, generator=gen)
    keep = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # (B, T_k) padding
    with torch.no_grad():
        out, w = m(query, memory, memory, mask=keep.view(2, 1, 1, 6))
        t_out, _ = t(query, memory, memory, key_padding_mask=~keep)  # PyTorch: True = ignore
    torch.testing.assert_close(out, t_out)
    assert w is not None and (w[1, :, :, 4:] == 0).all()


def test_mha_need_weights_false_equals_weights_path(gen: torch.Generator) -> None:
    torch.manual_seed(2)
    m = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 5, 16, generator=gen)
    causal = torch.ones(5, 5, dtype=torch.bool).tril().view(1, 1, 5, 5)
    for mask in (None, causal):
        with torch.no_grad():
            out_w, w = m(x, mask=mask)
            out_fast, none = m(x, mask=mask, need_weights=False)
        assert none is None and w is not None
        torch.testing.assert_close(out_fast, out_w)


def test_mha_parameter_count_does_not_depend_on_heads() -> None:
    counts = {h: sum(p.numel() for p in MultiHeadAttention(64, h).parameters()) for h in (1, 2, 4, 8)}
    assert set(counts.values()) == {4 * 64 * 64 + 4 * 64}
    assert sum(p.numel() for p in MultiHeadAttention(64, 4, bias=False).parameters()) == 4 * 64 * 64


def test_mha_is_permutation_equivariant(gen: torch.Generator) -> None:
    torch.manual_seed(3)
    m = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 6, 16, generator=gen)
    perm = torch.randperm(6, generator=gen)
    with torch.no_grad():
        torch.testing.assert_close(m(x[:, perm])[0], m(x)[0][:, perm])


def test_split_and_merge_heads_are_inverse(gen: torch.Generator) -> None:
    m = MultiHeadAttention(12, 3)
    x = torch.randn(2, 5, 12, generator=gen)
    heads = m.split_heads(x)
    assert heads.shape == (2, 3, 5, 4)
    torch.testing.assert_close(heads[:, 1], x[..., 4:8])  # head 1 holds features 4..7
    torch.testing.assert_close(m.merge_heads(heads), x)


def test_mha_dropout_only_in_training(gen: torch.Generator) -> None:
    torch.manual_seed(4)
    m = MultiHeadAttention(16, 4, dropout=0.5)
    x = torch.randn(1, 6, 16, generator=gen)
    with torch.no_grad():
        m.eval()
        a, b = m(x)[0], m(x)[0]
        torch.testing.assert_close(a, b)
        m.train()
        assert not torch.allclose(m(x)[0], a)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((10, 4), ValueError, "d_model must be divisible by n_heads, got d_model=10 and n_heads=4"),
        ((0, 1), ValueError, "d_model must be a positive int, got 0"),
        ((16, 2.0), TypeError, "n_heads must be a positive int, got float 2.0"),
        ((16, -2), ValueError, "n_heads must be a positive int, got -2"),
    ],
)
def test_mha_constructor_validation(args: tuple, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        MultiHeadAttention(*args)


def test_mha_forward_validation() -> None:
    m = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"query must have 3 dimensions \(B, T, d_model\), got shape \(5, 8\)"):
        m(torch.zeros(5, 8))
    with pytest.raises(ValueError, match=r"key must have last dimension d_model=8, got shape \(1, 5, 6\)"):
        m(torch.zeros(1, 5, 8), torch.zeros(1, 5, 6))
    with pytest.raises(TypeError, match="boolean keep-mask"):
        m(torch.zeros(1, 5, 8), mask=torch.ones(5, 5))
    with pytest.raises(TypeError, match="boolean keep-mask"):
        m(torch.zeros(1, 5, 8), mask=torch.ones(5, 5), need_weights=False)
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast"):
        m(torch.zeros(1, 5, 8), mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast to the scores \(B, h, T_q, T_k\)"):
        m(torch.zeros(1, 5, 8), mask=torch.ones(4, 4, dtype=torch.bool), need_weights=False)


@pytest.mark.parametrize("empty_row", [False, True])
def test_gradients_match_torch_with_and_without_fully_masked_rows(gen: torch.Generator, empty_row: bool) -> None:
    """The function skips the fills of fully masked rows when there are none: same outputs and gradients."""
    mask = torch.rand(2, 1, 5, 5, generator=gen) > 0.4
    mask[..., 0] = True  # every query row keeps a key...
    if empty_row:
        mask[1, 0, 2] = False  # ...but one
    grads = []
    for attend in (lambda q, k, v: scaled_dot_product_attention(q, k, v, mask)[0],
                   lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)):
        torch.manual_seed(0)
        qkv = [torch.randn(2, 3, 5, 4, dtype=torch.float64, requires_grad=True) for _ in range(3)]
        (attend(*qkv) * torch.arange(4.0, dtype=torch.float64)).sum().backward()
        grads.append([t.grad for t in qkv])
    for ours, theirs in zip(*grads, strict=True):
        torch.testing.assert_close(ours, theirs)


# ---------------------------------------------------------------- kernel regression (issue 37)
def test_nadaraya_watson_is_a_weighted_average_by_gaussian_kernel():
    import math

    from course_utils.attention import nadaraya_watson

    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 2, generator=g), torch.randn(5, 2, generator=g), torch.randn(5, 4, generator=g)
    out, w = nadaraya_watson(q, k, v, sigma=0.8)
    for i in range(3):
        kern = torch.tensor([math.exp(-((q[i] - k[j]) ** 2).sum().item() / (2 * 0.8**2)) for j in range(5)])
        torch.testing.assert_close(w[i], kern / kern.sum())
    torch.testing.assert_close(out, w @ v)


def test_nadaraya_watson_on_unit_keys_is_dot_product_attention():
    import math

    from course_utils.attention import nadaraya_watson, scaled_dot_product_attention

    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 4, 8, generator=g)
    k = torch.nn.functional.normalize(torch.randn(2, 6, 8, generator=g), dim=-1)
    v = torch.randn(2, 6, 3, generator=g)
    sigma = 0.6
    want = scaled_dot_product_attention(q * math.sqrt(8) / sigma**2, k, v)
    got = nadaraya_watson(q, k, v, sigma)
    torch.testing.assert_close(got[1], want[1], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(got[0], want[0], atol=1e-5, rtol=1e-4)
